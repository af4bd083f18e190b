"""Schema change proposals: classification, impact, acknowledgements, the clock, and the audit trail.

Every state change is a conditional UPDATE on the state it expects (``... WHERE state = 'pending'``,
``... WHERE reminders_sent = n``), so whichever request or replica gets there first wins and the others
are told plainly; on PostgreSQL the sweep also claims rows with ``FOR UPDATE SKIP LOCKED``. What people
must be told is written to the outbox in the same transaction (a ``proposal.notice`` row per event, which
the Slack edge turns into cards, thread notes and DMs), so a crash never loses or invents a message.
Parsing and classifying run in a worker process, once per submission.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Protocol

from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from bot.domain.approvals import UNOWNED, Decision, Policy, State, outcome
from bot.domain.avro.paths import lineage_path
from bot.domain.buf.breaking import subject_breaking
from bot.domain.calendar import Kind, Scope, Status, Window
from bot.domain.compat.analysis import Analysis, analyse
from bot.domain.compat.classify import Mode, Verdict
from bot.domain.compat.formats import SchemaType
from bot.domain.compat.rules import Level
from bot.domain.lineage.graph import LineageError
from bot.domain.lineage.model import Team
from bot.domain.readers import Census
from bot.domain.references import Reference, read_references
from bot.domain.references import as_json as ref_json
from bot.schema_registry import RegistrationError, SchemaRegistry
from bot.services.audit import record as audit
from bot.services.calendar import CalendarService
from bot.services.lineage import LineageService
from bot.services.outbox import Expand, GiveUp, Item, Outbox, Retry
from bot.services.references import Dependent, References, UnresolvedReference, imports_of
from bot.services.registry import Registry
from bot.store.database import Database, same
from bot.store.models import (
    Acknowledgement,
    AuditEntry,
    CardCopy,
    Proposal,
    Subject,
    aware,
    utcnow,
)
from bot.workers import off_loop

log = logging.getLogger(__name__)
IMPACT_KEPT = 40  # impacted fields kept with a proposal (what its card lists); the totals count them all; `bot impact` lists every one
MAX_SCHEMA_BYTES = 1_000_000
NOTICE = "proposal.notice"  # outbox kind: tell people what happened to a proposal (the Slack edge renders it)
REGISTER = "proposal.register"  # outbox kind: register an approved schema in the Schema Registry
EMERGENCY_WINDOW = timedelta(hours=1)  # an emergency override stands at least this long (and until the freeze ends)
REGISTRY_ATTEMPTS = 8  # failed attempts (backed off: about two minutes) before the subject's oncall is asked to retry


class RegistryState(enum.StrEnum):
    """Where the registration of an approved version stands (it only moves forward, or back to registering by hand)."""

    REGISTERING = "registering"
    RETRYING = "retrying"
    REGISTERED = "registered"
    FAILED = "failed"


class ProposalError(Exception):
    """A request the workflow refuses; the message is for the person who made it.

    ``field`` names the form field at fault (``subject``, ``schema``...), so a modal can show it there.
    """

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class Event(enum.StrEnum):
    """What happened to a proposal (what the notice tells people)."""

    CREATED = "created"
    DECIDED = "decided"
    REMINDER = "reminder"
    EXPIRED = "expired"
    WITHDRAWN = "withdrawn"
    EXTENDED = "extended"
    REGISTERED = "registered"
    REGISTERING = "registering"  # the first failure (retrying from now on), or a retry by hand
    NOT_REGISTERED = "not_registered"  # refused, or given up after the attempts
    HELD = "held"
    EMERGENCY_REQUESTED = "emergency_requested"  # an oncall asked to ship a held change during its freeze
    EMERGENCY_SHIPPED = "emergency_shipped"  # a second oncall confirmed: approved and recorded through the freeze
    RELEASED = "released"
    RESCHEDULED = "rescheduled"
    READER = "reader"  # someone said who answers for a consumer group nobody declared (or that it is retired)


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


@dataclass(frozen=True)
class Checked:
    """A proposal that passed every check, with its classification (so it is classified once)."""

    subject: Subject
    schema_text: str
    analysis: Analysis
    window_hours: float | None
    references: tuple[Reference, ...] = ()  # as named (or kept from the current version), in order
    referenced: tuple[dict[str, Any], ...] = ()  # the schemas behind them, dependencies first
    dependents: tuple[tuple[Dependent, Analysis], ...] = ()  # subjects that use this one's types, with the new version in
    buf: dict[str, Any] | None = None  # a Protobuf subject's Buf verdict, when the catalog names its rules

    @property
    def verdict(self) -> Verdict:
        """The classification."""
        assert self.analysis.verdict is not None
        return self.analysis.verdict

    @property
    def level(self) -> Level:
        """The change's level: its own, or worse where a subject that uses its types feels it worse."""
        return max([self.verdict.level, *(a.verdict.level for _, a in self.dependents if a.verdict is not None)])


async def approved_form(proposal: Proposal) -> Analysis:
    """The stored form and fingerprint of a proposal's schema, with the referenced schemas it was classified with."""
    return await off_loop(analyse, [], proposal.schema_text, proposal.mode, [entry["schema"] for entry in proposal.referenced],
                          proposal.schema_type, names_of(proposal.referenced))


def names_of(referenced: Sequence[dict[str, Any]]) -> list[str]:
    """The names (Protobuf import paths, JSON Schema URIs) the resolved referenced schemas are known by."""
    return [str(entry.get("name", "")) for entry in referenced]


def substituted(referenced: Sequence[dict[str, Any]], shared: str, text: str, own: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """A dependent's referenced schemas with the shared subject's proposed ``text`` (and its own references ``own``) in
    place of the version it pins, under the names the dependent knows them by; dependencies first."""
    replaced = {entry["subject"] for entry in own}
    found: list[dict[str, Any]] = []
    for entry in referenced:
        if entry["subject"] == shared:
            found += [*own, {**entry, "schema": text}]
        elif entry["subject"] not in replaced:
            found.append(entry)
    return found


class Membership(Protocol):
    """Who belongs to a team (Slack user groups, with the catalog's members as a fallback)."""

    async def members(self, team: Team) -> set[str]:
        """The team's members."""


def registry_key(proposal_id: int) -> str:
    """The outbox lane of a proposal's registration: nothing Slack is owed waits behind it."""
    return f"registry:{proposal_id}"


def thread_key(proposal_id: int) -> str:
    """The outbox key of a proposal's notices, in order; each expands into rows in lanes of their own (the card, its
    thread, each DM), so a message that cannot be delivered holds up no other."""
    return f"proposal:{proposal_id}"


TYPE_WORDS = {"AVRO": "Avro", "PROTOBUF": "Protobuf", "JSON": "JSON Schema"}


def subject_type(subject: Subject, asked: str | None) -> str:
    """The subject's schema type; a proposal that names another is refused (the catalog's ``schema_type`` says it)."""
    if asked is None or not asked.strip():
        return subject.format
    try:
        kind = SchemaType.parse(asked).value
    except ValueError as err:
        raise ProposalError(str(err), "schema_type") from None
    if kind != subject.format:
        raise ProposalError(f"{subject.name} holds {TYPE_WORDS[subject.format]} schemas, not {TYPE_WORDS[kind]} "
                            f"(its schema_type in the catalog); nothing was stored", "schema_type")
    return kind


def state_words(state: State | str) -> str:
    """``changes requested``."""
    return str(state).replace("_", " ")


class Readers(Protocol):
    """Who Kafka says reads a topic (the reader census)."""

    async def census(self, topic: str) -> Census:
        """The topic's readers as the last census saw them."""


def topic_of(subject: Subject) -> str:
    """The subject's topic: the catalog's word, else the TopicNameStrategy name."""
    return subject.topic or subject.name.removesuffix("-value").removesuffix("-key")


class Proposals:
    """The approval workflow."""

    def __init__(self, db: Database, registry: Registry, lineage: LineageService, membership: Membership, outbox: Outbox,
                 calendar: CalendarService, clock: Callable[[], datetime] = utcnow, schema_registry: SchemaRegistry | None = None,
                 readers: Readers | None = None) -> None:
        self.db, self.registry, self.lineage, self.calendar = db, registry, lineage, calendar
        self.membership, self.outbox, self.clock = membership, outbox, clock
        self.schema_registry, self.readers = schema_registry, readers
        self.references = References(db, registry, schema_registry)

    # --- proposing ------------------------------------------------------------------------------

    async def precheck(self, subject_name: str, schema_text: str, window_hours: float | None = None) -> Subject:
        """The cheap checks (subject, size, planned duration); ProposalError names the field."""
        subject = await self.registry.subject(subject_name)
        if subject is None:
            raise ProposalError(f"unknown subject {subject_name!r}: it must be in the catalog (bot catalog load)", "subject")
        if len(schema_text.encode()) > MAX_SCHEMA_BYTES:
            raise ProposalError(f"the schema is larger than {MAX_SCHEMA_BYTES // 1000} kB", "schema")
        if window_hours is not None and not 0 < window_hours <= 24 * 30:
            raise ProposalError("the planned duration must be between 0 and 720 hours", "duration")
        return subject

    async def check(self, subject_name: str, schema_text: str, window_hours: float | None = None,
                    references: Sequence[Reference] | None = None, schema_type: str | None = None) -> Checked:
        """Everything that can be wrong with a proposal before it exists (ProposalError names the field).

        ``references``: the schema references it names; None keeps those of the subject's current version (a reference
        pins a version) when the schema uses their types. Subjects whose current version uses this subject's types are
        classified too, each with the new version in and in its own mode. Parsing and classifying run in a worker
        process: a 1 MB schema never stalls other requests. ``schema_type`` (the registry's ``AVRO``, ``PROTOBUF`` or
        ``JSON``) must be the subject's own, as the catalog declares it."""
        subject = await self.precheck(subject_name, schema_text, window_hours)
        kind = subject_type(subject, schema_type)
        pins = list(references) if references is not None else await self.references.pins(subject_name)
        referenced = await self._resolve(pins)
        history = [v.schema_text for v in await self.registry.history(subject_name)]
        analysis = await off_loop(analyse, history, schema_text, subject.compatibility, [e["schema"] for e in referenced], kind, names_of(referenced))
        if analysis.error is not None and references is None and pins:  # the kept references may be what it dropped
            alone = await off_loop(analyse, history, schema_text, subject.compatibility, (), kind)
            if alone.error is None:
                analysis, pins, referenced = alone, [], []
        elif analysis.error is None and references is None and analysis.unused:  # kept only where it still uses their types
            unused = {(referenced[i]["subject"], referenced[i]["version"]) for i in analysis.unused}
            pins = [p for p in pins if (p.subject, p.version) not in unused]
            referenced = await self._resolve(pins)
        if analysis.error is not None:
            raise ProposalError(f"not a valid {TYPE_WORDS[kind]} schema: {analysis.error}", "schema")
        checked = Checked(subject, schema_text, analysis, window_hours, tuple(pins), tuple(referenced))
        if checked.verdict.identical:
            raise ProposalError(f"no change: this schema is identical to the current version of {subject_name}", "schema")
        if kind == "PROTOBUF" and subject.buf and history:  # Buf's side, beside the registry's: the categories the catalog names
            current = imports_of(await self._resolve(await self.references.pins(subject_name)))
            checked = replace(checked, buf=await off_loop(subject_breaking, history[-1], schema_text, current, imports_of(referenced), list(subject.buf)))
        dependents = []
        for dependent in await self.references.dependents(subject_name):
            theirs = substituted(dependent.proposal.referenced, subject_name, schema_text, referenced)
            their_history = [v.schema_text for v in await self.registry.history(dependent.subject.name)]
            dependents.append((dependent, await off_loop(analyse, their_history, dependent.proposal.schema_text, dependent.subject.compatibility,
                                                         [e["schema"] for e in theirs], dependent.proposal.schema_type, names_of(theirs))))
        return replace(checked, dependents=tuple(dependents))

    async def _resolve(self, pins: Sequence[Reference]) -> list[dict[str, Any]]:
        try:
            return await self.references.resolve(pins)
        except UnresolvedReference as err:
            away = " (the Schema Registry could not be reached: try again shortly)" if err.retryable else ""
            raise ProposalError(f"{err}{away}; nothing was stored", "references") from None

    async def propose(self, subject_name: str, schema_text: str, proposer: str, *, notes: str = "",
                      window_start: datetime | None = None, window_hours: float | None = None,
                      surface: str = "slack", revision_of: int | None = None, checked: Checked | None = None,
                      api_token: str | None = None, references: Sequence[Reference] | None = None, schema_type: str | None = None,
                      impact: dict[str, Any] | None = None) -> ProposalView:
        """Classify (unless ``checked`` already did), find the impact, store, and announce; ProposalError for bad
        input (nothing stored). ``api_token`` names the HTTP API token that proposed on the proposer's behalf. ``impact``:
        who the change reaches when something surer than the field closure says it (a transition's readers)."""
        checked = checked or await self.check(subject_name, schema_text, window_hours, references, schema_type)
        subject, verdict, level = checked.subject, checked.verdict, checked.level
        teams = await self.lineage.teams()
        given = impact is not None
        impact, nobody_knows = (dict(impact), False) if impact is not None else await self._impact(subject_name, verdict, checked.analysis.label, teams)
        to_ask = list(impact.get("owners", []))
        if checked.dependents:
            if nobody_knows:  # a shared type: read through the subjects that use it, whose readers are known
                impact["note"], nobody_knows = "nothing reads it directly: it is read through the subjects that use its types (below)", False
            impact["own_level"], impact["dependents"] = str(verdict.level), []
            for dependent, theirs in checked.dependents:
                part = await self._dependent(dependent, theirs, subject_name, teams)
                impact["dependents"].append(part)
                to_ask += [t for t in [*part["owners"], *([part["owner"]] if part["owner"] and part["level"] != "safe" else [])]
                           if t not in to_ask]
        if self.readers is not None and not given:
            census = await self.readers.census(topic_of(subject))
            impact["consumer_groups"] = census.as_json()
            for reader in census.reading:  # a team that answers for a group nobody declared reads the whole topic: asked
                if reader.declared is not None and reader.declared.source == "attributed" and reader.declared.team not in to_ask:
                    to_ask.append(str(reader.declared.team))
        policy = Policy.from_json(subject.policy)
        if level in policy.acknowledge and (nobody_knows or impact.get("unowned")):
            # unknown is not safe: someone accountable answers for the readers nobody can be asked for
            impact["fallback"] = [team.name for team in policy.fallback_teams(subject.owner_team, teams)]
            to_ask.append(UNOWNED)
        now = self.clock()
        waits = policy.needs_acknowledgement(level, to_ask)
        assert subject.id is not None
        proposal = Proposal(
            subject_id=subject.id, proposer=proposer, schema_text=schema_text, level=str(level),
            references=ref_json(checked.references), referenced=list(checked.referenced),
            state=State.PENDING if waits else State.APPROVED, notes=notes, schema_type=subject.format, buf=checked.buf,
            findings=[f.as_json() for f in verdict.findings], impact=impact, mode=verdict.mode.value,
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
            assert proposal.id is not None
            audit(session, proposer, surface, "proposed", "proposal", str(proposal.id),
                  {"subject": subject_name, "level": str(level), "teams": to_ask, "revision_of": revision_of, "api_token": api_token,
                   "references": ref_json(checked.references)})
            if proposal.window_start is not None and proposal.window_end is not None:
                self.calendar.book(session, kind=Kind.SCHEMA_CHANGE, title=f"Schema change #{proposal.id} on {subject_name} ({level})",
                                   window=Window(proposal.window_start, proposal.window_end), owner=subject.owner_team or "",
                                   booked_by=proposer, scope=Scope(subjects=frozenset({subject_name})),
                                   status=Status.TENTATIVE if waits else Status.CONFIRMED, proposal=proposal.id)
            if not waits:
                proposal.version = await self._record(session, proposal, subject_name, checked.analysis, "approved at once: " + (
                    "a safe change" if level not in policy.acknowledge else "no downstream team reads the changed fields"))
                session.add(proposal)
            self._notice(session, proposal.id, Event.CREATED, proposer, to_ask, version=proposal.version)
            await session.commit()
        self.outbox.wake()
        return await self.view(proposal.id)

    async def impact_of(self, subject_name: str, analysis: Analysis) -> dict[str, Any]:
        """Who a classified schema of the subject reaches, as a proposal's impact (without proposing it)."""
        assert analysis.verdict is not None
        impact, _ = await self._impact(subject_name, analysis.verdict, analysis.label, await self.lineage.teams())
        return impact

    async def _dependent(self, dependent: Dependent, analysis: Analysis, shared: str, teams: dict[str, Team]) -> dict[str, Any]:
        """A subject that uses the shared type, with the new version in: its verdict in its own mode and its impact."""
        name = dependent.subject.name
        pinned = next((e["version"] for e in dependent.proposal.referenced if e["subject"] == shared), None)
        part: dict[str, Any] = {"subject": name, "owner": dependent.subject.owner_team, "pinned": pinned, "mode": dependent.subject.compatibility}
        if analysis.verdict is None:  # the subject's own schema no longer parses with the new version in (a type it uses is gone)
            return {**part, "level": "breaking", "error": analysis.error, "changes": 0, "findings": [], "owners": []}
        impact, _ = await self._impact(name, analysis.verdict, analysis.label, teams)
        findings = [f.as_json() for f in analysis.verdict.findings]
        return {**part, "level": str(analysis.verdict.level), "backward": analysis.verdict.backward, "forward": analysis.verdict.forward,
                "changes": len(findings), "findings": findings[:5], "owners": list(impact.get("owners", [])), "note": impact.get("note")}

    async def _impact(self, subject: str, verdict: Verdict, label: str, teams: dict[str, Team]) -> tuple[dict[str, Any], bool]:
        """Who is affected: every consumer of the topic when reads fail (Avro fails the whole record), else the
        field-level closure of the drifting fields; ``owners`` are the known teams to ask, ``unowned`` the
        readers nobody owns. True when no lineage is known for the subject at all."""
        graph = await self.lineage.graph()
        unknown = {"note": "no lineage is known for this subject: nobody can say who reads this topic", "owners": []}
        try:
            dataset = graph.find_dataset(subject)
        except LineageError:
            return unknown, True
        if not any(dataset in job.inputs for job in graph.jobs.values()):
            return unknown, True  # no job is known to read the topic: not the same as knowing that none does
        if any(f.breaks for f in verdict.findings):
            impact = graph.impact(dataset, None)
            return {**impact.as_json(teams, limit=IMPACT_KEPT), "note": "reads fail in at least one direction: every consumer of the topic is affected"}, False
        paths = sorted({lineage_path(f.path, label) for f in verdict.findings})
        if "" in paths:
            return graph.impact(dataset, None).as_json(teams, limit=IMPACT_KEPT), False
        fields = graph.known(dataset, paths)
        if not fields:
            return {"note": "no job reads the changed fields", "owners": []}, False
        return graph.impact(dataset, fields).as_json(teams, limit=IMPACT_KEPT), False

    # --- deciding -------------------------------------------------------------------------------

    async def decide(self, proposal_id: int, user: str, decision: Decision, reason: str = "", *,
                     team: str | None = None, surface: str = "slack") -> tuple[ProposalView, list[str]]:
        """Record ``user``'s decision for every waiting team they belong to (or for ``team``); returns the teams.

        Each team's decision is its own savepoint, so what is returned is exactly what is stored; the
        proposal row is claimed first (a conditional update on ``pending``), so a withdrawal or expiry that
        wins the race leaves nothing of this decision behind, and the user is told."""
        view = await self.view(proposal_id)
        noun = {Decision.APPROVE: "approval", Decision.REJECT: "rejection", Decision.REQUEST_CHANGES: "request for changes"}[decision]
        if view.state.final:
            raise ProposalError(f"proposal #{proposal_id} is already {state_words(view.state)}; nothing changed")
        if decision is not Decision.APPROVE and not reason.strip():
            raise ProposalError("a reason is required to reject or to request changes")
        candidates = [team] if team else list(view.proposal.teams)
        memberships = [t for t in candidates if t in view.proposal.teams and user in await self.approvers(view, t)]
        if not memberships:
            asked = ", ".join(view.proposal.teams) or "no team"
            raise ProposalError(f"only members of the teams asked ({asked}) can decide on #{proposal_id}; nothing changed")
        mine = [t for t in memberships if view.decision_of(t) is None]
        if not mine:
            earlier = view.decision_of(memberships[0])
            assert earlier is not None
            raise ProposalError(f"{memberships[0]} has already decided on #{proposal_id} "
                                f"({state_words(earlier.decision)} by <@{earlier.user}>); nothing changed")
        own = [t for t in mine if decision is Decision.APPROVE and user == view.proposal.proposer and not self_approves(view, t)]
        if own:
            mine = [t for t in mine if t not in own]
            if not mine:
                raise ProposalError(await self._four_eyes(view, own, user))
        analysis = await approved_form(view.proposal) if decision is Decision.APPROVE else None
        hold = await self._hold(view) if decision is Decision.APPROVE else None
        recorded: list[str] = []
        async with self.db.session() as session:
            await self._claim_pending(session, proposal_id, f"before your {noun} was recorded")
            for name in mine:
                try:
                    async with session.begin_nested():
                        session.add(Acknowledgement(proposal_id=proposal_id, team=name, user=user, decision=decision.value,
                                                    reason=reason.strip(), created_at=self.clock()))
                except IntegrityError:
                    continue  # the team decided meanwhile (another member, a retry): only this team's savepoint is undone
                recorded.append(name)
                action = "acknowledged for unowned readers" if name == UNOWNED and decision is Decision.APPROVE else decision.value
                if decision is Decision.APPROVE and user == view.proposal.proposer:
                    action = "self-approved"
                audit(session, user, surface, action, "proposal", str(proposal_id), {"team": name, "reason": reason.strip()})
            if not recorded:
                await session.rollback()
                raise ProposalError(f"your team has already decided on #{proposal_id}; nothing changed")
            acks = (await session.exec(select(Acknowledgement).where(Acknowledgement.proposal_id == proposal_id))).all()
            state = outcome(view.proposal.teams, {a.team: Decision(a.decision) for a in acks})
            version = None
            held_now = state is State.APPROVED and hold is not None
            if held_now:
                await session.exec(update(Proposal).where(col(Proposal.id) == proposal_id, col(Proposal.state) == State.PENDING.value)
                                   .values(held=hold))
                audit(session, "changeops", "workflow", "held by a freeze", "proposal", str(proposal_id), {"why": hold})
                state = State.PENDING
            elif state is State.APPROVED:
                assert analysis is not None
                version = await self._record(session, view.proposal, view.subject.name, analysis, "every team approved")
            elif state.final:
                await self._transition(session, proposal_id, state)
            self._notice(session, proposal_id, Event.DECIDED, user, recorded, reason.strip(), version=version)
            if held_now:
                self._notice(session, proposal_id, Event.HELD, detail=hold or "")
            await session.commit()
        self.outbox.wake()
        if state.final:
            log.info("proposal #%d %s", proposal_id, state.value)
        return await self.view(proposal_id), recorded

    async def _hold(self, view: ProposalView) -> str | None:
        """Why an approved breaking change cannot be confirmed now (its planned window is inside a freeze), with the
        next free window; None when nothing holds it."""
        p = view.proposal
        if p.level != "breaking" or p.window_start is None or p.window_end is None:
            return None
        window, owner, scope = Window(aware(p.window_start), aware(p.window_end)), view.subject.owner_team or "", Scope(subjects=frozenset({view.subject.name}))
        frozen = await self.calendar.freeze_over(window, owner, scope)
        if frozen is None:
            return None
        freeze, occurrence = frozen
        free = await self.calendar.next_free(window, owner, scope, self.clock())
        return (f"its planned window is inside the freeze {freeze.name} ({occurrence.start:%Y-%m-%d %H:%M}–{occurrence.end:%Y-%m-%d %H:%M} UTC)"
                + (f" — {freeze.reason}" if freeze.reason else "") + "; a breaking change cannot be confirmed inside a freeze. "
                + (f"Next free window: {free.start:%Y-%m-%d %H:%M}–{free.end:%Y-%m-%d %H:%M} UTC." if free else "No free window within a year."))

    async def release_held(self) -> int:
        """Approve every held proposal whose window no freeze covers any more (a freeze lifted, a window moved); each once."""
        async with self.db.session() as session:
            held = (await session.exec(select(Proposal.id).where(col(Proposal.state) == State.PENDING.value,
                                                                 col(Proposal.held).is_not(None)))).all()
        released = 0
        for proposal_id in held:
            assert proposal_id is not None
            view = await self.view(proposal_id)
            hold = await self._hold(view)
            if hold is not None:
                continue
            analysis = await approved_form(view.proposal)
            async with self.db.session() as session:
                try:
                    await self._claim_pending(session, proposal_id, "before the freeze lifted")
                except ProposalError:
                    continue
                version = await self._record(session, view.proposal, view.subject.name, analysis, "every team approved; no freeze covers the window now")
                await session.exec(update(Proposal).where(col(Proposal.id) == proposal_id).values(held=None))
                self._notice(session, proposal_id, Event.RELEASED, version=version)
                await session.commit()
            released += 1
        if released:
            self.outbox.wake()
        return released

    async def request_emergency(self, proposal_id: int, user: str, reason: str, surface: str = "slack") -> ProposalView:
        """An oncall (the owner team's, or the global one) asks to ship a change held by a freeze now, saying why; a second
        oncall must confirm it. Audited, and shown on the card and in its thread."""
        view = await self.view(proposal_id)
        if view.state is not State.PENDING or not view.proposal.held:
            raise ProposalError(f"#{proposal_id} is not held by a freeze: there is nothing to ship through one; nothing changed")
        if not reason.strip():
            raise ProposalError("an emergency change needs a reason: what breaks if it waits for the freeze to end", "reason")
        if not await self.is_oncall(view, user):
            raise ProposalError(f"only the oncall of {view.subject.owner_team or 'the owner team'} (or the global oncall) can ship a change "
                                "during a freeze; nothing changed")
        if view.proposal.emergency:
            raise ProposalError(f"<@{view.proposal.emergency['requested_by']}> already asked to ship #{proposal_id} during the freeze; "
                                "a second oncall confirms it on the card")
        asked = {"requested_by": user, "reason": reason.strip()[:1000], "requested_at": self.clock().isoformat()}
        async with self.db.session() as session:
            moved = await session.exec(update(Proposal).where(col(Proposal.id) == proposal_id, col(Proposal.state) == State.PENDING.value,
                                                              col(Proposal.held).is_not(None), col(Proposal.emergency).is_(None))
                                       .values(emergency=asked))
            if not getattr(moved, "rowcount", 0):
                await session.rollback()
                raise ProposalError(f"#{proposal_id} changed meanwhile (released, withdrawn, or someone asked first); nothing changed")
            audit(session, user, surface, "emergency requested", "proposal", str(proposal_id), {"reason": asked["reason"]})
            self._notice(session, proposal_id, Event.EMERGENCY_REQUESTED, user, detail=asked["reason"])
            await session.commit()
        self.outbox.wake()
        return await self.view(proposal_id)

    async def confirm_emergency(self, proposal_id: int, user: str, surface: str = "slack") -> ProposalView:
        """A second oncall confirms the emergency: the held change is approved and recorded now, an ``emergency`` entry is
        booked in the calendar until the freeze ends (the deploy gate lets it through meanwhile), all audited."""
        view = await self.view(proposal_id)
        asked = view.proposal.emergency
        if view.state is not State.PENDING or not view.proposal.held or not asked:
            raise ProposalError(f"#{proposal_id} has no emergency waiting for a second oncall; nothing changed")
        if user == asked["requested_by"]:
            raise ProposalError("four eyes: a second person from oncall must confirm the emergency you asked for; nothing changed")
        if not await self.is_oncall(view, user):
            raise ProposalError(f"only the oncall of {view.subject.owner_team or 'the owner team'} (or the global oncall) can confirm an "
                                "emergency change; nothing changed")
        p, now = view.proposal, self.clock()
        window = Window(aware(p.window_start), aware(p.window_end)) if p.window_start and p.window_end else Window(now, now + EMERGENCY_WINDOW)
        scope = Scope(subjects=frozenset({view.subject.name}))
        frozen = await self.calendar.freeze_over(Window(min(now, window.start), max(window.end, now + EMERGENCY_WINDOW)), view.subject.owner_team or "",
                                                 scope)
        until = max(now + EMERGENCY_WINDOW, window.end, frozen[1].end if frozen else now)
        shipped = {**asked, "confirmed_by": user, "confirmed_at": now.isoformat(), "freeze": frozen[0].name if frozen else None,
                   "until": until.isoformat()}
        analysis = await approved_form(p)
        async with self.db.session() as session:
            await self._claim_pending(session, proposal_id, "before the emergency was confirmed")
            version = await self._record(session, p, view.subject.name, analysis, "shipped during a freeze as an emergency")
            await session.exec(update(Proposal).where(col(Proposal.id) == proposal_id).values(held=None, emergency=shipped))
            self.calendar.book(session, kind=Kind.EMERGENCY, title=f"Emergency: schema change #{proposal_id} on {view.subject.name}",
                               window=Window(now, until), owner=view.subject.owner_team or "", booked_by=user, scope=scope,
                               status=Status.CONFIRMED, proposal=proposal_id)
            audit(session, user, surface, "emergency change confirmed", "proposal", str(proposal_id),
                  {"requested_by": asked["requested_by"], "reason": asked["reason"], "freeze": shipped["freeze"], "version": version})
            self._notice(session, proposal_id, Event.EMERGENCY_SHIPPED, user, detail=shipped["freeze"] or "", version=version)
            await session.commit()
        self.outbox.wake()
        log.info("proposal #%d shipped during the freeze %s as an emergency", proposal_id, shipped["freeze"])
        return await self.view(proposal_id)

    async def reschedule(self, proposal_id: int, user: str, surface: str = "slack") -> ProposalView:
        """The proposer moves a held proposal to the next free window; it is approved there at once."""
        view = await self.view(proposal_id)
        if view.proposal.proposer != user:
            raise ProposalError(f"only <@{view.proposal.proposer}>, who proposed #{proposal_id}, can move its window; nothing changed")
        p = view.proposal
        if view.state is not State.PENDING or not p.held or p.window_start is None or p.window_end is None:
            raise ProposalError(f"#{proposal_id} is not held by a freeze; nothing changed")
        window = Window(aware(p.window_start), aware(p.window_end))
        free = await self.calendar.next_free(window, view.subject.owner_team or "", Scope(subjects=frozenset({view.subject.name})), self.clock())
        if free is None:
            raise ProposalError(f"no free window within a year for #{proposal_id}; nothing changed")
        async with self.db.session() as session:
            moved = await session.exec(update(Proposal).where(col(Proposal.id) == proposal_id, col(Proposal.state) == State.PENDING.value,
                                                              col(Proposal.window_start) == p.window_start)
                                       .values(window_start=free.start, window_end=free.end))
            if not getattr(moved, "rowcount", 0):
                raise ProposalError(f"#{proposal_id} changed meanwhile; nothing changed")
            await self.calendar.move_proposal(session, proposal_id, free)
            audit(session, user, surface, "moved the window", "proposal", str(proposal_id), {"start": free.start.isoformat(), "end": free.end.isoformat()})
            self._notice(session, proposal_id, Event.RESCHEDULED, user, detail=f"{free.start:%Y-%m-%d %H:%M}–{free.end:%Y-%m-%d %H:%M} UTC")
            await session.commit()
        self.outbox.wake()
        await self.release_held()
        return await self.view(proposal_id)

    async def withdraw(self, proposal_id: int, user: str, surface: str = "slack", *, on_behalf_of: str | None = None) -> ProposalView:
        """The proposer takes the proposal back (``on_behalf_of``: the person a workflow withdraws it for, such as the owner
        rolling back a transition, whose right the caller checked)."""
        view = await self.view(proposal_id)
        if view.proposal.proposer != user:
            raise ProposalError(f"only <@{view.proposal.proposer}>, who proposed #{proposal_id}, can withdraw it; nothing changed")
        actor = on_behalf_of or user
        async with self.db.session() as session:
            await self._transition(session, proposal_id, State.WITHDRAWN, actor=actor, surface=surface)
            self._notice(session, proposal_id, Event.WITHDRAWN, actor)
            await session.commit()
        self.outbox.wake()
        return await self.view(proposal_id)

    async def extend(self, proposal_id: int, user: str, reason: str, surface: str = "slack") -> ProposalView:
        """The proposer moves the deadline by one more window, once, with a reason."""
        view = await self.view(proposal_id)
        if view.proposal.proposer != user:
            raise ProposalError(f"only the proposer can extend #{proposal_id}; nothing changed")
        if not reason.strip():
            raise ProposalError("give a reason to extend the deadline")
        policy = Policy.from_json(view.subject.policy)
        if view.proposal.deadline is None:
            raise ProposalError(f"#{proposal_id} cannot be extended (it waits for no acknowledgement)")
        later = aware(view.proposal.deadline) + policy.window  # in Python: SQLite cannot add an interval to a stored time
        reminded = min(view.proposal.reminders_sent, policy.reminders_past(aware(view.proposal.created_at), later, self.clock()))
        async with self.db.session() as session:
            moved = await session.exec(update(Proposal).where(col(Proposal.id) == proposal_id, col(Proposal.state) == State.PENDING.value,
                                                              col(Proposal.extended).is_(False),
                                                              col(Proposal.reminders_sent) == view.proposal.reminders_sent)
                                       .values(extended=True, deadline=later, reminders_sent=reminded))
            if not getattr(moved, "rowcount", 0):
                now = await self.view(proposal_id)
                if now.state is State.PENDING and not now.proposal.extended:  # a reminder went out meanwhile: nothing changed
                    raise ProposalError(f"a reminder of #{proposal_id} went out as you asked; nothing changed: extend it again")
                raise ProposalError(f"#{proposal_id} cannot be extended (it is not pending, or was extended once already)")
            audit(session, user, surface, "extended", "proposal", str(proposal_id), {"reason": reason.strip()})
            self._notice(session, proposal_id, Event.EXTENDED, user, detail=reason.strip())
            await session.commit()
        self.outbox.wake()
        return await self.view(proposal_id)

    async def reader_said(self, proposal_id: int, group: str, team: str | None, user: str, surface: str = "slack") -> ProposalView:
        """A consumer group on the card was attributed to ``team`` (asked from now on, if the proposal still waits) or retired
        (``team`` None): the card shows it, the thread says it, the team is told."""
        async with self.db.session() as session:
            proposal = await session.get(Proposal, proposal_id)
            if proposal is None:
                raise ProposalError(f"there is no proposal #{proposal_id}")
            impact = dict(proposal.impact)
            census = dict(impact.get("consumer_groups") or {})
            listed = "readers" if "readers" in census else "groups"  # "groups": stored before the census said how fresh it is
            groups = [dict(g) for g in census.get(listed, [])]
            for entry in groups:
                if entry["group"] == group:
                    entry.update({"team": team, "declared_in": "attributed"} if team else {"state": "retired", "live": True})
            census[listed] = groups
            impact["consumer_groups"] = census
            teams = list(proposal.teams)
            asked = team is not None and proposal.state == State.PENDING.value and team not in teams
            moved = await session.exec(update(Proposal).where(col(Proposal.id) == proposal_id, col(Proposal.state) == proposal.state)
                                       .values(impact=impact, teams=teams + [team] if asked and team else teams))
            if not getattr(moved, "rowcount", 0):
                raise ProposalError(f"#{proposal_id} changed meanwhile; nothing changed")
            detail = (f"attributed consumer group `{group}` to {team}" + (": the team is now asked" if asked else "")) if team \
                else f"marked consumer group `{group}` as retired"
            audit(session, user, surface, "reader attributed" if team else "reader retired", "proposal", str(proposal_id),
                  {"group": group, "team": team})
            self._notice(session, proposal_id, Event.READER, user, [team] if asked and team else [], detail=detail)
            await session.commit()
        self.outbox.wake()
        return await self.view(proposal_id)

    async def _check_revisable(self, session: AsyncSession, proposal_id: int, user: str) -> None:
        original = await session.get(Proposal, proposal_id)
        if original is None:
            raise ProposalError(f"there is no proposal #{proposal_id} to revise")
        if original.proposer != user:
            raise ProposalError(f"only the proposer of #{proposal_id} can revise it")

    async def _claim_pending(self, session: AsyncSession, proposal_id: int, when: str) -> None:
        """Take the proposal's row for this transaction, if it is still pending; else say what won the race."""
        held = await session.exec(update(Proposal).where(col(Proposal.id) == proposal_id, col(Proposal.state) == State.PENDING.value)
                                  .values(state=State.PENDING.value))
        if not getattr(held, "rowcount", 0):
            current = await session.get(Proposal, proposal_id)
            state = state_words(current.state) if current else "deleted"
            await session.rollback()
            raise ProposalError(f"#{proposal_id} was {state} {when}; nothing changed")

    async def _record(self, session: AsyncSession, proposal: Proposal, subject: str, analysis: Analysis, why: str) -> int:
        """Approve (pending -> approved, conditionally) and store the schema as the subject's next version, in
        the caller's transaction; registration in the Schema Registry is owed through the outbox."""
        assert proposal.id is not None
        number = await self.registry.append(session, subject, analysis.canonical, analysis.fingerprint, proposal.id)
        if proposal.state == State.PENDING.value:
            moved = await session.exec(update(Proposal).where(col(Proposal.id) == proposal.id, col(Proposal.state) == State.PENDING.value)
                                       .values(state=State.APPROVED.value, version=number, decided_at=self.clock()))
            if not getattr(moved, "rowcount", 0):
                raise ProposalError(f"#{proposal.id} stopped waiting before the approval was recorded; nothing changed")
            await self.calendar.follow_proposal(session, proposal.id, Status.CONFIRMED)
        audit(session, "changeops", "workflow", "approved", "proposal", str(proposal.id), {"version": number, "why": why})
        if self.schema_registry is not None:
            await session.exec(update(Proposal).where(col(Proposal.id) == proposal.id)
                               .values(registry_state=RegistryState.REGISTERING.value, registry_since=self.clock()))
            self.outbox.add(session, REGISTER, registry_key(proposal.id), {"proposal": proposal.id, "subject": subject, "version": number})
        return number

    async def _transition(self, session: AsyncSession, proposal_id: int, state: State, *, actor: str = "changeops",
                          surface: str = "workflow") -> None:
        """PENDING -> ``state`` in the caller's transaction; ProposalError (rolled back) when it no longer waits."""
        moved = await session.exec(update(Proposal).where(col(Proposal.id) == proposal_id, col(Proposal.state) == State.PENDING.value)
                                   .values(state=state.value, decided_at=self.clock()))
        if not getattr(moved, "rowcount", 0):
            current = await session.get(Proposal, proposal_id)
            words = state_words(current.state) if current else "gone"
            await session.rollback()
            raise ProposalError(f"proposal #{proposal_id} is already {words}; nothing changed")
        await self.calendar.follow_proposal(session, proposal_id, Status.CANCELLED)
        audit(session, actor, surface, state.value, "proposal", str(proposal_id), {})

    def _notice(self, session: AsyncSession, proposal_id: int, event: Event, actor: str | None = None,
                teams: Sequence[str] = (), detail: str = "", version: int | None = None) -> None:
        self.outbox.add(session, NOTICE, thread_key(proposal_id), {"proposal": proposal_id, "event": event.value, "actor": actor,
                                                                   "teams": list(teams), "detail": detail, "version": version})

    # --- the Schema Registry --------------------------------------------------------------------

    async def register(self, item: Item) -> Expand | None:
        """Outbox handler: register an approved version in the Schema Registry, in a lane of its own (nothing else the
        proposal owes waits behind it). The card follows its state: registering, retrying (since the first failure, with
        the reason), registered (version and id), or failed; after ``REGISTRY_ATTEMPTS`` failed attempts it stops, and the
        subject's oncall is asked once, with a Retry button."""
        if self.schema_registry is None:
            raise GiveUp("no Schema Registry is configured (SCHEMA_REGISTRY_URL)")
        proposal_id = int(item.payload["proposal"])
        view = await self.view(proposal_id)
        p = view.proposal
        if p.registry_id is not None or p.registry_state in (RegistryState.REGISTERED, RegistryState.FAILED):
            return None  # (no state at all: owed before registrations had one; registered now like any other)
        registry_id, registry_version, error, again = None, None, None, False
        try:
            lifted = Mode.parse(p.mode).fails(p.backward, p.forward)  # every affected team acknowledged the break
            registry_id, registry_version = await self.schema_registry.register(view.subject.name, p.schema_text, p.mode, lifted=lifted,
                                                                                references=read_references(p.references), schema_type=p.schema_type)
        except RegistrationError as err:
            error, again = str(err), err.retryable and p.registry_attempts + 1 < REGISTRY_ATTEMPTS
            if not again:
                log.error("proposal #%d approved but not registered: %s", proposal_id, err)
        now = self.clock()
        state = RegistryState.RETRYING if again else RegistryState.REGISTERED if error is None else RegistryState.FAILED
        async with self.db.session() as session:
            expected = col(Proposal.registry_state).is_(None) if p.registry_state is None else col(Proposal.registry_state) == p.registry_state
            moved = await session.exec(update(Proposal).where(col(Proposal.id) == proposal_id, expected,
                                                              col(Proposal.registry_attempts) == p.registry_attempts)
                                       .values(registry_state=state.value, registry_attempts=p.registry_attempts + 1, registry_error=error,
                                               registry_id=registry_id, registry_version=registry_version,
                                               registry_since=p.registry_since if state.value == p.registry_state else now))
            if not getattr(moved, "rowcount", 0):  # another replica took it further meanwhile
                await session.rollback()
                return None
            if state is not RegistryState.RETRYING:
                if registry_id is not None:
                    await self.registry.note_registry_id(session, view.subject.name, int(item.payload["version"]), registry_id)
                audit(session, "changeops", "workflow", "registered" if error is None else "not registered", "proposal", str(proposal_id),
                      {"registry_id": registry_id, "registry_version": registry_version, "registry_error": error,
                       "attempts": p.registry_attempts + 1})
                self._notice(session, proposal_id, Event.REGISTERED if error is None else Event.NOT_REGISTERED, detail=error or "")
            elif p.registry_state != RegistryState.RETRYING:  # the card says so once; later attempts change nothing people see
                self._notice(session, proposal_id, Event.REGISTERING, detail=error or "")
            await session.commit()
        self.outbox.wake()
        if again:
            raise Retry(error or "")
        return None

    async def retry_registration(self, proposal_id: int, user: str, surface: str = "slack") -> ProposalView:
        """Start the registration of an approved version again (the subject's oncall, once the bot stopped trying)."""
        view = await self.view(proposal_id)
        if view.proposal.registry_id is not None:
            raise ProposalError(f"#{proposal_id} is already registered (schema id {view.proposal.registry_id}); nothing changed")
        if view.proposal.registry_state != RegistryState.FAILED or view.proposal.version is None:
            raise ProposalError(f"the registration of #{proposal_id} is not stopped (it is {view.proposal.registry_state or 'not owed'}); "
                                "nothing changed")
        if not await self.is_oncall(view, user):
            raise ProposalError(f"only the oncall of {view.subject.owner_team or 'the owner team'} (or the global oncall) can retry "
                                "the registration; nothing changed")
        async with self.db.session() as session:
            moved = await session.exec(update(Proposal).where(col(Proposal.id) == proposal_id, col(Proposal.registry_state) == RegistryState.FAILED.value)
                                       .values(registry_state=RegistryState.REGISTERING.value, registry_attempts=0, registry_error=None,
                                               registry_since=self.clock()))
            if not getattr(moved, "rowcount", 0):
                await session.rollback()
                raise ProposalError(f"the registration of #{proposal_id} was retried meanwhile; nothing changed")
            self.outbox.add(session, REGISTER, registry_key(proposal_id), {"proposal": proposal_id, "subject": view.subject.name,
                                                                           "version": view.proposal.version})
            audit(session, user, surface, "registration retried", "proposal", str(proposal_id), {})
            self._notice(session, proposal_id, Event.REGISTERING, user, detail="retried by hand")
            await session.commit()
        self.outbox.wake()
        return await self.view(proposal_id)

    async def oncall(self, view: ProposalView) -> tuple[set[str], set[str]]:
        """Who is oncall for the subject now: its owner team's oncall (their ``oncall_usergroup``, the ``oncall`` list as
        its fallback, as for operations), and the global oncall."""
        owner = view.teams.get(view.subject.owner_team or "")
        team = await self.membership.members(Team(f"{owner.name} oncall", owner.oncall_usergroup, list(owner.oncall))) if owner else set()
        everyone = await self.lineage.global_oncall()
        return team, await self.membership.members(everyone) if everyone is not None else set()

    async def is_oncall(self, view: ProposalView, user: str) -> bool:
        """Whether ``user`` is oncall for the subject's owner team, or the global oncall."""
        team, everyone = await self.oncall(view)
        return user in team or user in everyone

    # --- the clock ------------------------------------------------------------------------------

    async def sweep(self) -> int:
        """Send due reminders and expire what passed its deadline; each exactly once across replicas."""
        now = self.clock()
        events = 0
        async with self.db.session() as session:
            query = select(Proposal).where(col(Proposal.state) == State.PENDING.value, col(Proposal.deadline).is_not(None))
            if self.db.engine.dialect.name == "postgresql":
                query = query.with_for_update(skip_locked=True)
            for proposal in (await session.exec(query)).all():
                assert proposal.id is not None and proposal.deadline is not None
                deadline, created = aware(proposal.deadline), aware(proposal.created_at)
                decided = set((await session.exec(select(Acknowledgement.team).where(Acknowledgement.proposal_id == proposal.id))).all())
                waiting = [t for t in proposal.teams if t not in decided]
                if now >= deadline:
                    claimed = await session.exec(update(Proposal).where(col(Proposal.id) == proposal.id, col(Proposal.state) == State.PENDING.value)
                                                 .values(state=State.EXPIRED.value, decided_at=now))
                    if getattr(claimed, "rowcount", 0):
                        await self.calendar.follow_proposal(session, proposal.id, Status.CANCELLED)
                        audit(session, "changeops", "scheduler", "expired", "proposal", str(proposal.id), {"waiting": waiting})
                        self._notice(session, proposal.id, Event.EXPIRED, teams=waiting)
                        events += 1
                    continue
                subject = await session.get(Subject, proposal.subject_id)
                policy = Policy.from_json(subject.policy if subject else None)
                if policy.reminder_due(created, deadline, proposal.reminders_sent, now):
                    claimed = await session.exec(update(Proposal).where(col(Proposal.id) == proposal.id, col(Proposal.state) == State.PENDING.value,
                                                                        col(Proposal.reminders_sent) == proposal.reminders_sent)
                                                 .values(reminders_sent=proposal.reminders_sent + 1))
                    if getattr(claimed, "rowcount", 0):
                        audit(session, "changeops", "scheduler", "reminded", "proposal", str(proposal.id),
                              {"reminder": proposal.reminders_sent + 1})
                        self._notice(session, proposal.id, Event.REMINDER, teams=waiting)
                        events += 1
            await session.commit()
        if events:
            self.outbox.wake()
        return events

    # --- reading --------------------------------------------------------------------------------

    async def save_card(self, proposal_id: int, channel: str, ts: str, *, subject_channel: bool = False, replacing: str | None = None) -> bool:
        """Remember where a card of the proposal is (the changes channel's, or the subject channel's): the first time, or in
        place of ``replacing`` (deleted in Slack); False when another post got there first."""
        where, values = ((col(Proposal.subject_card_ts), {"subject_card_channel": channel, "subject_card_ts": ts}) if subject_channel
                         else (col(Proposal.card_ts), {"card_channel": channel, "card_ts": ts}))
        async with self.db.session() as session:
            moved = await session.exec(update(Proposal).where(col(Proposal.id) == proposal_id, same(where, replacing)).values(**values))
            await session.commit()
        return bool(getattr(moved, "rowcount", 0))

    async def save_copy(self, proposal_id: int, channel: str, ts: str, team: str, intro: str) -> None:
        """Remember a DM copy of the card, so it follows the card."""
        async with self.db.session() as session:
            session.add(CardCopy(proposal_id=proposal_id, channel=channel, ts=ts, team=team, intro=intro))
            await session.commit()

    async def copies(self, proposal_id: int) -> list[CardCopy]:
        """The DM copies of a proposal's card."""
        async with self.db.session() as session:
            return list((await session.exec(select(CardCopy).where(CardCopy.proposal_id == proposal_id).order_by(col(CardCopy.id)))).all())

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

    async def _four_eyes(self, view: ProposalView, teams: list[str], user: str) -> str:
        """Why the proposer's own approval does not count, and who else can approve."""
        others: set[str] = set()
        for team in teams:
            others |= await self.approvers(view, team)
        others.discard(user)
        who = (", ".join(f"<@{u}>" for u in sorted(others)[:10]) if others else
               "nobody else: a team of one may allow it with `self_approval: true` in the catalog")
        return (f"four eyes: your own approval of #{view.id} does not count for {team_names(teams)}; nothing changed. "
                f"Who else can approve: {who}")

    async def _waits_on(self, view: ProposalView, user: str) -> bool:
        for team in view.waiting():
            if (user != view.proposal.proposer or self_approves(view, team)) and user in await self.approvers(view, team):
                return True
        return False

    async def approvers(self, view: ProposalView, team: str) -> set[str]:
        """Who may decide for ``team`` on this proposal: its members, or for the readers nobody owns, the
        subject's fallback approvers (the owner's oncall and the governance team, unless the catalog names others)."""
        if team == UNOWNED:
            users: set[str] = set()
            for fallback in Policy.from_json(view.subject.policy).fallback_teams(view.subject.owner_team, view.teams):
                users |= await self.membership.members(fallback)
            return users
        return await self.membership.members(view.teams[team]) if team in view.teams else set()

    async def audit_trail(self, proposal_id: int) -> list[AuditEntry]:
        """Who did what to a proposal, oldest first."""
        await self.view(proposal_id)
        async with self.db.session() as session:
            return list((await session.exec(select(AuditEntry).where(AuditEntry.target_kind == "proposal",
                                                                     AuditEntry.target_id == str(proposal_id))
                                            .order_by(col(AuditEntry.id)))).all())


def self_approves(view: ProposalView, team: str) -> bool:
    """Whether the proposer's own approval counts for ``team`` (its catalog entry says ``self_approval: true``; for
    the readers nobody owns, the subject's owner team's does)."""
    name = view.subject.owner_team if team == UNOWNED else team
    return name is not None and name in view.teams and view.teams[name].self_approval


def team_names(teams: Sequence[str]) -> str:
    """``orders-team and analytics-team``."""
    return " and ".join([", ".join(teams[:-1]), teams[-1]] if len(teams) > 1 else teams)
