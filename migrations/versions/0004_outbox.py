"""The transactional outbox, and OpenLineage observations that disagree with the catalog.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'outbox',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(length=48), nullable=False),
        sa.Column('key', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
        sa.Column('position', sa.BigInteger(), nullable=True),
        sa.Column('part', sa.Integer(), nullable=False),
        sa.Column('payload', sa.JSON(), nullable=False),
        sa.Column('state', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column('attempts', sa.Integer(), nullable=False),
        sa.Column('next_attempt_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('lease_until', sa.DateTime(timezone=True), nullable=True),
        sa.Column('lease_owner', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column('last_error', sa.Text(), nullable=True),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('sent_at', sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint('id'),
    )
    with op.batch_alter_table('outbox', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_outbox_key'), ['key'], unique=False)
        batch_op.create_index(batch_op.f('ix_outbox_state'), ['state'], unique=False)
        batch_op.create_index(batch_op.f('ix_outbox_next_attempt_at'), ['next_attempt_at'], unique=False)
    op.create_table(
        'lineage_observations',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('namespace', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
        sa.Column('name', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
        sa.Column('event_time', sa.DateTime(timezone=True), nullable=False),
        sa.Column('conflict', sa.Text(), nullable=False),
        sa.Column('observed', sa.JSON(), nullable=False),
        sa.Column('received_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('id'),
    )
    with op.batch_alter_table('lineage_observations', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_lineage_observations_name'), ['name'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('lineage_observations', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_lineage_observations_name'))
    op.drop_table('lineage_observations')
    with op.batch_alter_table('outbox', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_outbox_next_attempt_at'))
        batch_op.drop_index(batch_op.f('ix_outbox_state'))
        batch_op.drop_index(batch_op.f('ix_outbox_key'))
    op.drop_table('outbox')
