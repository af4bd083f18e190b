"""Initial tables: subjects, schema versions, proposals, acknowledgements, audit log, Slack deliveries.

Revision ID: 0001
Revises: 
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('audit_log',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('actor', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('surface', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('action', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('target_kind', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('target_id', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('detail', sa.JSON(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('audit_log', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_audit_log_at'), ['at'], unique=False)
        batch_op.create_index(batch_op.f('ix_audit_log_target_id'), ['target_id'], unique=False)

    op.create_table('slack_deliveries',
    sa.Column('key', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
    sa.Column('received_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('key')
    )
    with op.batch_alter_table('slack_deliveries', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_slack_deliveries_received_at'), ['received_at'], unique=False)

    op.create_table('subjects',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
    sa.Column('format', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('compatibility', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('owner_team', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=True),
    sa.Column('channel', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('subjects', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_subjects_name'), ['name'], unique=True)

    op.create_table('proposals',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('subject_id', sa.Integer(), nullable=False),
    sa.Column('proposer', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('schema_text', sa.Text(), nullable=False),
    sa.Column('level', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('state', sqlmodel.sql.sqltypes.AutoString(length=24), nullable=False),
    sa.Column('notes', sa.Text(), nullable=False),
    sa.Column('findings', sa.JSON(), nullable=False),
    sa.Column('impact', sa.JSON(), nullable=False),
    sa.Column('window_start', sa.DateTime(timezone=True), nullable=True),
    sa.Column('window_end', sa.DateTime(timezone=True), nullable=True),
    sa.Column('deadline', sa.DateTime(timezone=True), nullable=True),
    sa.Column('revision_of', sa.Integer(), nullable=True),
    sa.Column('card_channel', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
    sa.Column('card_ts', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('decided_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['revision_of'], ['proposals.id'], ),
    sa.ForeignKeyConstraint(['subject_id'], ['subjects.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('proposals', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_proposals_deadline'), ['deadline'], unique=False)
        batch_op.create_index(batch_op.f('ix_proposals_state'), ['state'], unique=False)
        batch_op.create_index(batch_op.f('ix_proposals_subject_id'), ['subject_id'], unique=False)

    op.create_table('acknowledgements',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('proposal_id', sa.Integer(), nullable=False),
    sa.Column('team', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
    sa.Column('user', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('decision', sqlmodel.sql.sqltypes.AutoString(length=24), nullable=False),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['proposal_id'], ['proposals.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('proposal_id', 'team', name='uq_acknowledgements_proposal_team')
    )
    with op.batch_alter_table('acknowledgements', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_acknowledgements_proposal_id'), ['proposal_id'], unique=False)

    op.create_table('schema_versions',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('subject_id', sa.Integer(), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('schema_text', sa.Text(), nullable=False),
    sa.Column('fingerprint', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('registry_id', sa.Integer(), nullable=True),
    sa.Column('proposal_id', sa.Integer(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['proposal_id'], ['proposals.id'], ),
    sa.ForeignKeyConstraint(['subject_id'], ['subjects.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('subject_id', 'version', name='uq_schema_versions_subject_version')
    )
    with op.batch_alter_table('schema_versions', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_schema_versions_fingerprint'), ['fingerprint'], unique=False)
        batch_op.create_index(batch_op.f('ix_schema_versions_subject_id'), ['subject_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('schema_versions', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_schema_versions_subject_id'))
        batch_op.drop_index(batch_op.f('ix_schema_versions_fingerprint'))

    op.drop_table('schema_versions')
    with op.batch_alter_table('acknowledgements', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_acknowledgements_proposal_id'))

    op.drop_table('acknowledgements')
    with op.batch_alter_table('proposals', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_proposals_subject_id'))
        batch_op.drop_index(batch_op.f('ix_proposals_state'))
        batch_op.drop_index(batch_op.f('ix_proposals_deadline'))

    op.drop_table('proposals')
    with op.batch_alter_table('subjects', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_subjects_name'))

    op.drop_table('subjects')
    with op.batch_alter_table('slack_deliveries', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_slack_deliveries_received_at'))

    op.drop_table('slack_deliveries')
    with op.batch_alter_table('audit_log', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_audit_log_target_id'))
        batch_op.drop_index(batch_op.f('ix_audit_log_at'))

    op.drop_table('audit_log')
