"""Fuzzing what anyone can send: API bodies and slash-command text get a 400 or a human answer, never a 500,
a traceback or a stored change."""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlencode

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.emulator import Emulator, Workspace, sign
from bot.runtime import Bot
from tests.conftest import API_TOKEN, Clock, bot_config, seed_workspace, start_emulator
from tests.test_proposals_slack import V1, setup_catalog

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


class Errors(logging.Handler):
    """Every ERROR the bot logs while fuzzed."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


class ThreadedBot:
    """The bot and the emulator on their own event loop in a thread, so hypothesis can call them synchronously."""

    def __init__(self, database_url: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.database_url = database_url
        self.bot, self.emulator, self.runner = self.run(self._start())

    def run(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=60)

    async def _start(self) -> tuple[Bot, Emulator, Any]:
        ws = Workspace(f"xoxb-fuzz-{secrets.token_hex(4)}")
        seed_workspace(ws)
        emulator, runner = await start_emulator(ws)
        bot = Bot(bot_config(emulator, self.database_url), Clock())
        await bot.start(0)
        await setup_catalog(SimpleNamespace(ws=ws, bot=bot))  # type: ignore[arg-type]
        return bot, emulator, runner

    def stop(self) -> None:
        self.run(self.bot.stop())
        self.run(self.runner.cleanup())
        self.run(self._cancel_the_rest())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        self.loop.close()

    async def _cancel_the_rest(self) -> None:
        rest = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in rest:
            task.cancel()
        await asyncio.gather(*rest, return_exceptions=True)

    def post(self, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
        request = urllib.request.Request(f"{self.bot.url}{path}", data=body, method="POST", headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 (our own test server)
                return response.status, response.read()
        except urllib.error.HTTPError as err:
            return err.code, err.read()


@pytest.fixture
def fuzzed(migrated_url: str) -> Iterator[tuple[ThreadedBot, Errors]]:
    errors = Errors()
    logging.getLogger().addHandler(errors)
    threaded = ThreadedBot(migrated_url)
    try:
        yield threaded, errors
    finally:
        threaded.stop()
        logging.getLogger().removeHandler(errors)


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=80),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4), max_leaves=12)
proposal_bodies = st.fixed_dictionaries({}, optional={
    "subject": st.one_of(st.just("orders-value"), json_values), "schema": st.one_of(st.just(V1), st.just(json.dumps(V1)), json_values),
    "proposer": st.one_of(st.just("U0000ALICE"), st.text(max_size=70), json_values), "notes": json_values,
    "window_start": st.one_of(st.just("2026-12-03T02:00:00Z"), json_values), "window_hours": json_values, "revision_of": json_values})
api_bodies = st.one_of(json_values.map(lambda v: json.dumps(v).encode()), proposal_bodies.map(lambda v: json.dumps(v).encode()), st.binary(max_size=200),
                       st.integers(1, 100_000).map(lambda n: b"[" * n))
subcommands = st.sampled_from(["help", "propose", "status", "list", "audit", "withdraw", "extend", "rules", "", "HELP", "stat"])
arguments = st.sampled_from(["mine", "waiting", "orders-value", "nobody", "1", "#1", "0", "99999999999999999999", "-1", "1.5", "'", '"',
                             "<!channel>", "\\", "\x00", "٣", "１", "x" * 300])
command_texts = st.one_of(st.text(max_size=200),
                          st.tuples(subcommands, st.lists(st.one_of(arguments, st.text(max_size=20)), max_size=3)).map(lambda c: " ".join([c[0], *c[1]])))


@FUZZ
@given(body=api_bodies, path=st.sampled_from(["/api/v1/proposals", "/api/v1/lineage"]))
def test_api_bodies_get_an_answer_never_a_500(fuzzed: tuple[ThreadedBot, Errors], body: bytes, path: str) -> None:
    threaded, errors = fuzzed
    status, answer = threaded.post(path, body, {"Authorization": f"Bearer {API_TOKEN}", "Content-Type": "application/json"})
    assert status in (200, 201, 400), (status, answer[:300])
    if status == 400:
        assert json.loads(answer)["error"]
    assert not errors.records, [r.getMessage() for r in errors.records]


@settings(FUZZ, max_examples=150)
@given(text=command_texts)
def test_slash_command_text_gets_a_human_answer(fuzzed: tuple[ThreadedBot, Errors], text: str) -> None:
    threaded, errors = fuzzed
    ws = threaded.emulator.ws
    before = len(ws.ephemerals)
    channel = ws.channel_id("changes")
    fields = {"command": "/schema", "text": text, "user_id": "U0000CAROL", "channel_id": channel, "team_id": "T0CHANGEOPS",
              "trigger_id": ws.issue_trigger("U0000CAROL"),
              "response_url": ws.issue_response_url(threaded.emulator.base_url, channel or "", "U0000CAROL")}
    body = urlencode(fields).encode()
    ts = str(int(time.time()))
    headers = {"Content-Type": "application/x-www-form-urlencoded", "X-Slack-Request-Timestamp": ts,
               "X-Slack-Signature": sign(threaded.bot.config.slack_signing_secret, ts, body)}
    status, answer = threaded.post("/slack/events", body, headers)
    assert status == 200
    if not answer:  # answered after the ack, through the response_url
        deadline = time.monotonic() + 10
        while len(ws.ephemerals) == before and not [v for v in ws.views.values() if v.open] and time.monotonic() < deadline:
            time.sleep(0.02)
    threaded.run(threaded.bot.idle())
    assert not errors.records, [r.getMessage() for r in errors.records]
    assert threaded.run(threaded.bot.proposals.listing()) == []


def test_100000_nested_brackets_are_a_400(fuzzed: tuple[ThreadedBot, Errors]) -> None:
    threaded, errors = fuzzed
    status, answer = threaded.post("/api/v1/proposals", b"[" * 100_000, {"Authorization": f"Bearer {API_TOKEN}"})
    assert status == 400 and "nested too deeply" in json.loads(answer)["error"] and not errors.records
