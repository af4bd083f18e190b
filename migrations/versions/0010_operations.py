"""Oncall operations (backfills and DLQ replays), the teams' oncall user groups, catalog-wide settings; the census of
consumer groups (topic readers, census runs, attributions) and the consumer groups jobs declare; schemas seen outside the
bot (registry versions, schema ids on topics); the monthly health reports.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'operations',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column('state', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column('team', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=True),
        sa.Column('requested_by', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column('surface', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column('request', sa.JSON(), nullable=False),
        sa.Column('plan', sa.JSON(), nullable=False),
        sa.Column('progress', sa.JSON(), nullable=False),
        sa.Column('result', sa.Text(), nullable=False),
        sa.Column('version', sa.Integer(), nullable=False),
        sa.Column('lease_owner', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column('lease_until', sa.DateTime(timezone=True), nullable=True),
        sa.Column('channel', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column('message_channel', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column('message_ts', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=True),
        sa.Column('calendar_entry', sa.Integer(), nullable=True),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index('ix_operations_state', 'operations', ['state'])
    op.create_index('ix_operations_created_at', 'operations', ['created_at'])
    op.create_table(
        'catalog_settings',
        sa.Column('name', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column('value', sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint('name'),
    )
    with op.batch_alter_table('teams') as batch:
        batch.add_column(sa.Column('oncall_usergroup', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True))
        batch.add_column(sa.Column('consumer_groups', sa.JSON(), nullable=False, server_default='[]'))
    with op.batch_alter_table('lineage_jobs') as batch:
        batch.add_column(sa.Column('consumer_groups', sa.JSON(), nullable=False, server_default='[]'))
    op.create_table(
        'topic_readers',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('topic', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
        sa.Column('group_id', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
        sa.Column('state', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column('members', sa.JSON(), nullable=False),
        sa.Column('committed', sa.JSON(), nullable=False),
        sa.Column('lag', sa.BigInteger(), nullable=True),
        sa.Column('retention_ms', sa.BigInteger(), nullable=True),
        sa.Column('first_seen', sa.DateTime(timezone=True), nullable=False),
        sa.Column('last_moved', sa.DateTime(timezone=True), nullable=True),
        sa.Column('seen_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('topic', 'group_id', name='uq_topic_readers_topic_group'),
    )
    op.create_index('ix_topic_readers_topic', 'topic_readers', ['topic'])
    op.create_index('ix_topic_readers_group_id', 'topic_readers', ['group_id'])
    op.create_table(
        'census_runs',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('ok', sa.Boolean(), nullable=False),
        sa.Column('error', sa.Text(), nullable=True),
        sa.Column('groups', sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index('ix_census_runs_at', 'census_runs', ['at'])
    op.create_table(
        'observed_schemas',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('subject', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
        sa.Column('source', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column('schema_id', sa.Integer(), nullable=False),
        sa.Column('version', sa.Integer(), nullable=False),
        sa.Column('fingerprint', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column('accounted', sa.Boolean(), nullable=False),
        sa.Column('level', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=True),
        sa.Column('detail', sa.JSON(), nullable=False),
        sa.Column('seen_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('acknowledged_by', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column('proposal_id', sa.Integer(), nullable=True),
        sa.Column('channel', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column('message_channel', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column('message_ts', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=True),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('subject', 'source', 'schema_id', 'version', name='uq_observed_schemas_identity'),
    )
    op.create_index('ix_observed_schemas_subject', 'observed_schemas', ['subject'])
    op.create_table(
        'health_reports',
        sa.Column('month', sqlmodel.sql.sqltypes.AutoString(length=7), nullable=False),
        sa.Column('figures', sa.JSON(), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('month'),
    )
    op.create_table(
        'group_attributions',
        sa.Column('group_id', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
        sa.Column('team', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=True),
        sa.Column('retired', sa.Boolean(), nullable=False),
        sa.Column('by_user', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column('at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('group_id'),
    )


def downgrade() -> None:
    op.drop_table('health_reports')
    op.drop_table('group_attributions')
    op.drop_index('ix_observed_schemas_subject', 'observed_schemas')
    op.drop_table('observed_schemas')
    op.drop_index('ix_census_runs_at', 'census_runs')
    op.drop_table('census_runs')
    op.drop_index('ix_topic_readers_group_id', 'topic_readers')
    op.drop_index('ix_topic_readers_topic', 'topic_readers')
    op.drop_table('topic_readers')
    with op.batch_alter_table('lineage_jobs') as batch:
        batch.drop_column('consumer_groups')
    with op.batch_alter_table('teams') as batch:
        batch.drop_column('consumer_groups')
        batch.drop_column('oncall_usergroup')
    op.drop_table('catalog_settings')
    op.drop_index('ix_operations_created_at', 'operations')
    op.drop_index('ix_operations_state', 'operations')
    op.drop_table('operations')
