"""Escalation: a team names who an unacknowledged page goes to next (user groups or people, in order) and after how long.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0015'
down_revision = '0014'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('teams') as batch:
        batch.add_column(sa.Column('escalation', sa.JSON(), nullable=False, server_default='[]'))
        batch.add_column(sa.Column('escalate_after', sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('teams') as batch:
        batch.drop_column('escalate_after')
        batch.drop_column('escalation')
