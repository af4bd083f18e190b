"""Protobuf and JSON Schema beside Avro: a proposal keeps the registry's schema type it was proposed as (``AVRO``,
``PROTOBUF``, ``JSON``); a subject's type is its ``format`` (set from the catalog's ``schema_type``).

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = '0019'
down_revision = '0018'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('proposals') as batch:
        batch.add_column(sa.Column('schema_type', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False, server_default='AVRO'))


def downgrade() -> None:
    with op.batch_alter_table('proposals') as batch:
        batch.drop_column('schema_type')
