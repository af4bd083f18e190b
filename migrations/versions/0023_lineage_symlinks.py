"""A dataset's other names, from OpenLineage's symlinks facet (a table's catalog name beside its storage path), so that
jobs naming one dataset differently still join in the lineage graph; and the time of the newest event that said its
fields or owners, so that an older event arriving late changes neither.

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0023'
down_revision = '0022'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('lineage_datasets') as batch:
        batch.add_column(sa.Column('symlinks', sa.JSON(), nullable=False, server_default='[]'))
        batch.add_column(sa.Column('said_at', sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('lineage_datasets') as batch:
        batch.drop_column('said_at')
        batch.drop_column('symlinks')
