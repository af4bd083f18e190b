"""Lineage: teams, datasets, jobs with field mappings, a revision counter; subjects gain topic and namespace.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('lineage_datasets',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('namespace', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
    sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('owners', sa.JSON(), nullable=False),
    sa.Column('fields', sa.JSON(), nullable=False),
    sa.Column('subject', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=True),
    sa.Column('source', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('namespace', 'name', name='uq_lineage_datasets_identity')
    )
    with op.batch_alter_table('lineage_datasets', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_lineage_datasets_name'), ['name'], unique=False)

    op.create_table('lineage_jobs',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('namespace', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
    sa.Column('owners', sa.JSON(), nullable=False),
    sa.Column('channel', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
    sa.Column('inputs', sa.JSON(), nullable=False),
    sa.Column('outputs', sa.JSON(), nullable=False),
    sa.Column('mappings', sa.JSON(), nullable=False),
    sa.Column('unmapped_outputs', sa.JSON(), nullable=False),
    sa.Column('source', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('event_time', sa.DateTime(timezone=True), nullable=True),
    sa.Column('digest', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('namespace', 'name', name='uq_lineage_jobs_identity')
    )
    with op.batch_alter_table('lineage_jobs', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_lineage_jobs_name'), ['name'], unique=False)

    op.create_table('lineage_revision',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('revision', sa.Integer(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_table('teams',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
    sa.Column('usergroup', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
    sa.Column('members', sa.JSON(), nullable=False),
    sa.Column('oncall', sa.JSON(), nullable=False),
    sa.Column('channel', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('teams', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_teams_name'), ['name'], unique=True)

    with op.batch_alter_table('subjects', schema=None) as batch_op:
        batch_op.add_column(sa.Column('topic', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=True))
        batch_op.add_column(sa.Column('namespace', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=True))

    op.execute("INSERT INTO lineage_revision (id, revision) VALUES (1, 0)")


def downgrade() -> None:
    with op.batch_alter_table('subjects', schema=None) as batch_op:
        batch_op.drop_column('namespace')
        batch_op.drop_column('topic')

    with op.batch_alter_table('teams', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_teams_name'))

    op.drop_table('teams')
    op.drop_table('lineage_revision')
    with op.batch_alter_table('lineage_jobs', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_lineage_jobs_name'))

    op.drop_table('lineage_jobs')
    with op.batch_alter_table('lineage_datasets', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_lineage_datasets_name'))

    op.drop_table('lineage_datasets')
