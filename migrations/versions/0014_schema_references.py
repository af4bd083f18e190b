"""Schema references: a proposal keeps the references it names (``{name, subject, version}``, registered with it, in
order) and the referenced schemas as they were resolved when it was proposed (``{subject, version, schema}``,
dependencies first), so its approval stores exactly what was classified.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('proposals') as batch:
        batch.add_column(sa.Column('references', sa.JSON(), nullable=False, server_default='[]'))
        batch.add_column(sa.Column('referenced', sa.JSON(), nullable=False, server_default='[]'))


def downgrade() -> None:
    with op.batch_alter_table('proposals') as batch:
        batch.drop_column('referenced')
        batch.drop_column('references')
