"""Pipelines, SLI alert state and episodes, leases for pollers, and outbox priorities (pages first).

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'pipelines',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('name', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
        sa.Column('owner_team', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
        sa.Column('spec', sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('name'),
    )
    op.create_table(
        'sli_series',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('pipeline', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
        sa.Column('sli', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column('state', sa.JSON(), nullable=False),
        sa.Column('version', sa.Integer(), nullable=False),
        sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('pipeline', 'sli', name='uq_sli_series_pipeline_sli'),
    )
    op.create_table(
        'sli_episodes',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('fingerprint', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column('pipeline', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
        sa.Column('sli', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column('no_data', sa.Boolean(), nullable=False),
        sa.Column('level', sqlmodel.sql.sqltypes.AutoString(length=8), nullable=False),
        sa.Column('started_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('resolved_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('peak', sa.Float(), nullable=True),
        sa.Column('acked_by', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column('acked_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('channel', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column('message_channel', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column('message_ts', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=True),
        sa.Column('digest', sa.Boolean(), nullable=False),
        sa.Column('timeline', sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('fingerprint'),
    )
    op.create_index('ix_sli_episodes_pipeline', 'sli_episodes', ['pipeline'])
    op.create_index('ix_sli_episodes_started_at', 'sli_episodes', ['started_at'])
    op.create_table(
        'leases',
        sa.Column('name', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
        sa.Column('owner', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column('until', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('name'),
    )
    with op.batch_alter_table('outbox', schema=None) as batch_op:
        batch_op.add_column(sa.Column('priority', sa.Integer(), nullable=False, server_default='0'))


def downgrade() -> None:
    with op.batch_alter_table('outbox', schema=None) as batch_op:
        batch_op.drop_column('priority')
    op.drop_table('leases')
    op.drop_index('ix_sli_episodes_started_at', table_name='sli_episodes')
    op.drop_index('ix_sli_episodes_pipeline', table_name='sli_episodes')
    op.drop_table('sli_episodes')
    op.drop_table('sli_series')
    op.drop_table('pipelines')
