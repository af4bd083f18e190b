"""No text from people, schemas or the catalog can become Slack markup: every message builder is rendered with
hostile strings and no mention, channel link or link of theirs survives, nor a character that reorders what follows it."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.domain.approvals import UNOWNED
from bot.domain.lineage.model import Job, JobId, Team
from bot.services.outbox import Item
from bot.services.proposals import ProposalView
from bot.slack.delivery import SlackDelivery
from bot.slack.home.tab import home_view
from bot.slack.proposals.cards import card
from bot.slack.proposals.commands import actor_text, summary_line
from bot.store.models import Acknowledgement, AuditEntry, Proposal, Subject

ATTACKS = ["<!channel>", "<!here>", "<!everyone>", "<@U0EVIL1>", "<#C0EVIL1>", "<http://evil.example|click>", "<!subteam^S0EVIL1>",
           "&lt;!channel&gt;", "`<!channel>`", "<mailto:x@evil.example|mail>", "\u202eeulav-sredro", "\u2067analytics\u2069"]
FORBIDDEN = ["<!channel", "<!here", "<!everyone", "<@U0EVIL1", "<#C0EVIL1", "<http://evil", "<!subteam^S0EVIL1", "<mailto:",
             "\u202e", "\u2067"]  # the last two reorder what follows them: a name would show as another
hostile = st.builds(lambda a, b, c: f"{a}{b}{c}", st.text(max_size=8), st.sampled_from(ATTACKS), st.text(max_size=8))


def view_with(text: str) -> ProposalView:
    when = datetime(2026, 12, 1, tzinfo=UTC)
    subject = Subject(id=1, name=f"orders-{text}", channel="#orders")
    finding = {"rule": "TYPE_CHANGED", "path": f"Order.{text}", "level": "breaking", "message": f"default {text} changed"}
    impact = {"note": text, "owners": [f"team-{text}"], "jobs": [{"name": f"job-{text}", "black_box": True}], "fallback": [text],
              "unowned": [{"name": f"job-{text}", "namespace": text, "owners": [text], "learned": text}],
              "impacted": [{"dataset": f"ds-{text}", "field": f"f-{text}", "path": f"orders.{text} -> job -> ds", "black_box_only": True}]}
    proposal = Proposal(id=7, subject_id=1, proposer="U0000ALICE", schema_text="{}", level="breaking", state="pending", notes=text,
                        findings=[finding], impact=impact, teams=[f"team-{text}", "analytics", UNOWNED], created_at=when, deadline=when,
                        window_start=when, window_end=when, registry_error=text, version=3, card_channel="C1", card_ts="1.1")
    decision = Acknowledgement(proposal_id=7, team="analytics", user=text, decision="reject", reason=text, created_at=when)
    teams = {f"team-{text}": Team(f"team-{text}", None, ["U0000ALICE"], ["U00000BOB"], None),
             "analytics": Team("analytics", "S0GROUP01", ["U00000BOB"], ["U00000BOB"], None)}
    return ProposalView(proposal, subject, [decision], teams)


def marks(payload: Any) -> str:
    """Every string Slack would read as mrkdwn (plain_text fields are never parsed for markup)."""
    if isinstance(payload, dict):
        if payload.get("type") == "plain_text":
            return ""
        return " ".join(marks(v) for k, v in payload.items() if k not in ("action_id", "block_id", "value", "type", "style"))
    if isinstance(payload, list):
        return " ".join(marks(v) for v in payload)
    return payload if isinstance(payload, str) else ""


def assert_inert(rendered: Any) -> None:
    text = marks(rendered)
    for bad in FORBIDDEN:
        assert bad not in text, (bad, text[:500])


class _Stub:
    def __init__(self, view: ProposalView) -> None:
        self._view = view
        self.lineage, self.membership, self.registry, self.calendar = self, self, self, self

    def clock(self) -> datetime:
        return datetime(2026, 12, 1, tzinfo=UTC)

    async def owners(self) -> dict[str, str]:
        return {self._view.subject.name: next(iter(self._view.teams))}

    async def freezes(self) -> list[Any]:
        return []

    async def proposal_conflicts(self, _number: int) -> list[str]:
        return [self._view.proposal.notes]

    async def teams(self) -> dict[str, Team]:
        return self._view.teams

    async def unowned_readers(self, _owners: set[str]) -> list[tuple[Job, str]]:
        text = self._view.proposal.notes
        return [(Job(JobId(text, f"job-{text}"), [text], learned=text), f"orders-{text}")]

    async def view(self, _number: int) -> ProposalView:
        return self._view

    async def members(self, team: Team) -> set[str]:
        return set(team.members)

    async def approvers(self, view: ProposalView, team: str) -> set[str]:
        return set(view.teams[team].members) if team in view.teams else {"U0000ALICE"}

    async def listing(self, *args: Any, **kwargs: Any) -> list[Any]:
        if args:  # the calendar's listing
            text = self._view.proposal.notes
            return [{"id": 1, "kind": "maintenance", "title": text, "start": "2026-12-01T10:00:00Z", "end": "2026-12-01T11:00:00Z",
                     "status": "confirmed", "owner": next(iter(self._view.teams)), "scope": {"subjects": [], "datasets": [], "jobs": []},
                     "source": None, "conflicts": [{"with": 2, "reason": text}]}]
        return [self._view]


class _NoTabs:
    """Nobody has the Home tab open."""

    async def refresh(self) -> None:
        return None


@settings(max_examples=60, deadline=None)
@given(hostile)
def test_cards_lines_and_audit_are_inert(text: str) -> None:
    view = view_with(text)
    for reply in (card(view), card(view, team="analytics"), card(view, team=f"team-{text}")):
        assert_inert(reply.blocks)
        assert_inert(reply.fallback)
    assert_inert(summary_line(view))
    entry = AuditEntry(actor=text, surface="api", action="proposed", target_kind="proposal", target_id="7", detail={"api_token": text})
    assert_inert(actor_text(entry))


@settings(max_examples=40, deadline=None)
@given(hostile, st.sampled_from(["created", "decided", "reminder", "expired", "withdrawn", "extended", "registered"]))
def test_thread_notes_and_dms_are_inert(text: str, event: str) -> None:
    view = view_with(text)
    stub = _Stub(view)
    delivery = SlackDelivery(None, stub, "#changes", _NoTabs())  # type: ignore[arg-type]
    payload = {"proposal": 7, "event": event, "actor": text, "teams": ["analytics", f"team-{text}", UNOWNED], "detail": text, "version": 3}
    expansion = asyncio.run(delivery.notice(Item(1, "proposal.notice", "proposal:7", payload, 1)))
    for _kind, _key, row in expansion.rows:
        assert_inert(row.get("blocks"))
        assert_inert(row.get("text"))


@settings(max_examples=20, deadline=None)
@given(hostile)
def test_the_home_tab_is_inert(text: str) -> None:
    view = view_with(text)
    rendered = asyncio.run(home_view("U0000ALICE", {}, _Stub(view)))  # type: ignore[arg-type]
    assert_inert(rendered["blocks"])
    assert json.dumps(rendered)
