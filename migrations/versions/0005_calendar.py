"""The change calendar: entries and freeze windows.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'calendar_entries',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column('title', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column('start', sa.DateTime(timezone=True), nullable=False),
        sa.Column('end', sa.DateTime(timezone=True), nullable=False),
        sa.Column('status', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column('owner', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
        sa.Column('booked_by', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column('scope', sa.JSON(), nullable=False),
        sa.Column('proposal_id', sa.Integer(), nullable=True),
        sa.Column('operation_id', sa.Integer(), nullable=True),
        sa.Column('sequence', sa.Integer(), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['proposal_id'], ['proposals.id']),
        sa.PrimaryKeyConstraint('id'),
    )
    with op.batch_alter_table('calendar_entries', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_calendar_entries_start'), ['start'], unique=False)
        batch_op.create_index(batch_op.f('ix_calendar_entries_end'), ['end'], unique=False)
        batch_op.create_index(batch_op.f('ix_calendar_entries_proposal_id'), ['proposal_id'], unique=False)
    op.create_table(
        'freezes',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('name', sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column('reason', sa.Text(), nullable=False),
        sa.Column('scope', sa.JSON(), nullable=False),
        sa.Column('cron', sqlmodel.sql.sqltypes.AutoString(length=100), nullable=True),
        sa.Column('minutes', sa.Integer(), nullable=True),
        sa.Column('timezone', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column('start', sa.DateTime(timezone=True), nullable=True),
        sa.Column('end', sa.DateTime(timezone=True), nullable=True),
        sa.Column('source', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column('created_by', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('name'),
    )


def downgrade() -> None:
    op.drop_table('freezes')
    with op.batch_alter_table('calendar_entries', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_calendar_entries_proposal_id'))
        batch_op.drop_index(batch_op.f('ix_calendar_entries_end'))
        batch_op.drop_index(batch_op.f('ix_calendar_entries_start'))
    op.drop_table('calendar_entries')
