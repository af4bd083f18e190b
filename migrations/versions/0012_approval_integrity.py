"""Approvals people can audit: teams may allow self-approval; a proposal's registration has a state of its own
(registering, retrying since, registered as version N, failed after N attempts); emergency changes through a freeze;
freezes may leave scopes out; DM copies of a card are remembered so they follow it.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('teams') as batch:
        batch.add_column(sa.Column('self_approval', sa.Boolean(), nullable=False, server_default=sa.false()))
    with op.batch_alter_table('proposals') as batch:
        batch.add_column(sa.Column('registry_version', sa.Integer(), nullable=True))
        batch.add_column(sa.Column('registry_state', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=True))
        batch.add_column(sa.Column('registry_since', sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column('registry_attempts', sa.Integer(), nullable=False, server_default='0'))
        batch.add_column(sa.Column('emergency', sa.JSON(), nullable=True))
    with op.batch_alter_table('freezes') as batch:
        batch.add_column(sa.Column('excepted', sa.JSON(), nullable=False, server_default='{}'))
    op.create_table(
        'card_copies',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('proposal_id', sa.Integer(), nullable=False),
        sa.Column('channel', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column('ts', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column('team', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
        sa.Column('intro', sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(['proposal_id'], ['proposals.id']),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index('ix_card_copies_proposal_id', 'card_copies', ['proposal_id'])


def downgrade() -> None:
    op.drop_index('ix_card_copies_proposal_id', 'card_copies')
    op.drop_table('card_copies')
    with op.batch_alter_table('freezes') as batch:
        batch.drop_column('excepted')
    with op.batch_alter_table('proposals') as batch:
        for column in ('emergency', 'registry_attempts', 'registry_since', 'registry_state', 'registry_version'):
            batch.drop_column(column)
    with op.batch_alter_table('teams') as batch:
        batch.drop_column('self_approval')
