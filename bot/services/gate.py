"""The deploy gate: is this exact schema an approved version of the subject? A schema that was not approved does
not exist. Approved means identical in every attribute (docs, defaults, aliases, custom properties), not just
in Parsing Canonical Form; otherwise the proposal that carries it (pending or rejected), or nothing, with its
classification against the current version. An approved schema is ``frozen`` while a freeze covers the subject
now, unless an emergency override (two oncall people) stands for it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlmodel import col, select

from bot.domain.approvals import State
from bot.domain.calendar import Scope, Window
from bot.domain.compat.analysis import analyse, fingerprints_each
from bot.domain.references import Reference
from bot.services.calendar import CalendarService
from bot.services.proposals import TYPE_WORDS, ProposalError, names_of, subject_type
from bot.services.references import References, UnresolvedReference
from bot.services.registry import Registry
from bot.store.database import Database
from bot.store.models import Proposal, SchemaVersion, Subject, aware, utcnow
from bot.workers import off_loop

APPROVED, PENDING, REJECTED, UNKNOWN, FROZEN = "approved", "pending", "rejected", "unknown", "frozen"
STATUS_OF = {State.PENDING.value: PENDING, State.REJECTED.value: REJECTED, State.CHANGES_REQUESTED.value: REJECTED}


class GateError(ValueError):
    """A question the gate cannot answer (an unknown subject, not a schema); ``status`` is the HTTP status."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class Gate:
    """Answers deploy pipelines."""

    def __init__(self, db: Database, registry: Registry, calendar: CalendarService, clock: Callable[[], datetime] = utcnow,
                 references: References | None = None) -> None:
        self.db, self.registry, self.calendar, self.clock = db, registry, calendar, clock
        self.references = references or References(db, registry, None)

    async def check(self, subject_name: str, schema_text: str, references: Sequence[Reference] | None = None,
                    schema_type: str | None = None) -> dict[str, Any]:
        """``{"subject", "schema_type", "status", "proposal", "proposal_state", "version", "level", "changes", "freeze",
        "override"}``. ``references``: the schema's references (None: those of the subject's current version); the
        fingerprint compared is of the schema with them resolved. ``schema_type``: the registry's, when the pipeline
        names it (it must be the subject's)."""
        subject = await self.registry.subject(subject_name)
        if subject is None:
            raise GateError(f"there is no subject {subject_name!r}: nothing is approved for it", 404)
        try:
            subject_type(subject, schema_type)
        except ProposalError as err:
            raise GateError(str(err).replace("; nothing was stored", "")) from None
        pins = list(references) if references is not None else await self.references.pins(subject_name)
        try:
            resolved = await self.references.resolve(pins)
        except UnresolvedReference as err:
            raise GateError(str(err), 503 if err.retryable else 400) from None
        answer = await self._approval(subject, schema_text, resolved)
        answer["freeze"], answer["override"] = None, None
        if answer["status"] != APPROVED:
            return answer
        now = self.clock()
        frozen = await self.calendar.freeze_over(Window(now, now + timedelta(microseconds=1)), subject.owner_team or "",
                                                 Scope(subjects=frozenset({subject_name})))
        if frozen is None:
            return answer
        freeze, occurrence = frozen
        answer["freeze"] = {"name": freeze.name, "ends": occurrence.end.isoformat(), "reason": freeze.reason}
        override = await self.calendar.override_for(subject_name, now)
        if override is None:
            return {**answer, "status": FROZEN}
        answer["override"] = {"entry": override.id, "proposal": override.proposal_id, "until": aware(override.end).isoformat()}
        return answer

    async def _approval(self, subject: Subject, schema_text: str, resolved: list[dict[str, Any]]) -> dict[str, Any]:
        subject_name = subject.name
        history = await self.registry.history(subject_name)
        analysis = await off_loop(analyse, [v.schema_text for v in history], schema_text, subject.compatibility, [e["schema"] for e in resolved],
                                  subject.format, names_of(resolved))
        if analysis.error is not None or analysis.verdict is None:
            raise GateError(f"not a valid {TYPE_WORDS[subject.format]} schema: {analysis.error}")
        answer: dict[str, Any] = {"subject": subject_name, "schema_type": subject.format, "status": UNKNOWN, "proposal": None, "proposal_state": None, "version": None,
                                  "level": str(analysis.verdict.level), "changes": [f.as_json() for f in analysis.verdict.findings]}
        match = next((v for v in reversed(history) if v.fingerprint == analysis.fingerprint), None)
        if match is not None:
            approved_by = await self._proposal_of(subject, match.number)
            newest = match.number == history[-1].number  # an older approved version is classified against the newest
            return {**answer, "status": APPROVED, "version": match.number, "proposal": approved_by,
                    "proposal_state": State.APPROVED.value if approved_by else None,
                    "level": "safe" if newest else answer["level"], "changes": [] if newest else answer["changes"]}
        async with self.db.session() as session:
            proposals = list((await session.exec(select(Proposal).where(col(Proposal.subject_id) == subject.id, col(Proposal.state) != State.APPROVED.value)
                                                 .order_by(col(Proposal.id).desc()).limit(200))).all())
        prints = await off_loop(fingerprints_each, [(p.schema_text, [e["schema"] for e in p.referenced], p.schema_type, names_of(p.referenced))
                                                    for p in proposals])
        for carrier, print_ in zip(proposals, prints, strict=True):
            if print_ == analysis.fingerprint:
                return {**answer, "status": STATUS_OF.get(carrier.state, UNKNOWN), "proposal": carrier.id, "proposal_state": carrier.state,
                        "level": carrier.level, "changes": carrier.findings}
        return answer

    async def _proposal_of(self, subject: Subject, version: int) -> int | None:
        async with self.db.session() as session:
            row = (await session.exec(select(SchemaVersion).where(col(SchemaVersion.subject_id) == subject.id,
                                                                 col(SchemaVersion.version) == version))).first()
        return row.proposal_id if row is not None else None
