"""Lineage names as OpenLineage gives them: a dataset's other names, from the symlinks facet (a table's catalog name
beside its storage path), so that jobs naming one dataset differently still join in the lineage graph; the time of the
newest event that said a dataset's fields or owners, so that an older event arriving late changes neither; and
namespaces and names of any length (a dataset named by its storage path runs past 255 characters).

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

NAMED = ('lineage_datasets', 'lineage_jobs', 'lineage_observations')


def upgrade() -> None:
    with op.batch_alter_table('lineage_datasets') as batch:
        batch.add_column(sa.Column('symlinks', sa.JSON(), nullable=False, server_default='[]'))
        batch.add_column(sa.Column('said_at', sa.DateTime(timezone=True), nullable=True))
    for table in NAMED:
        with op.batch_alter_table(table) as batch:
            for column in ('namespace', 'name'):
                batch.alter_column(column, type_=sa.Text(), existing_type=sa.String(length=255), existing_nullable=False)


def downgrade() -> None:
    for table in NAMED:
        with op.batch_alter_table(table) as batch:
            for column in ('namespace', 'name'):
                batch.alter_column(column, type_=sa.String(length=255), existing_type=sa.Text(), existing_nullable=False)
    with op.batch_alter_table('lineage_datasets') as batch:
        batch.drop_column('said_at')
        batch.drop_column('symlinks')
