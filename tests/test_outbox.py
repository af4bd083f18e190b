"""The outbox: messages survive Slack's outages and a crash, arrive once and in order per thread, and two
bots never send the same row."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from typing import Any

import pytest
from sqlmodel import select

from bot.domain.approvals import Decision
from bot.runtime import Bot
from bot.slack.delivery import message_row
from bot.slack.render import Reply
from bot.store.models import OutboxMessage
from tests.conftest import SlackHarness, bot_config
from tests.test_proposals_slack import ALICE, BOB, V1, card_message, retyped, setup_catalog, thread


def bot_messages(slack: SlackHarness) -> list[str]:
    return [m.text for m in slack.ws.messages]


async def test_messages_survive_5xx_429_and_refused_connections_and_arrive_once_in_order(slack: SlackHarness) -> None:
    await setup_catalog(slack, second_team_job=True)
    slack.bot.dispatcher.backoff, slack.bot.dispatcher.max_backoff = 0.1, 0.5
    slack.ws.outage = 500
    await slack.bot.proposals.propose("orders-value", json.dumps(retyped(V1, "price", "string")), ALICE, surface="api")
    await slack.ws.wait_for(lambda: len([c for c in slack.ws.calls if c.status == 500]) >= 3)
    await slack.bot.proposals.decide(1, BOB, Decision.APPROVE)  # the user group cannot be read: the catalog's members decide
    slack.clock.advance(hours=13)
    assert await slack.bot.proposals.sweep() == 1
    slack.ws.outage = 429
    await slack.ws.wait_for(lambda: len([c for c in slack.ws.calls if c.status == 429]) >= 2)
    await slack.refuse_connections()  # before the 429s end: no window in which a retry could get through
    slack.ws.outage = None
    await asyncio.sleep(1.0)  # the dispatcher keeps trying against a closed port meanwhile
    assert slack.ws.messages == []
    await slack.accept_connections()
    await slack.bot.idle()

    card = await card_message(slack)
    assert len(slack.ws.channel_messages("schema-changes")) == 1 and len(slack.ws.channel_messages("orders-pipeline")) == 1
    notes = thread(slack, card)
    assert len(notes) == 2 and "approved for analytics-team" in notes[0] and "Reminder" in notes[1] and "orders-team" not in notes[0]
    dms = Counter((m.channel, m.text.split(" (")[0][:60]) for m in slack.ws.messages if m.channel.startswith("D"))
    assert all(n == 1 for n in dms.values()), dms
    for user in (ALICE, BOB):  # the user groups could not be read during the outage: the catalog's members were asked
        assert any("asked to acknowledge" in m.text for m in slack.ws.channel_messages(slack.ws.open_dm(user)))
    assert [m.text for m in slack.ws.channel_messages(slack.ws.open_dm(ALICE)) if m.text.startswith("Reminder")]
    assert "approved" in json.dumps(slack.ws.find_message(card.channel, card.ts).blocks)  # type: ignore[union-attr]
    async with slack.bot.db.session() as session:
        rows = (await session.exec(select(OutboxMessage))).all()
    assert {r.state for r in rows} == {"sent"} and max(r.attempts for r in rows) > 1


async def test_two_bots_never_send_the_same_row_twice(slack: SlackHarness, migrated_url: str) -> None:
    other = Bot(bot_config(slack.emulator, migrated_url), slack.clock)
    await other.start(0)
    try:
        async with slack.bot.db.session() as session:
            for i in range(40):
                kind, key, payload = message_row("changes" if i % 2 else BOB, Reply.text(f"message {i}"), key=f"k{i % 7}")
                slack.bot.outbox.add(session, kind, key, payload)
            await session.commit()
        slack.bot.outbox.wake()
        other.outbox.wake()
        await asyncio.gather(slack.bot.idle(), other.idle())
    finally:
        await other.stop()
    sent = Counter(bot_messages(slack))
    assert sorted(sent) == sorted(f"message {i}" for i in range(40)) and set(sent.values()) == {1}
    for key in range(7):  # each key's rows went out in the order they were written
        order = [int(t.split()[1]) for t in bot_messages(slack) if int(t.split()[1]) % 7 == key]
        assert order == sorted(order)


async def test_a_refused_card_leaves_its_thread_notes_undeliverable_not_lost_silently(slack: SlackHarness) -> None:
    await setup_catalog(slack)
    await slack.bot.stop()
    config = bot_config(slack.emulator, slack.config.database_url, CHANGES_CHANNEL="#no-such-channel")
    slack.bot = Bot(config, slack.clock)
    await slack.bot.start(0)
    await slack.bot.proposals.propose("orders-value", json.dumps(retyped(V1, "price", "string")), ALICE, surface="api")
    await slack.bot.proposals.withdraw(1, ALICE, surface="api")
    await slack.bot.idle()
    async with slack.bot.db.session() as session:
        failed = (await session.exec(select(OutboxMessage).where(OutboxMessage.state == "failed"))).all()
    reasons = [r.last_error or "" for r in failed]
    assert any("channel_not_found" in r for r in reasons) and any("no card to thread under" in r for r in reasons)
    assert any("asked to acknowledge" in m.text for m in slack.ws.channel_messages(slack.ws.open_dm(BOB)))


async def test_notes_that_waited_for_their_card_are_due_again_once_it_is_posted_and_nothing_else_moves(migrated_url: str) -> None:
    from datetime import UTC, datetime, timedelta

    from bot.services.outbox import Outbox
    from bot.store.database import Database

    db, outbox, later = Database(migrated_url), Outbox(), datetime.now(UTC) + timedelta(minutes=5)
    async with db.session() as session:
        waiting, limited = "no card yet", "chat.postMessage: rate limited"
        for key, attempts, lease, why in (("thread:1", 1, None, waiting), ("thread:1", 1, later, waiting), ("thread:1", 0, None, None),
                                          ("thread:2", 1, None, waiting), ("thread:1", 1, None, limited)):
            session.add(OutboxMessage(kind="slack.message", key=key, payload={}, attempts=attempts, next_attempt_at=later, lease_until=lease,
                                      last_error=why))
        await session.commit()
        await outbox.hurry(session, "thread:1", waiting)
        await session.commit()
        rows = (await session.exec(select(OutboxMessage).order_by(OutboxMessage.id))).all()  # type: ignore[arg-type]
        due = [row.next_attempt_at.replace(tzinfo=UTC) <= datetime.now(UTC) for row in rows]
    await db.close()
    assert due == [True, False, False, False, False]  # the one that waited; not the one being delivered, one never tried, another
    # thread's, nor one Slack asked to wait (its Retry-After holds)


async def test_a_row_whose_outcome_was_lost_goes_again_once_its_lease_runs_out_and_the_dispatcher_keeps_running(
        migrated_url: str, caplog: pytest.LogCaptureFixture) -> None:
    from datetime import UTC, datetime, timedelta

    from bot.services.outbox import Dispatcher, Item, Outbox
    from bot.store.database import Database

    now = [datetime.now(UTC) + timedelta(seconds=30)]  # the rows are due
    delivered: list[str] = []

    async def handler(item: Item) -> None:
        delivered.append(item.key)

    class Flaky(Dispatcher):
        """The database is away the first time an outcome is recorded."""

        failed = False

        async def _done(self, item: Item, expansion: Any) -> None:
            if not self.failed:
                self.failed = True
                raise OSError("the database is away")
            await super()._done(item, expansion)

    db, outbox = Database(migrated_url), Outbox()
    dispatcher = Flaky(db, outbox, {"note": handler}, poll=0.05, clock=lambda: now[0])
    try:
        dispatcher.start()
        for key in ("a", "b"):
            async with db.session() as session:
                outbox.add(session, "note", key, {})
                await session.commit()
            outbox.wake()
            for _ in range(200):
                if key in delivered:
                    break
                await asyncio.sleep(0.02)
        assert delivered == ["a", "b"] and await dispatcher.pending() == 1  # "a" was sent, its outcome lost; "b" went meanwhile
        assert any("could not record the outcome of note row" in r.getMessage() for r in caplog.records)
        now[0] += timedelta(minutes=2)  # past its lease: "a" goes again (at least once), then it is recorded
        await asyncio.wait_for(dispatcher.idle(), 10)
        assert delivered == ["a", "b", "a"] and dispatcher.results[("note", "sent")] == 2
    finally:
        await dispatcher.stop(5)
        await db.close()
