"""When a dataset was dropped (OpenLineage's ``lifecycleStateChange`` facet, DROP), and when an event last named it
otherwise: a dataset dropped and not named since is shown as dropped, its readers still listed.

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-08
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0026'
down_revision = '0025'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('lineage_datasets') as table:
        table.add_column(sa.Column('dropped_at', sa.DateTime(timezone=True), nullable=True))
        table.add_column(sa.Column('named_at', sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('lineage_datasets') as table:
        table.drop_column('named_at')
        table.drop_column('dropped_at')
