"""The time of the newest OpenLineage event that said what a job runs on, so a late event cannot undo a newer one's Flink
version.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0022'
down_revision = '0021'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('lineage_jobs') as batch:
        batch.add_column(sa.Column('flink_at', sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('lineage_jobs') as batch:
        batch.drop_column('flink_at')
