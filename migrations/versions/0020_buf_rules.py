"""Buf's rules beside the registry's for Protobuf subjects: a subject names the Buf categories or rules it is held to
(the catalog's ``buf:``), and a proposal keeps what they found (``{"rules", "findings"}`` or ``{"rules", "error"}``).

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0020'
down_revision = '0019'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('subjects') as batch:
        batch.add_column(sa.Column('buf', sa.JSON(), nullable=False, server_default='[]'))
    with op.batch_alter_table('proposals') as batch:
        batch.add_column(sa.Column('buf', sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('proposals') as batch:
        batch.drop_column('buf')
    with op.batch_alter_table('subjects') as batch:
        batch.drop_column('buf')
