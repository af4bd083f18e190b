"""Transitions: a breaking change shipped as expand / migrate / contract, one open per subject, with the readers of
its old fields and what their teams said.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0021'
down_revision = '0020'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'transitions',
        sa.Column('id', sa.Integer(), primary_key=True),
        sa.Column('subject_id', sa.Integer(), sa.ForeignKey('subjects.id'), nullable=False),
        sa.Column('open_subject', sa.Integer(), nullable=True),
        sa.Column('phase', sa.String(length=16), nullable=False),
        sa.Column('mapping', sa.JSON(), nullable=False),
        sa.Column('original_text', sa.Text(), nullable=False),
        sa.Column('expand_text', sa.Text(), nullable=False),
        sa.Column('contract_text', sa.Text(), nullable=False),
        sa.Column('expand_proposal_id', sa.Integer(), sa.ForeignKey('proposals.id'), nullable=True),
        sa.Column('contract_proposal_id', sa.Integer(), sa.ForeignKey('proposals.id'), nullable=True),
        sa.Column('return_proposal_id', sa.Integer(), sa.ForeignKey('proposals.id'), nullable=True),
        sa.Column('readers', sa.JSON(), nullable=False),
        sa.Column('progress', sa.String(length=64), nullable=False, server_default=''),
        sa.Column('proposer', sa.String(length=64), nullable=False),
        sa.Column('surface', sa.String(length=16), nullable=False),
        sa.Column('deadline', sa.DateTime(timezone=True), nullable=False),
        sa.Column('reminders_sent', sa.Integer(), nullable=False),
        sa.Column('deadline_asked', sa.Boolean(), nullable=False),
        sa.Column('calendar_entry_id', sa.Integer(), sa.ForeignKey('calendar_entries.id'), nullable=True),
        sa.Column('ended', sa.Text(), nullable=True),
        sa.Column('card_channel', sa.String(length=64), nullable=True),
        sa.Column('card_ts', sa.String(length=32), nullable=True),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('closed_at', sa.DateTime(timezone=True), nullable=True),
        sa.UniqueConstraint('open_subject'),
    )
    op.create_index('ix_transitions_subject_id', 'transitions', ['subject_id'])
    op.create_index('ix_transitions_phase', 'transitions', ['phase'])
    op.create_index('ix_transitions_deadline', 'transitions', ['deadline'])
    op.create_table(
        'transition_moves',
        sa.Column('id', sa.Integer(), primary_key=True),
        sa.Column('transition_id', sa.Integer(), sa.ForeignKey('transitions.id'), nullable=False),
        sa.Column('reader', sa.String(length=600), nullable=False),
        sa.Column('team', sa.String(length=255), nullable=False),
        sa.Column('user', sa.String(length=64), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint('transition_id', 'reader', name='uq_transition_moves_reader'),
    )
    op.create_index('ix_transition_moves_transition_id', 'transition_moves', ['transition_id'])


def downgrade() -> None:
    op.drop_index('ix_transition_moves_transition_id', table_name='transition_moves')
    op.drop_table('transition_moves')
    op.drop_index('ix_transitions_deadline', table_name='transitions')
    op.drop_index('ix_transitions_phase', table_name='transitions')
    op.drop_index('ix_transitions_subject_id', table_name='transitions')
    op.drop_table('transitions')
