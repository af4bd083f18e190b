"""Restore drills of Flink jobs (`bot flink drill JOB`): the monthly report names the jobs without a completed one in
90 days (the first source document's quarterly drill).

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = '0018'
down_revision = '0017'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'flink_drills',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('job', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
        sa.Column('ok', sa.Boolean(), nullable=False),
        sa.Column('savepoint', sa.Text(), nullable=False),
        sa.Column('reason', sa.Text(), nullable=False),
        sa.Column('drilled_by', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index(op.f('ix_flink_drills_job'), 'flink_drills', ['job'], unique=False)
    op.create_index(op.f('ix_flink_drills_created_at'), 'flink_drills', ['created_at'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_flink_drills_created_at'), table_name='flink_drills')
    op.drop_index(op.f('ix_flink_drills_job'), table_name='flink_drills')
    op.drop_table('flink_drills')
