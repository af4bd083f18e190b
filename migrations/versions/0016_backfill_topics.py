"""A backfill moves several topics of a group at once: its request names ``topics`` (none: every topic the group has
committed on) and offsets per topic, each planned move names its topic, and the offsets it put back on Undo are kept per
topic. Stored backfills of one topic are rewritten to that shape (and back on downgrade).

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-04
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = '0016'
down_revision = '0015'
branch_labels = None
depends_on = None

OPERATIONS = sa.table('operations', sa.column('id', sa.Integer), sa.column('kind', sa.String),
                      sa.column('request', sa.JSON), sa.column('plan', sa.JSON), sa.column('progress', sa.JSON))


def _rewrite(change: Any) -> None:
    connection = op.get_bind()
    rows = connection.execute(sa.select(OPERATIONS.c.id, OPERATIONS.c.request, OPERATIONS.c.plan, OPERATIONS.c.progress)
                              .where(OPERATIONS.c.kind == 'backfill')).all()
    for row in rows:
        request, plan, progress = change(dict(row.request), dict(row.plan), dict(row.progress))
        connection.execute(sa.update(OPERATIONS).where(OPERATIONS.c.id == row.id).values(request=request, plan=plan, progress=progress))


def _to_topics(request: dict[str, Any], plan: dict[str, Any], progress: dict[str, Any]) -> tuple[dict[str, Any], ...]:
    if 'topics' in request:
        return request, plan, progress
    topic = request.pop('topic')
    request['topics'] = [topic]
    request['to_offsets'] = {topic: request['to_offsets']} if request.get('to_offsets') else {}
    plan['moves'] = [{'topic': topic, **move} for move in plan.get('moves', [])]
    if 'previous' in progress:
        progress['previous'] = {topic: progress['previous']}
    return request, plan, progress


def _to_topic(request: dict[str, Any], plan: dict[str, Any], progress: dict[str, Any]) -> tuple[dict[str, Any], ...]:
    if 'topic' in request:
        return request, plan, progress
    topics = request.pop('topics')
    if len(topics) != 1:
        raise RuntimeError(f"a stored backfill moves {', '.join(topics) or 'all topics of its group'}: revision 0015 can hold one topic "
                           "only; delete or finish such backfills before downgrading")
    topic = topics[0]
    request['topic'] = topic
    request['to_offsets'] = request.get('to_offsets', {}).get(topic, {})
    plan['moves'] = [{k: v for k, v in move.items() if k != 'topic'} for move in plan.get('moves', [])]
    if 'previous' in progress:
        progress['previous'] = progress['previous'].get(topic, {})
    return request, plan, progress


def upgrade() -> None:
    _rewrite(_to_topics)


def downgrade() -> None:
    _rewrite(_to_topic)
