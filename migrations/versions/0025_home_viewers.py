"""Who opened the App Home tab, and when last: a tab opened in the last day is published again when a proposal, the
calendar or the lineage changes, so it never shows an answer already given or a decision already taken.

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0025'
down_revision = '0024'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('home_viewers',
                    sa.Column('user', sa.String(length=64), nullable=False),
                    sa.Column('opened_at', sa.DateTime(timezone=True), nullable=False),
                    sa.PrimaryKeyConstraint('user'))
    op.create_index('ix_home_viewers_opened_at', 'home_viewers', ['opened_at'])


def downgrade() -> None:
    op.drop_index('ix_home_viewers_opened_at', table_name='home_viewers')
    op.drop_table('home_viewers')
