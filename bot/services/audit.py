"""The audit log: who did what, when, from which surface."""

from __future__ import annotations

from typing import Any

from sqlmodel.ext.asyncio.session import AsyncSession

from bot.store.models import AuditEntry


def record(session: AsyncSession, actor: str, surface: str, action: str, target_kind: str, target_id: str,
           detail: dict[str, Any]) -> None:
    """Add an entry to ``session`` (it commits with the change it describes)."""
    session.add(AuditEntry(actor=actor, surface=surface, action=action, target_kind=target_kind, target_id=target_id, detail=detail))
