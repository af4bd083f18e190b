"""A census run says how many groups Kafka did not answer for (a partial census keeps them as last seen).

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('census_runs') as batch:
        batch.add_column(sa.Column('partial', sa.Integer(), nullable=False, server_default='0'))


def downgrade() -> None:
    with op.batch_alter_table('census_runs') as batch:
        batch.drop_column('partial')
