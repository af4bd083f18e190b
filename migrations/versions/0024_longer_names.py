"""Names as long as what gives them: a consumer group's id of any length (Kafka sets none, and one group named past 255
characters made PostgreSQL refuse a whole census), and a channel as long as Slack's names (80 characters and the #,
past the 64 kept before).

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

GROUPS = ('topic_readers', 'group_attributions')
CHANNELS = ('subjects', 'teams', 'lineage_jobs', 'sli_episodes', 'operations', 'observed_schemas')


def upgrade() -> None:
    for table in GROUPS:
        with op.batch_alter_table(table) as batch:
            batch.alter_column('group_id', type_=sa.Text(), existing_type=sa.String(length=255), existing_nullable=False)
    for table in CHANNELS:
        with op.batch_alter_table(table) as batch:
            batch.alter_column('channel', type_=sa.String(length=128), existing_type=sa.String(length=64))


def downgrade() -> None:
    for table in CHANNELS:
        with op.batch_alter_table(table) as batch:
            batch.alter_column('channel', type_=sa.String(length=64), existing_type=sa.String(length=128))
    for table in GROUPS:
        with op.batch_alter_table(table) as batch:
            batch.alter_column('group_id', type_=sa.String(length=255), existing_type=sa.Text(), existing_nullable=False)
