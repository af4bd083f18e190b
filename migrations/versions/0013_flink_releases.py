"""The Flink release gate: each release put through it, with its verdict, the checks that blocked it and the
state schemas of a passed release (the next release must read them); a job may name the Flink version it runs on.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('lineage_jobs') as batch:
        batch.add_column(sa.Column('flink', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=True))
    op.create_table(
        'flink_releases',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('job', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
        sa.Column('passed', sa.Boolean(), nullable=False),
        sa.Column('failed_checks', sa.JSON(), nullable=False),
        sa.Column('states', sa.JSON(), nullable=False),
        sa.Column('flink', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column('sql_digest', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column('author', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=True),
        sa.Column('checked_by', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
        sa.Column('team', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=True),
        sa.Column('report', sa.JSON(), nullable=False),
        sa.Column('lineage', sa.JSON(), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index(op.f('ix_flink_releases_job'), 'flink_releases', ['job'], unique=False)
    op.create_index(op.f('ix_flink_releases_created_at'), 'flink_releases', ['created_at'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_flink_releases_created_at'), table_name='flink_releases')
    op.drop_index(op.f('ix_flink_releases_job'), table_name='flink_releases')
    op.drop_table('flink_releases')
    with op.batch_alter_table('lineage_jobs') as batch:
        batch.drop_column('flink')
