"""Escalation: a team names who an unacknowledged page goes to next (user groups or people, in order) and after how long,
and the pagers its pages also go to (PagerDuty, an Alertmanager-style webhook).

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
        batch.add_column(sa.Column('receivers', sa.JSON(), nullable=False, server_default='[]'))
    with op.batch_alter_table('sli_episodes') as batch:
        batch.add_column(sa.Column('paged_out', sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table('sli_episodes') as batch:
        batch.drop_column('paged_out')
    with op.batch_alter_table('teams') as batch:
        batch.drop_column('receivers')
        batch.drop_column('escalate_after')
        batch.drop_column('escalation')
