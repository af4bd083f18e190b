"""Approvals: per-subject policy; proposals keep mode, directions, teams to ask, reminders, extension, surface,
Schema Registry outcome, and their card in the subject's channel.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('proposals', schema=None) as batch_op:
        batch_op.add_column(sa.Column('mode', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False, server_default='FULL'))
        batch_op.add_column(sa.Column('backward', sa.Boolean(), nullable=False, server_default=sa.true()))
        batch_op.add_column(sa.Column('forward', sa.Boolean(), nullable=False, server_default=sa.true()))
        batch_op.add_column(sa.Column('teams', sa.JSON(), nullable=False, server_default='[]'))
        batch_op.add_column(sa.Column('reminders_sent', sa.Integer(), nullable=False, server_default='0'))
        batch_op.add_column(sa.Column('extended', sa.Boolean(), nullable=False, server_default=sa.false()))
        batch_op.add_column(sa.Column('surface', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False, server_default='slack'))
        batch_op.add_column(sa.Column('version', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('registry_id', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('subject_card_channel', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True))
        batch_op.add_column(sa.Column('subject_card_ts', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=True))
        batch_op.add_column(sa.Column('registry_error', sa.Text(), nullable=True))

    with op.batch_alter_table('subjects', schema=None) as batch_op:
        batch_op.add_column(sa.Column('policy', sa.JSON(), nullable=False, server_default='{}'))


def downgrade() -> None:
    with op.batch_alter_table('subjects', schema=None) as batch_op:
        batch_op.drop_column('policy')

    with op.batch_alter_table('proposals', schema=None) as batch_op:
        batch_op.drop_column('subject_card_ts')
        batch_op.drop_column('subject_card_channel')
        batch_op.drop_column('registry_error')
        batch_op.drop_column('registry_id')
        batch_op.drop_column('version')
        batch_op.drop_column('surface')
        batch_op.drop_column('extended')
        batch_op.drop_column('reminders_sent')
        batch_op.drop_column('teams')
        batch_op.drop_column('forward')
        batch_op.drop_column('backward')
        batch_op.drop_column('mode')

