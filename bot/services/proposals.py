"""Schema change proposals: classification, impact, acknowledgements, the clock, and the audit trail.

Every state change is a conditional UPDATE (``... WHERE state = 'pending'``, ``... WHERE
reminders_sent = n``), so whichever request or replica gets there first wins and the others change
nothing; on PostgreSQL the sweep also claims rows with ``FOR UPDATE SKIP LOCKED``. Notifications go
out after the commit, through the ``Notifier`` the Slack edge provides.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from bot.domain.approvals import Decision, Policy, State, outcome
from bot.domain.avro.model import Schema
from bot.domain.avro.parse import SchemaError, parse
from bot.domain.avro.paths import lineage_path
from bot.domain.compat.classify import Mode, Verdict, classify
from bot.domain.lineage.graph import LineageError
from bot.domain.lineage.model import Team
from bot.schema_registry import RegistrationError, SchemaRegistry
from bot.services.audit import record as audit
from bot.services.lineage import LineageService
from bot.services.registry import Registry
from bot.store.database import Database
from bot.store.models import (
    Acknowledgement,
    AuditEntry,
    Proposal,
    Subject,
    aware,
    utcnow,
)

log = logging.getLogger(__name__)
MAX_SCHEMA_BYTES = 1_000_000


class ProposalError(Exception):
    """A request the workflow refuses; the message is for the person who made it.

    ``field`` names the form field at fault (``subject``, ``schema``...), so a modal can show it there.
    """

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class Event(enum.StrEnum):
    """What happened to a proposal (what the notifier tells Slack)."""

    CREATED = "created"
    DECIDED = "decided"
    REMINDER = "reminder"
    EXPIRED = "expired"
    WITHDRAWN = "withdrawn"
    EXTENDED = "extended"


@dataclass
class ProposalView:
    """A proposal with everything a card shows."""

    proposal: Proposal
    subject: Subject
    acknowledgements: list[Acknowledgement]
    teams: dict[str, Team]

    @property
    def id(self) -> int:
        """The proposal's number."""
        assert self.proposal.id is not None
        return self.proposal.id

    @property
    def state(self) -> State:
        """Where it stands."""
        return State(self.proposal.state)

    def decision_of(self, team: str) -> Acknowledgement | None:
        """The team's decision, if it made one."""
        return next((a for a in self.acknowledgements if a.team == team), None)

    def waiting(self) -> list[str]:
        """Teams that have not decided yet."""
        return [t for t in self.proposal.teams if self.decision_of(t) is None]


@dataclass
class Notice:
    """One thing to tell Slack after a commit."""

    event: Event
    view: ProposalView
    actor: str | None = None
    teams: list[str] = field(default_factory=list)
    detail: str = ""


class Notifier(Protocol):
    """Tells people (the Slack edge implements it)."""

    async def notify(self, notice: Notice) -> None:
        """Post or update what ``notice`` is about."""


class Membership(Protocol):
    """Who belongs to a team (Slack user groups, with the catalog's members as a fallback)."""

    async def members(self, team: Team) -> set[str]:
        """The team's members."""


class Proposals:
    """The approval workflow."""

    def __init__(self, db: Database, registry: Registry, lineage: LineageService, membership: Membership,
                 notifier: Notifier, clock: Callable[[], datetime] = utcnow, schema_registry: SchemaRegistry | None = None) -> None:
        self.db, self.registry, self.lineage = db, registry, lineage
        self.membership, self.notifier, self.clock = membership, notifier, clock
        self.schema_registry = schema_registry

    # --- proposing ------------------------------------------------------------------------------

    async def check(self, subject_name: str, schema_text: str, window_hours: float | None = None) -> tuple[Subject, Schema, Verdict]:
        """Everything that can be wrong with a proposal before it exists (ProposalError names the field)."""
        subject = await self.registry.subject(subject_name)
        if subject is None:
            raise ProposalError(f"unknown subject {subject_name!r}: it must be in the catalog (bot catalog load)", "subject")
        if len(schema_text.encode()) > MAX_SCHEMA_BYTES:
            raise ProposalError(f"the schema is larger than {MAX_SCHEMA_BYTES // 1000} kB", "schema")
        try:
            new = parse(schema_text)
        except SchemaError as err:
            raise ProposalError(f"not a valid Avro schema: {err}", "schema") from None
        if window_hours is not None and not 0 < window_hours <= 24 * 30:
            raise ProposalError("the planned duration must be between 0 and 720 hours", "duration")
        history = [v.schema for v in await self.registry.history(subject_name)]
        verdict = classify(history, new, Mode.parse(subject.compatibility))
        if verdict.identical:
            raise ProposalError(f"no change: this schema is identical to the current version of {subject_name}", "schema")
        return subject, new, verdict

    async def propose(self, subject_name: str, schema_text: str, proposer: str, *, notes: str = "",
                      window_start: datetime | None = None, window_hours: float | None = None,
                      surface: str = "slack", revision_of: int | None = None) -> ProposalView:
        """Classify, find the impact, store, and announce; ProposalError for bad input (nothing stored)."""
        subject, new, verdict = await self.check(subject_name, schema_text, window_hours)
        mode = verdict.mode
        impact, owners = await self._impact(subject_name, verdict, new.label)
        teams = await self.lineage.teams()
        to_ask = [o for o in owners if o in teams]
        policy = Policy.from_json(subject.policy)
        now = self.clock()
        waits = policy.needs_acknowledgement(verdict.level, to_ask)
        assert subject.id is not None
        proposal = Proposal(
            subject_id=subject.id, proposer=proposer, schema_text=schema_text, level=str(verdict.level),
            state=State.PENDING if waits else State.APPROVED, notes=notes,
            findings=[f.as_json() for f in verdict.findings], impact=impact, mode=mode.value,
            backward=verdict.backward, forward=verdict.forward, teams=to_ask if waits else [],
            window_start=window_start, window_end=window_start + timedelta(hours=window_hours or 1) if window_start else None,
            deadline=now + policy.window if waits else None, revision_of=revision_of, surface=surface,
            created_at=now, decided_at=None if waits else now,
        )
        async with self.db.session() as session:
            if revision_of is not None:
                await self._check_revisable(session, revision_of, proposer)
            session.add(proposal)
            await session.flush()
            audit(session, proposer, surface, "proposed", "proposal", str(proposal.id),
                  {"subject": subject_name, "level": str(verdict.level), "teams": to_ask, "revision_of": revision_of})
            await session.commit()
        if not waits:
            await self._accept(proposal, subject_name, "approved at once: " + (
                "a safe change" if verdict.level not in policy.acknowledge else "no downstream team reads the changed fields"))
        view = await self.view(proposal.id)  # type: ignore[arg-type]
        await self.notifier.notify(Notice(Event.CREATED, view, proposer, to_ask))
        return view

    async def _impact(self, subject: str, verdict: Verdict, label: str) -> tuple[dict[str, Any], list[str]]:
        """Who is affected: every consumer of the topic when reads fail (Avro fails the whole record),
        else the field-level closure of the drifting fields."""
        graph = await self.lineage.graph()
        try:
            dataset = graph.find_dataset(subject)
        except LineageError:
            return {"note": "no lineage is known for this subject"}, []
        if any(f.breaks for f in verdict.findings):
            impact = graph.impact(dataset, None)
            return {**impact.as_json(), "note": "reads fail in at least one direction: every consumer of the topic is affected"}, list(impact.owners)
        paths = sorted({lineage_path(f.path, label) for f in verdict.findings})
        if "" in paths:
            impact = graph.impact(dataset, None)
            return impact.as_json(), list(impact.owners)
        fields = graph.known(dataset, paths)
        if not fields:
            return {"note": "no job reads the changed fields"}, []
        impact = graph.impact(dataset, fields)
        return impact.as_json(), list(impact.owners)

    # --- deciding -------------------------------------------------------------------------------

    async def decide(self, proposal_id: int, user: str, decision: Decision, reason: str = "", *,
                     team: str | None = None, surface: str = "slack") -> tuple[ProposalView, list[str]]:
        """Record ``user``'s decision for every waiting team they belong to (or for ``team``); returns the teams."""
        view = await self.view(proposal_id)
        if view.state.final:
            raise ProposalError(f"proposal #{proposal_id} is already {view.state.value.replace('_', ' ')}; nothing changed")
        if decision is not Decision.APPROVE and not reason.strip():
            raise ProposalError("a reason is required to reject or to request changes")
        candidates = [team] if team else list(view.proposal.teams)
        memberships = [t for t in candidates if t in view.proposal.teams and t in view.teams
                       and user in await self.membership.members(view.teams[t])]
        if not memberships:
            asked = ", ".join(view.proposal.teams) or "no team"
            raise ProposalError(f"only members of the teams asked ({asked}) can decide on #{proposal_id}; nothing changed")
        mine = [t for t in memberships if view.decision_of(t) is None]
        if not mine:
            earlier = view.decision_of(memberships[0])
            assert earlier is not None
            raise ProposalError(f"{memberships[0]} has already decided on #{proposal_id} "
                                f"({earlier.decision.replace('_', ' ')} by <@{earlier.user}>); nothing changed")
        recorded: list[str] = []
        async with self.db.session() as session:
            for name in mine:
                session.add(Acknowledgement(proposal_id=proposal_id, team=name, user=user, decision=decision.value,
                                            reason=reason.strip(), created_at=self.clock()))
                try:
                    await session.flush()
                except IntegrityError:
                    await session.rollback()
                    continue
                recorded.append(name)
                audit(session, user, surface, decision.value, "proposal", str(proposal_id), {"team": name, "reason": reason.strip()})
            await session.commit()
        if not recorded:
            raise ProposalError(f"your team has already decided on #{proposal_id}; nothing changed")
        view = await self.view(proposal_id)
        state = outcome(view.proposal.teams, {a.team: Decision(a.decision) for a in view.acknowledgements})
        if state is State.APPROVED:
            await self._accept(view.proposal, view.subject.name, "every team approved")
        elif state.final and await self._transition(proposal_id, state):
            log.info("proposal #%d %s", proposal_id, state.value)
        view = await self.view(proposal_id)
        await self.notifier.notify(Notice(Event.DECIDED, view, user, recorded, reason.strip()))
        return view, recorded

    async def withdraw(self, proposal_id: int, user: str, surface: str = "slack") -> ProposalView:
        """The proposer takes the proposal back."""
        view = await self.view(proposal_id)
        if view.proposal.proposer != user:
            raise ProposalError(f"only <@{view.proposal.proposer}>, who proposed #{proposal_id}, can withdraw it; nothing changed")
        if not await self._transition(proposal_id, State.WITHDRAWN, actor=user, surface=surface):
            raise ProposalError(f"proposal #{proposal_id} is already {view.state.value.replace('_', ' ')}; nothing changed")
        view = await self.view(proposal_id)
        await self.notifier.notify(Notice(Event.WITHDRAWN, view, user))
        return view

    async def extend(self, proposal_id: int, user: str, reason: str, surface: str = "slack") -> ProposalView:
        """The proposer moves the deadline by one more window, once, with a reason."""
        view = await self.view(proposal_id)
        if view.proposal.proposer != user:
            raise ProposalError(f"only the proposer can extend #{proposal_id}; nothing changed")
        if not reason.strip():
            raise ProposalError("give a reason to extend the deadline")
        policy = Policy.from_json(view.subject.policy)
        async with self.db.session() as session:
            moved = await session.exec(update(Proposal).where(col(Proposal.id) == proposal_id, col(Proposal.state) == State.PENDING.value,
                                                              col(Proposal.extended).is_(False))
                                       .values(extended=True, deadline=Proposal.deadline + policy.window))  # type: ignore[operator]
            if not getattr(moved, "rowcount", 0):
                raise ProposalError(f"#{proposal_id} cannot be extended (it is not pending, or was extended once already)")
            audit(session, user, surface, "extended", "proposal", str(proposal_id), {"reason": reason.strip()})
            await session.commit()
        view = await self.view(proposal_id)
        await self.notifier.notify(Notice(Event.EXTENDED, view, user, detail=reason.strip()))
        return view

    async def _check_revisable(self, session: AsyncSession, proposal_id: int, user: str) -> None:
        original = await session.get(Proposal, proposal_id)
        if original is None:
            raise ProposalError(f"there is no proposal #{proposal_id} to revise")
        if original.proposer != user:
            raise ProposalError(f"only the proposer of #{proposal_id} can revise it")

    async def _accept(self, proposal: Proposal, subject: str, why: str) -> None:
        """Record the schema as the subject's next version (and in the Schema Registry, when there is one)."""
        assert proposal.id is not None
        number = await self.registry.record(subject, parse(proposal.schema_text), proposal.id)
        registry_id, registry_error = None, None
        if self.schema_registry is not None:
            try:
                registry_id = await self.schema_registry.register(subject, proposal.schema_text)
            except RegistrationError as err:
                registry_error = str(err)
                log.error("proposal #%d approved but not registered: %s", proposal.id, err)
        async with self.db.session() as session:
            await session.exec(update(Proposal).where(col(Proposal.id) == proposal.id)
                               .values(state=State.APPROVED.value, version=number, decided_at=self.clock(),
                                       registry_id=registry_id, registry_error=registry_error))
            if registry_id is not None:
                await self.registry.note_registry_id(session, subject, number, registry_id)
            audit(session, "changeops", "workflow", "approved", "proposal", str(proposal.id),
                  {"version": number, "why": why, "registry_id": registry_id, "registry_error": registry_error})
            await session.commit()

    async def _transition(self, proposal_id: int, state: State, *, actor: str = "changeops", surface: str = "workflow") -> bool:
        """PENDING -> ``state``, if still pending; False when someone else got there first."""
        async with self.db.session() as session:
            moved = await session.exec(update(Proposal).where(col(Proposal.id) == proposal_id, col(Proposal.state) == State.PENDING.value)
                                       .values(state=state.value, decided_at=self.clock()))
            if not getattr(moved, "rowcount", 0):
                return False
            audit(session, actor, surface, state.value, "proposal", str(proposal_id), {})
            await session.commit()
        return True

    # --- the clock ------------------------------------------------------------------------------

    async def sweep(self) -> int:
        """Send due reminders and expire what passed its deadline; each exactly once across replicas."""
        now = self.clock()
        async with self.db.session() as session:
            query = select(Proposal).where(col(Proposal.state) == State.PENDING.value, col(Proposal.deadline).is_not(None))
            if self.db.engine.dialect.name == "postgresql":
                query = query.with_for_update(skip_locked=True)
            due = (await session.exec(query)).all()
            notices: list[tuple[Event, int, list[str]]] = []
            for proposal in due:
                assert proposal.id is not None and proposal.deadline is not None
                deadline, created = aware(proposal.deadline), aware(proposal.created_at)
                if now >= deadline:
                    claimed = await session.exec(update(Proposal).where(col(Proposal.id) == proposal.id, col(Proposal.state) == State.PENDING.value)
                                                 .values(state=State.EXPIRED.value, decided_at=now))
                    if getattr(claimed, "rowcount", 0):
                        audit(session, "changeops", "scheduler", "expired", "proposal", str(proposal.id), {})
                        notices.append((Event.EXPIRED, proposal.id, []))
                    continue
                subject = await session.get(Subject, proposal.subject_id)
                policy = Policy.from_json(subject.policy if subject else None)
                if policy.reminder_due(created, deadline, proposal.reminders_sent, now):
                    claimed = await session.exec(update(Proposal).where(col(Proposal.id) == proposal.id,
                                                                        col(Proposal.reminders_sent) == proposal.reminders_sent)
                                                 .values(reminders_sent=proposal.reminders_sent + 1))
                    if getattr(claimed, "rowcount", 0):
                        audit(session, "changeops", "scheduler", "reminded", "proposal", str(proposal.id),
                              {"reminder": proposal.reminders_sent + 1})
                        notices.append((Event.REMINDER, proposal.id, []))
            await session.commit()
        for event, proposal_id, _ in notices:
            view = await self.view(proposal_id)
            await self.notifier.notify(Notice(event, view, None, view.waiting()))
        return len(notices)

    # --- reading --------------------------------------------------------------------------------

    async def save_card(self, proposal_id: int, channel: str, ts: str, *, subject_channel: bool = False) -> None:
        """Remember where a card of the proposal is (the changes channel's, or the subject channel's)."""
        values = {"subject_card_channel": channel, "subject_card_ts": ts} if subject_channel else {"card_channel": channel, "card_ts": ts}
        async with self.db.session() as session:
            await session.exec(update(Proposal).where(col(Proposal.id) == proposal_id).values(**values))
            await session.commit()

    async def view(self, proposal_id: int) -> ProposalView:
        """A proposal with its subject, decisions and teams; ProposalError when there is none."""
        async with self.db.session() as session:
            proposal = await session.get(Proposal, proposal_id)
            if proposal is None:
                raise ProposalError(f"there is no proposal #{proposal_id}")
            subject = await session.get(Subject, proposal.subject_id)
            assert subject is not None
            acks = (await session.exec(select(Acknowledgement).where(Acknowledgement.proposal_id == proposal_id)
                                       .order_by(col(Acknowledgement.created_at)))).all()
        return ProposalView(proposal, subject, list(acks), await self.lineage.teams())

    async def listing(self, *, proposer: str | None = None, subject: str | None = None, waiting_for: str | None = None,
                      limit: int = 20) -> list[ProposalView]:
        """Recent proposals: by proposer, by subject, or those waiting on a user's teams."""
        async with self.db.session() as session:
            query = select(Proposal).order_by(col(Proposal.id).desc()).limit(200 if waiting_for else limit)
            if proposer:
                query = query.where(Proposal.proposer == proposer)
            if subject:
                query = query.join(Subject, col(Subject.id) == col(Proposal.subject_id)).where(Subject.name == subject)
            if waiting_for:
                query = query.where(col(Proposal.state) == State.PENDING.value)
            ids = [p.id for p in (await session.exec(query)).all()]
        views: list[ProposalView] = []
        for number in ids:
            assert number is not None
            view = await self.view(number)
            if waiting_for is None or await self._waits_on(view, waiting_for):
                views.append(view)
                if len(views) == limit:
                    break
        return views

    async def _waits_on(self, view: ProposalView, user: str) -> bool:
        for team in view.waiting():
            if team in view.teams and user in await self.membership.members(view.teams[team]):
                return True
        return False

    async def audit_trail(self, proposal_id: int) -> list[AuditEntry]:
        """Who did what to a proposal, oldest first."""
        await self.view(proposal_id)
        async with self.db.session() as session:
            return list((await session.exec(select(AuditEntry).where(AuditEntry.target_kind == "proposal",
                                                                     AuditEntry.target_id == str(proposal_id))
                                            .order_by(col(AuditEntry.id)))).all())


def team_names(teams: Sequence[str]) -> str:
    """``orders-team and analytics-team``."""
    return " and ".join([", ".join(teams[:-1]), teams[-1]] if len(teams) > 1 else teams)
