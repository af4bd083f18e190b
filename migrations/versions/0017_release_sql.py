"""A passed Flink release keeps its SQL: the bot starts the job again from a savepoint with it (a backfill, a resume).

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0017'
down_revision = '0016'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('flink_releases') as batch:
        batch.add_column(sa.Column('sql', sa.Text(), nullable=False, server_default=''))


def downgrade() -> None:
    with op.batch_alter_table('flink_releases') as batch:
        batch.drop_column('sql')
