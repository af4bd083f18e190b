"""Transitions in the database: a breaking change proposed in steps (expand, migrate, contract), each step a normal
proposal, advanced by what the bot learns (an approval, a registration, lineage, the census, a team's word).

Every move is a conditional UPDATE on the phase it expects, so a sweep on two replicas, a click and a late event
never move a transition twice or backwards; ``open_subject`` (unique) keeps one open transition per subject. What
people are owed is an outbox row (``transition.notice``) in the same transaction."""

from __future__ import annotations

import enum
import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from bot.domain.approvals import Policy, State
from bot.domain.calendar import Kind, Scope, Status, Window
from bot.domain.compat.analysis import analyse, fingerprints
from bot.domain.compat.classify import Mode
from bot.domain.readers import Census
from bot.domain.transitions.gate import Open
from bot.domain.transitions.model import Plan, Rename, TransitionError, listed
from bot.domain.transitions.plan import plan
from bot.domain.transitions.readers import ReaderRef, ReaderState, Said, find_readers, judge, merged, read_paths
from bot.services.audit import record as audit
from bot.services.calendar import CalendarService
from bot.services.lineage import LineageService
from bot.services.outbox import Outbox
from bot.services.proposals import Checked, ProposalError, Proposals, Readers, names_of, topic_of
from bot.services.references import UnresolvedReference
from bot.store.database import Database, same
from bot.store.models import CalendarEntry, Proposal, Subject, Transition, TransitionMove, aware, utcnow
from bot.workers import off_loop

log = logging.getLogger(__name__)
NOTICE = "transition.notice"  # outbox kind: tell people what happened to a transition (the Slack edge renders it)
DEFAULT_DAYS = 14
MAX_DAYS = 365
DEADLINE_ENTRY = timedelta(hours=1)  # the calendar entry that marks the deadline ends at it


class Phase(enum.StrEnum):
    """Where a transition stands; only ``migrate`` and ``contract`` move back and forth (a contract refused)."""

    EXPAND = "expand"
    MIGRATE = "migrate"
    CONTRACT = "contract"
    DONE = "done"
    ROLLED_BACK = "rolled_back"

    @property
    def open(self) -> bool:
        """Whether it still runs."""
        return self not in (Phase.DONE, Phase.ROLLED_BACK)


class Event(enum.StrEnum):
    """What happened to a transition (what the notice tells people)."""

    CREATED = "created"
    MIGRATING = "migrating"  # the expand version is registered: readers may move
    REMINDER = "reminder"
    DEADLINE = "deadline"  # the deadline passed with readers left: the owners decide
    EXTENDED = "extended"
    CONTRACT = "contract"  # the contract version is proposed
    CONTRACT_REFUSED = "contract_refused"  # the contract proposal ended without approval: back to migrating
    PROGRESS = "progress"  # readers moved (on evidence), went back, or appeared
    DONE = "done"
    ENDED = "ended"  # rolled back, or its expand step refused


@dataclass
class TransitionView:
    """A transition with everything its card and its JSON say."""

    row: Transition
    subject: Subject
    readers: list[ReaderState]
    proposals: dict[int, Proposal]
    census: Census | None
    now: datetime

    @property
    def id(self) -> int:
        """Its number."""
        assert self.row.id is not None
        return self.row.id

    @property
    def phase(self) -> Phase:
        """Where it stands."""
        return Phase(self.row.phase)

    @property
    def mapping(self) -> list[Rename]:
        """Old -> new."""
        return [Rename(m["old"], m["new"]) for m in self.row.mapping]

    @property
    def laggards(self) -> list[ReaderState]:
        """The readers that have not moved."""
        return [r for r in self.readers if not r.moved]

    @property
    def overdue(self) -> bool:
        """Open past its deadline."""
        return self.phase.open and self.now >= aware(self.row.deadline)

    def proposal(self, number: int | None) -> Proposal | None:
        """One of its proposals."""
        return self.proposals.get(number) if number is not None else None

    def notes(self) -> list[str]:
        """What makes the readers list less than live and complete, for people."""
        found = [] if self.census is None else self.census.notes()
        if self.census is None:
            found.append("no reader census (Kafka is not configured): only lineage and what teams said are known")
        return found

    def as_json(self) -> dict[str, Any]:
        """The contract's object (and how it stands: ``ended``, the proposals' states, the census's notes)."""
        def step(number: int | None) -> dict[str, Any] | None:
            p = self.proposal(number)
            return None if p is None else {"id": p.id, "state": p.state, "level": p.level, "version": p.version, "registry_state": p.registry_state}

        return {"id": self.id, "subject": self.subject.name, "phase": self.phase.value, "mapping": list(self.row.mapping),
                "expand_proposal": self.row.expand_proposal_id, "contract_proposal": self.row.contract_proposal_id,
                "return_proposal": self.row.return_proposal_id, "readers": [r.as_json() for r in self.readers],
                "deadline": aware(self.row.deadline).isoformat(), "overdue": self.overdue, "proposer": self.row.proposer,
                "created_at": aware(self.row.created_at).isoformat(),
                "closed_at": aware(self.row.closed_at).isoformat() if self.row.closed_at else None, "ended": self.row.ended,
                "steps": {"expand": step(self.row.expand_proposal_id), "contract": step(self.row.contract_proposal_id),
                          "return": step(self.row.return_proposal_id)}, "notes": self.notes()}


def progress_digest(view: TransitionView) -> str:
    """Which readers there are and which moved, and where its proposals stand (the registry's state too), as a short
    digest: what people were last shown."""
    steps = sorted([p.id or 0, p.state, p.registry_state or ""] for p in view.proposals.values())
    text = json.dumps([sorted([r.ref.key, r.moved] for r in view.readers), steps])
    return hashlib.sha256(text.encode()).hexdigest()


def transition_key(transition_id: int) -> str:
    """The outbox lane of a transition's notices, in order."""
    return f"transition:{transition_id}"


def transitive(mode: str) -> Mode:
    """The subject's mode checked against every version (NONE: still both ways readable from every version)."""
    parsed = Mode.parse(mode)
    if parsed is Mode.NONE:
        return Mode.BACKWARD_TRANSITIVE
    return parsed if parsed.transitive else Mode(f"{parsed.value}_TRANSITIVE")


class Transitions:
    """The expand / migrate / contract workflow, on top of the approval workflow."""

    def __init__(self, db: Database, proposals: Proposals, lineage: LineageService, calendar: CalendarService, outbox: Outbox,
                 readers: Readers | None = None, clock: Callable[[], datetime] = utcnow) -> None:
        self.db, self.proposals, self.lineage, self.calendar, self.outbox = db, proposals, lineage, calendar, outbox
        self.readers, self.clock = readers, clock

    # --- beginning ------------------------------------------------------------------------------

    async def start(self, subject_name: str, target: str, proposer: str, *, deadline: datetime | None = None,
                    mapping: Sequence[Rename] | None = None, surface: str = "slack", api_token: str | None = None,
                    replaces: int | None = None) -> TransitionView:
        """Plan the transition to ``target`` (the schema after the contract), propose its expand version and book its
        deadline; ProposalError (nothing stored) for anything wrong: an unknown subject, a target equal to the current
        version, nothing to map, an expand version not compatible transitively, a transition already open.
        ``replaces``: the breaking proposal this transition ships instead (withdrawn once the transition stands)."""
        now = self.clock()
        subject = await self.proposals.precheck(subject_name, target)
        deadline = deadline or now + timedelta(days=DEFAULT_DAYS)
        if not now < deadline <= now + timedelta(days=MAX_DAYS):
            raise ProposalError(f"the deadline must be in the future and within {MAX_DAYS} days", "deadline")
        await self._none_open(subject)
        try:
            history, planned, checked, found = await self._prepare(subject, target, mapping)
        except ProposalError:
            await self._none_open(subject)  # one started meanwhile: that is the reason, not what its expand version changed
            raise
        async with self.db.session() as session:
            row = Transition(subject_id=subject.id or 0, open_subject=subject.id, phase=Phase.EXPAND.value,
                             mapping=[r.as_json() for r in planned.mapping], original_text=history[-1], expand_text=planned.expand,
                             contract_text=planned.contract, readers=[{**r.as_json(), "moved": False} for r in found], proposer=proposer, surface=surface,
                             deadline=deadline, created_at=now)
            session.add(row)
            try:
                await session.flush()
            except IntegrityError:
                await session.rollback()
                raise ProposalError(f"a transition is already open on {subject_name}: one at a time per subject") from None
            assert row.id is not None
            entry = self.calendar.book(session, kind=Kind.TRANSITION, title=f"Transition #{row.id} on {subject_name}: every reader moved by now",
                                       window=Window(deadline - DEADLINE_ENTRY, deadline), owner=subject.owner_team or "", booked_by=proposer,
                                       scope=Scope(subjects=frozenset({subject_name})), status=Status.CONFIRMED)
            await session.flush()
            row.calendar_entry_id = entry.id
            session.add(row)
            audit(session, proposer, surface, "transition started", "transition", str(row.id),
                  {"subject": subject_name, "mapping": row.mapping, "deadline": deadline.isoformat(), "api_token": api_token, "replaces": replaces})
            await session.commit()
            number = row.id
        words = listed([f"{r.old} → {r.new}" for r in planned.mapping])
        try:
            view = await self.proposals.propose(subject_name, planned.expand, proposer, surface=surface, checked=checked, api_token=api_token,
                                                notes=f"Expand step of transition #{number} ({words}): both sides are written and readable "
                                                      f"until every reader has moved, by {deadline:%Y-%m-%d %H:%M} UTC.")
        except ProposalError as err:
            await self._end(number, Phase.EXPAND, f"its expand version could not be proposed: {err}", "changeops", surface)
            raise
        async with self.db.session() as session:
            await session.exec(update(Transition).where(col(Transition.id) == number).values(expand_proposal_id=view.id))
            self._notice(session, number, Event.CREATED, proposer)
            await session.commit()
        if replaces is not None:
            try:
                await self.proposals.withdraw(replaces, proposer, surface)
            except ProposalError as err:
                log.info("transition #%d: the proposal it replaces was not withdrawn: %s", number, err)
        self.outbox.wake()
        await self.advance(number)
        return await self.view(number)

    async def _prepare(self, subject: Subject, target: str, mapping: Sequence[Rename] | None) -> tuple[list[str], Plan, Checked, list[ReaderRef]]:
        """The plan to ``target``, its expand version checked, and the readers of the old fields; ProposalError for what is wrong."""
        subject_name = subject.name
        versions = await self.proposals.registry.history(subject_name)
        history = [v.schema_text for v in versions]
        if not history:
            raise ProposalError(f"{subject_name} has no version yet: a transition moves readers from the current version; propose the first "
                                "version as a normal change", "subject")
        try:
            referenced = await self.proposals.references.resolve(await self.proposals.references.pins(subject_name))
        except UnresolvedReference as err:
            raise ProposalError(f"{err}; nothing was stored", "references") from None
        refs = dict(zip(names_of(referenced), [e["schema"] for e in referenced], strict=True))
        [printed] = await off_loop(fingerprints, [target], list(refs.values()), subject.format, list(refs))
        if printed is not None and printed == versions[-1].fingerprint:
            raise ProposalError(f"no change: the target is identical to the current version of {subject_name}", "schema")
        try:
            reading = read_paths(await self.lineage.graph(), subject_name)  # their places count, however deep
            planned: Plan = await off_loop(plan, subject.format, history[-1], target, mapping, refs, reading)
        except TransitionError as err:
            raise ProposalError(str(err), "mapping" if mapping else "schema") from None
        await self._expand_compatible(subject, history, planned, refs)
        checked = await self.proposals.check(subject_name, planned.expand)
        found = await self._find(subject, planned.mapping)
        return history, planned, checked, found

    async def _none_open(self, subject: Subject) -> None:
        async with self.db.session() as session:
            other = (await session.exec(select(Transition).where(col(Transition.open_subject) == subject.id))).first()
        if other is not None:
            raise ProposalError(f"transition #{other.id} is already open on {subject.name} ({other.phase}): one at a time per subject; "
                                "finish or roll it back first")

    async def _expand_compatible(self, subject: Subject, history: list[str], planned: Plan, refs: dict[str, str]) -> None:
        """The expand version must be compatible with every version, not only the newest: a step-by-step check passes
        renames that leave old data unreadable."""
        mode = transitive(subject.compatibility)
        analysis = await off_loop(analyse, history, planned.expand, mode.value, list(refs.values()), subject.format, list(refs))
        if analysis.error is not None:
            raise ProposalError(f"the expand version does not parse: {analysis.error}", "schema")
        verdict = analysis.verdict
        assert verdict is not None
        if mode.fails(verdict.backward, verdict.forward):
            why = "; ".join(f.message for f in verdict.findings if f.breaks)[:1500]
            raise ProposalError(f"the expand version (both sides of the mapping) is not {mode.value} compatible, so both could not be read "
                                f"meanwhile: {why}", "schema")

    async def _find(self, subject: Subject, mapping: Sequence[Rename]) -> list[ReaderRef]:
        census = await self.readers.census(topic_of(subject)) if self.readers is not None else None
        return find_readers(await self.lineage.graph(), subject.name, mapping, census)

    # --- moving on ------------------------------------------------------------------------------

    async def sweep(self) -> int:
        """Advance every open transition as far as what is known allows; how many moved."""
        async with self.db.session() as session:
            numbers = (await session.exec(select(Transition.id).where(col(Transition.open_subject).is_not(None)))).all()
        moved = 0
        for number in numbers:
            assert number is not None
            try:
                moved += await self.advance(number)
            except Exception:  # one transition's trouble (a registry away) never stops the others
                log.exception("transition #%d could not be advanced", number)
        return moved

    async def advance(self, number: int) -> bool:
        """One step, if its time has come: expand approved and registered -> migrate; every reader moved -> the contract
        proposed; the contract approved and registered -> done (refused -> migrate again); reminders and the deadline."""
        view = await self.view(number)
        phase = view.phase
        if phase is Phase.EXPAND:
            return await self._after_expand(view) or await self._progress(view)
        if phase is Phase.CONTRACT:
            return await self._after_contract(view) or await self._progress(view)
        if phase is not Phase.MIGRATE:
            return False
        told = await self._progress(view)
        if not view.laggards and self._census_answers(view):
            return await self._propose_contract(view, "changeops", "workflow", laggards=[]) or told
        return await self._remind(view) or told

    async def _progress(self, view: TransitionView) -> bool:
        """Tell people (the card, a note with the evidence) when readers moved, went back, or appeared, and show its
        proposals' new states (a registration retrying); once per change, whichever replica sees it first (a conditional
        update on the digest people were last shown)."""
        row = view.row
        digest = progress_digest(view)
        if digest == row.progress:
            return False
        known = {ReaderRef.from_json(r).key for r in row.readers}
        before = {ReaderRef.from_json(r).key for r in row.readers if r.get("moved")}  # as people were last told
        moved_now = [r for r in view.readers if r.moved and r.ref.key not in before]
        back = [r for r in view.readers if not r.moved and r.ref.key in before]
        new = [r for r in view.readers if r.ref.key not in known]
        stored = [{**r.ref.as_json(), "moved": r.moved} for r in view.readers]
        async with self.db.session() as session:
            moved = await session.exec(update(Transition).where(col(Transition.id) == view.id, col(Transition.progress) == row.progress,
                                                                col(Transition.phase) == row.phase).values(progress=digest, readers=stored))
            if not getattr(moved, "rowcount", 0):
                return False
            lines = [f"{_reader_name(r)} moved: {r.evidence}" for r in moved_now] + [f"{_reader_name(r)} is back on the old fields: {r.evidence}"
                                                                                      for r in back]
            lines += [f"{_reader_name(r)} reads the old fields too ({r.evidence}): it must move as well" for r in new]
            self._notice(session, view.id, Event.PROGRESS, detail="\n".join(lines))
            await session.commit()
        self.outbox.wake()
        return True

    def _census_answers(self, view: TransitionView) -> bool:
        """Whether the census is live enough to say nobody else reads (without Kafka, lineage and teams are all there is)."""
        return view.census is None or view.census.live

    async def _after_expand(self, view: TransitionView) -> bool:
        p = view.proposal(view.row.expand_proposal_id)
        if p is None:
            return False
        if p.state == State.APPROVED.value and p.registry_state in (None, "registered"):
            return await self._move(view.id, Phase.EXPAND, Phase.MIGRATE, Event.MIGRATING, detail=str(p.version or ""))
        if State(p.state).final and p.state != State.APPROVED.value:
            return await self._end(view.id, Phase.EXPAND, f"its expand proposal #{p.id} was {p.state.replace('_', ' ')}", "changeops", "workflow")
        return False

    async def _after_contract(self, view: TransitionView) -> bool:
        p = view.proposal(view.row.contract_proposal_id)
        if p is None:
            return False
        if p.state == State.APPROVED.value and p.registry_state in (None, "registered"):
            async with self.db.session() as session:
                moved = await session.exec(update(Transition).where(col(Transition.id) == view.id, col(Transition.phase) == Phase.CONTRACT.value)
                                           .values(phase=Phase.DONE.value, open_subject=None, closed_at=self.clock(),
                                                   ended=f"contracted: version {p.version} has only the new fields"))
                if not getattr(moved, "rowcount", 0):
                    return False
                audit(session, "changeops", "workflow", "transition done", "transition", str(view.id), {"version": p.version})
                self._notice(session, view.id, Event.DONE, detail=str(p.version or ""))
                await session.commit()
            self.outbox.wake()
            return True
        if State(p.state).final and p.state != State.APPROVED.value:
            async with self.db.session() as session:
                moved = await session.exec(update(Transition).where(col(Transition.id) == view.id, col(Transition.phase) == Phase.CONTRACT.value,
                                                                    col(Transition.contract_proposal_id) == p.id)
                                           .values(phase=Phase.MIGRATE.value, contract_proposal_id=None))
                if not getattr(moved, "rowcount", 0):
                    return False
                self._notice(session, view.id, Event.CONTRACT_REFUSED, detail=f"#{p.id} was {p.state.replace('_', ' ')}")
                await session.commit()
            self.outbox.wake()
            return True
        return False

    async def _remind(self, view: TransitionView) -> bool:
        row, now = view.row, self.clock()
        teams = sorted({r.team for r in view.laggards if r.team})
        if not view.laggards:
            return False
        deadline, created = aware(row.deadline), aware(row.created_at)
        async with self.db.session() as session:
            if now >= deadline and not row.deadline_asked:
                moved = await session.exec(update(Transition).where(col(Transition.id) == view.id, col(Transition.phase) == Phase.MIGRATE.value,
                                                                    col(Transition.deadline_asked).is_(False)).values(deadline_asked=True))
                event = Event.DEADLINE
            elif now < deadline and Policy.from_json(view.subject.policy).reminder_due(created, deadline, row.reminders_sent, now):
                moved = await session.exec(update(Transition).where(col(Transition.id) == view.id, col(Transition.phase) == Phase.MIGRATE.value,
                                                                    col(Transition.reminders_sent) == row.reminders_sent)
                                           .values(reminders_sent=row.reminders_sent + 1))
                event = Event.REMINDER
            else:
                return False
            if not getattr(moved, "rowcount", 0):
                return False
            self._notice(session, view.id, event, teams=teams, detail=", ".join(_reader_name(r) for r in view.laggards))
            await session.commit()
        self.outbox.wake()
        return True

    async def _propose_contract(self, view: TransitionView, actor: str, surface: str, laggards: list[ReaderState]) -> bool:
        """Propose the contract version: with every known reader moved, nobody to ask; with laggards (the owners chose to
        break them at the deadline), their teams acknowledge it like any break; with no reader ever known, the usual
        impact rules ask (lineage that knows nothing of the topic asks the fallback approvers)."""
        words = listed([f"{m.old} → {m.new}" for m in view.mapping])
        impact: dict[str, Any] | None
        if not view.readers:  # no reader was ever known: that is no evidence nobody reads, so the usual impact rules decide who is asked
            impact = None
        elif laggards:
            impact = {"owners": sorted({r.team for r in laggards if r.team}),
                                      "note": f"contract of transition #{view.id} before every reader moved: "
                                              + "; ".join(f"{_reader_name(r)} ({r.evidence})" for r in laggards)[:1500]}
            if any(r.team is None for r in laggards):
                impact["unowned"] = [_reader_name(r) for r in laggards if r.team is None]
        else:
            impact = {"owners": [], "note": f"contract of transition #{view.id}: every reader of {listed([m.old for m in view.mapping])} "
                                            "moved (the evidence is on the transition), so nobody reads the removed fields"}
        async with self.db.session() as session:  # claimed first: a second sweep or click proposes nothing
            claimed = await session.exec(update(Transition).where(col(Transition.id) == view.id, col(Transition.phase) == Phase.MIGRATE.value)
                                         .values(phase=Phase.CONTRACT.value))
            if not getattr(claimed, "rowcount", 0):
                return False
            await session.commit()
        try:
            proposal = await self.proposals.propose(view.subject.name, view.row.contract_text, view.row.proposer, surface=surface, impact=impact,
                                                    notes=f"Contract step of transition #{view.id} ({words}): the old fields go.")
        except ProposalError as err:
            async with self.db.session() as session:
                await session.exec(update(Transition).where(col(Transition.id) == view.id, col(Transition.phase) == Phase.CONTRACT.value)
                                   .values(phase=Phase.MIGRATE.value))
                self._notice(session, view.id, Event.CONTRACT_REFUSED, actor, detail=f"the contract version could not be proposed: {err}")
                await session.commit()
            self.outbox.wake()
            return False
        async with self.db.session() as session:
            await session.exec(update(Transition).where(col(Transition.id) == view.id).values(contract_proposal_id=proposal.id))
            audit(session, actor, surface, "contract proposed", "transition", str(view.id),
                  {"proposal": proposal.id, "laggards": [_reader_name(r) for r in laggards]})
            self._notice(session, view.id, Event.CONTRACT, actor, detail=str(proposal.id))
            await session.commit()
        self.outbox.wake()
        await self.advance(view.id)  # approved at once when nobody is asked
        return True

    async def _move(self, number: int, expected: Phase, to: Phase, event: Event, actor: str | None = None, detail: str = "") -> bool:
        async with self.db.session() as session:
            moved = await session.exec(update(Transition).where(col(Transition.id) == number, col(Transition.phase) == expected.value)
                                       .values(phase=to.value))
            if not getattr(moved, "rowcount", 0):
                return False
            self._notice(session, number, event, actor, detail=detail)
            await session.commit()
        self.outbox.wake()
        return True

    async def _end(self, number: int, expected: Phase, why: str, actor: str, surface: str, **values: Any) -> bool:
        """Close an open transition as rolled back (its deadline entry cancelled)."""
        async with self.db.session() as session:
            moved = await session.exec(update(Transition).where(col(Transition.id) == number, col(Transition.phase) == expected.value)
                                       .values(phase=Phase.ROLLED_BACK.value, open_subject=None, closed_at=self.clock(), ended=why, **values))
            if not getattr(moved, "rowcount", 0):
                return False
            row = await session.get(Transition, number)
            if row is not None and row.calendar_entry_id is not None:
                await session.exec(update(CalendarEntry).where(col(CalendarEntry.id) == row.calendar_entry_id)
                                   .values(status=Status.CANCELLED.value, sequence=CalendarEntry.sequence + 1, updated_at=self.clock()))
            audit(session, actor, surface, "transition ended", "transition", str(number), {"why": why})
            self._notice(session, number, Event.ENDED, actor, detail=why)
            await session.commit()
        self.outbox.wake()
        return True

    # --- people's word --------------------------------------------------------------------------

    async def moved(self, number: int, user: str, reader: str | None = None, surface: str = "slack") -> list[str]:
        """``user`` says the readers their teams answer for (or just ``reader``, by name) moved to the new fields; returns
        the readers recorded. ProposalError when there is nothing of theirs to mark."""
        view = await self.view(number)
        if not view.phase.open:
            raise ProposalError(f"transition #{number} is {view.phase.value.replace('_', ' ')}; nothing changed")
        teams = await self.lineage.teams()
        mine = []
        for state in view.laggards:
            if reader is not None and reader not in (state.ref.name, state.ref.key):
                continue
            if state.team is None:
                if reader is not None:
                    raise ProposalError(f"nobody answers for {_reader_name(state)} yet: say which team does (the reader census), then that team "
                                        "can say it moved; nothing changed")
                continue
            if state.team in teams and user in await self.proposals.membership.members(teams[state.team]):
                mine.append(state)
        if not mine:
            which = f"{reader} is not a reader of #{number} that waits" if reader else "none of the readers that wait belong to your teams"
            raise ProposalError(f"{which}; only a member of a reader's team can say it moved; nothing changed")
        recorded = []
        async with self.db.session() as session:
            for state in mine:
                try:
                    async with session.begin_nested():
                        session.add(TransitionMove(transition_id=number, reader=state.ref.key, team=state.team or "", user=user, created_at=self.clock()))
                except IntegrityError:
                    continue  # said already (a double click, another member): once is enough
                recorded.append(_reader_name(state))
                audit(session, user, surface, "reader moved", "transition", str(number), {"reader": state.ref.key, "team": state.team})
            await session.commit()  # the card and its thread say it with the next step (the evidence names who said it)
        self.outbox.wake()
        await self.advance(number)
        return recorded

    async def extend(self, number: int, user: str, deadline: datetime, surface: str = "slack") -> TransitionView:
        """The subject's owners give the readers left more time: the deadline moves (and its calendar entry with it), and the
        reminders still ahead in the longer span go (one whose moment is already past is not sent at once)."""
        view = await self.view(number)
        await self._owner(view, user, "extend")
        now = self.clock()
        if not aware(view.row.deadline) < deadline <= now + timedelta(days=MAX_DAYS):
            raise ProposalError(f"the new deadline must be later than the current one ({aware(view.row.deadline):%Y-%m-%d %H:%M} UTC) "
                                f"and within {MAX_DAYS} days", "deadline")
        sent = view.row.reminders_sent
        reminded = min(sent, Policy.from_json(view.subject.policy).reminders_past(aware(view.row.created_at), deadline, now))
        async with self.db.session() as session:
            moved = await session.exec(update(Transition).where(col(Transition.id) == number, col(Transition.deadline) == view.row.deadline,
                                                                col(Transition.reminders_sent) == sent,
                                                                col(Transition.phase).in_([Phase.EXPAND.value, Phase.MIGRATE.value]))
                                       .values(deadline=deadline, deadline_asked=False, reminders_sent=reminded))
            if not getattr(moved, "rowcount", 0):
                raise ProposalError(f"transition #{number} changed meanwhile (its deadline moved, a reminder went out, or it is contracting "
                                    "or over); nothing changed")
            if view.row.calendar_entry_id is not None:
                await session.exec(update(CalendarEntry).where(col(CalendarEntry.id) == view.row.calendar_entry_id)
                                   .values(start=deadline - DEADLINE_ENTRY, end=deadline, sequence=CalendarEntry.sequence + 1, updated_at=now))
            audit(session, user, surface, "transition extended", "transition", str(number), {"deadline": deadline.isoformat()})
            self._notice(session, number, Event.EXTENDED, user, detail=f"{deadline:%Y-%m-%d %H:%M} UTC")
            await session.commit()
        self.outbox.wake()
        return await self.view(number)

    async def contract_now(self, number: int, user: str, surface: str = "slack") -> TransitionView:
        """The subject's owners propose the contract with readers left (at the deadline, knowingly): their teams are asked
        to acknowledge the break like any break."""
        view = await self.view(number)
        await self._owner(view, user, "propose the contract of")
        if view.phase is not Phase.MIGRATE:
            raise ProposalError(f"transition #{number} is in its {view.phase.value.replace('_', ' ')} phase: the contract is proposed while "
                                "readers migrate; nothing changed")
        if not await self._propose_contract(view, user, surface, laggards=view.laggards):
            raise ProposalError(f"transition #{number} changed meanwhile; nothing changed")
        return await self.view(number)

    async def rollback(self, number: int, user: str, surface: str = "slack") -> TransitionView:
        """End the transition before its contract: a waiting step is withdrawn; once the expand version is recorded, the
        return to the original version is proposed (the new fields go)."""
        view = await self.view(number)
        if user != view.row.proposer:
            await self._owner(view, user, "roll back")
        if view.phase not in (Phase.EXPAND, Phase.MIGRATE, Phase.CONTRACT):
            raise ProposalError(f"transition #{number} is {view.phase.value.replace('_', ' ')}: there is nothing to roll back; nothing changed")
        contract = view.proposal(view.row.contract_proposal_id)
        if contract is not None and contract.state == State.APPROVED.value:
            raise ProposalError(f"the contract of #{number} is approved (#{contract.id}): the old fields are gone; roll forward instead")
        for step in (contract, view.proposal(view.row.expand_proposal_id)):
            if step is not None and step.state == State.PENDING.value and step.id is not None:
                await self.proposals.withdraw(step.id, step.proposer, surface, on_behalf_of=user)
        expand = view.proposal(view.row.expand_proposal_id)
        returned = None
        if expand is not None and expand.state == State.APPROVED.value:
            try:
                returned = await self.proposals.propose(view.subject.name, view.row.original_text, user, surface=surface,
                                                        notes=f"Rollback of transition #{number}: back to the version before its expand step.")
            except ProposalError as err:
                if "identical" not in str(err):
                    raise
        phase = (await self.view(number)).phase
        if not await self._end(number, phase, f"rolled back by {user}", user, surface,
                               **({"return_proposal_id": returned.id} if returned is not None else {})):
            raise ProposalError(f"transition #{number} changed meanwhile; nothing changed")
        return await self.view(number)

    async def _owner(self, view: TransitionView, user: str, verb: str) -> None:
        teams = await self.lineage.teams()
        owner = teams.get(view.subject.owner_team or "")
        if owner is None or user not in await self.proposals.membership.members(owner):
            raise ProposalError(f"only a member of {view.subject.owner_team or 'the subject owner team'} (who owns {view.subject.name}) can "
                                f"{verb} transition #{view.id}; nothing changed")

    # --- reading --------------------------------------------------------------------------------

    async def view(self, number: int) -> TransitionView:
        """A transition with its readers judged now; ProposalError when there is none."""
        async with self.db.session() as session:
            row = await session.get(Transition, number)
            if row is None:
                raise ProposalError(f"there is no transition #{number}")
            subject = await session.get(Subject, row.subject_id)
            assert subject is not None
            ids = [i for i in (row.expand_proposal_id, row.contract_proposal_id, row.return_proposal_id) if i is not None]
            proposals = {p.id: p for p in (await session.exec(select(Proposal).where(col(Proposal.id).in_(ids)))).all() if p.id is not None}
            said = [Said(m.reader, m.team, m.user, aware(m.created_at))
                    for m in (await session.exec(select(TransitionMove).where(col(TransitionMove.transition_id) == number))).all()]
        mapping = [Rename(m["old"], m["new"]) for m in row.mapping]
        census = await self.readers.census(topic_of(subject)) if self.readers is not None else None
        graph = await self.lineage.graph()
        refs = [ReaderRef.from_json(r) for r in row.readers]
        if Phase(row.phase) in (Phase.EXPAND, Phase.MIGRATE):
            refs = merged(refs, find_readers(graph, subject.name, mapping, census))
        return TransitionView(row, subject, judge(refs, graph, subject.name, mapping, census, said), proposals, census, self.clock())

    async def gate(self, subjects: set[str]) -> dict[str, Open]:
        """The open transitions on these subjects, as the Flink release gate needs them."""
        async with self.db.session() as session:
            rows = (await session.exec(select(Transition, Subject.name).join(Subject, col(Subject.id) == col(Transition.subject_id))
                                       .where(col(Subject.name).in_(sorted(subjects)), col(Transition.open_subject).is_not(None)))).all()
        return {name: Open(row.id or 0, row.phase, tuple(Rename(m["old"], m["new"]) for m in row.mapping), aware(row.deadline)) for row, name in rows}

    async def listing(self, *, open_only: bool = True) -> list[Transition]:
        """Transitions, newest first."""
        async with self.db.session() as session:
            query = select(Transition).order_by(col(Transition.id).desc())
            if open_only:
                query = query.where(col(Transition.open_subject).is_not(None))
            return list((await session.exec(query.limit(50))).all())

    async def save_card(self, number: int, channel: str, ts: str, replacing: str | None = None) -> bool:
        """Remember where the transition's card is: the first time, or in place of ``replacing`` (deleted in Slack)."""
        async with self.db.session() as session:
            moved = await session.exec(update(Transition).where(col(Transition.id) == number, same(col(Transition.card_ts), replacing))
                                       .values(card_channel=channel, card_ts=ts))
            await session.commit()
        return bool(getattr(moved, "rowcount", 0))

    def _notice(self, session: AsyncSession, number: int, event: Event, actor: str | None = None, *, teams: Sequence[str] = (),
                detail: str = "") -> None:
        self.outbox.add(session, NOTICE, transition_key(number), {"transition": number, "event": event.value, "actor": actor,
                                                                  "teams": list(teams), "detail": detail})


def _reader_name(state: ReaderState) -> str:
    return f"{state.ref.kind} {state.ref.name}"
