"""Consumer group ids of any length: Kafka sets none, and one group named past 255 characters made PostgreSQL refuse a
whole census.

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0024'
down_revision = '0023'
branch_labels = None
depends_on = None

TABLES = ('topic_readers', 'group_attributions')


def upgrade() -> None:
    for table in TABLES:
        with op.batch_alter_table(table) as batch:
            batch.alter_column('group_id', type_=sa.Text(), existing_type=sa.String(length=255), existing_nullable=False)


def downgrade() -> None:
    for table in TABLES:
        with op.batch_alter_table(table) as batch:
            batch.alter_column('group_id', type_=sa.String(length=255), existing_type=sa.Text(), existing_nullable=False)
