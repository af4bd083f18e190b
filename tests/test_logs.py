"""Secrets never reach logs or cards, tracebacks included; an unauthenticated request cannot flood the log."""

from __future__ import annotations

import asyncio
import base64
import io
import logging
import time
from collections.abc import Iterator
from typing import Any

import aiohttp
import pytest

from bot.config import Config
from bot.logs import REDACTED, install_redaction
from bot.schema_registry import RegistrationError, SchemaRegistry
from tests.conftest import SlackHarness
from tests.registry import Outage, RealRegistry

ENV = {"SLACK_BOT_TOKEN": "xoxb-1-abcdefghijkl", "SLACK_SIGNING_SECRET": "0123456789abcdef",
       "DATABASE_URL": "postgresql://changeops:db-pass-4711@db.internal:5432/changeops",
       "SCHEMA_REGISTRY_URL": "https://registry-user:sr%2Fpass-0815@registry.internal/",
       "CHANGEOPS_API_TOKENS": "ci:proposals:write=ci-token-0123456789abc"}


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    """The root logger's output through the bot's own formatter, at INFO."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    install_redaction(Config.from_env(ENV).secrets, handler)
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield stream
    root.removeHandler(handler)
    root.setLevel(level)


def test_passwords_in_urls_and_api_tokens_are_redacted(captured: io.StringIO) -> None:
    log = logging.getLogger("bot.test")
    log.info("connecting to %s and %s with %s", ENV["DATABASE_URL"], ENV["SCHEMA_REGISTRY_URL"], "ci-token-0123456789abc")
    text = captured.getvalue()
    assert "db-pass-4711" not in text and "sr%2Fpass-0815" not in text and "sr/pass-0815" not in text
    assert "ci-token-0123456789abc" not in text and text.count(REDACTED) == 3


def test_tracebacks_are_redacted_too(captured: io.StringIO) -> None:
    try:
        raise RuntimeError("could not connect with password db-pass-4711")
    except RuntimeError:
        logging.getLogger("bot.test").exception("the database failed")
    text = captured.getvalue()
    assert "Traceback" in text and "RuntimeError" in text and "db-pass-4711" not in text


async def test_the_registry_url_credentials_are_used_but_never_shown(schema_registry: RealRegistry) -> None:
    proxy = Outage(schema_registry.url)  # the real registry, with the requests' headers in view
    await proxy.restore()
    await schema_registry.register("orders-value", {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]})
    client = SchemaRegistry(proxy.url.replace("http://", "http://registry-user:sr%2Fpass-0815@"))
    try:
        with pytest.raises(RegistrationError) as refused:  # a real refusal: a record's field retyped, under FULL
            await client.register("orders-value", '{"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}]}', "FULL")
        assert "sr%2Fpass-0815" not in str(refused.value) and "registry-user" not in str(refused.value)
        assert str(refused.value).startswith(f"{proxy.url} refused it: incompatible with an earlier version under FULL (HTTP 409")
        assert not refused.value.retryable
        assert client.url == proxy.url
        assert b"Authorization: Basic " + base64.b64encode(b"registry-user:sr/pass-0815") in bytes(proxy.seen)
    finally:
        await client.close()
        await proxy.cut()


async def test_a_badly_signed_4_mib_request_leaves_one_short_line(slack: SlackHarness, captured: io.StringIO) -> None:
    body = b"payload=" + b"A" * (4 * 1024 * 1024 - 100) + b"\nFAKE LOG LINE"
    headers = {"Content-Type": "application/x-www-form-urlencoded", "X-Slack-Request-Timestamp": str(int(time.time())),
               "X-Slack-Signature": "v0=" + "0" * 64}
    async with aiohttp.ClientSession() as http, http.post(slack.driver.request_url, data=io.BytesIO(body), headers=headers) as response:
        assert response.status == 401
    lines = [line for line in captured.getvalue().splitlines() if line.strip()]
    signature_lines = [line for line in lines if "signature" in line]
    assert len(signature_lines) == 1 and len(signature_lines[0]) < 300
    assert not any("FAKE LOG LINE" in line or "AAAAAAAAAA" in line for line in lines)
    assert sum(len(line) for line in lines) < 2000


def test_config_repr_shows_no_secret() -> None:
    shown: Any = repr(Config.from_env(ENV))
    assert "ci-token" not in shown and "abcdefghijkl" not in shown


async def test_the_schedulers_routine_lines_are_debug_and_its_errors_stay(captured: io.StringIO) -> None:
    from apscheduler.schedulers.asyncio import AsyncIOScheduler

    ran = asyncio.Event()

    async def fine() -> None:
        ran.set()

    async def broken() -> None:
        raise RuntimeError("the sweep broke")

    async def run_both() -> None:
        scheduler = AsyncIOScheduler(timezone="UTC")
        scheduler.add_job(fine, id="fine-job")
        scheduler.add_job(broken, id="broken-job")
        scheduler.start()
        await ran.wait()
        for _ in range(100):
            if "the sweep broke" in captured.getvalue():
                break
            await asyncio.sleep(0.02)
        scheduler.shutdown(wait=False)

    await run_both()
    shown = captured.getvalue()
    assert "the sweep broke" in shown and "ERROR apscheduler" in shown  # a job that raised is still told
    assert "Running job" not in shown and "executed successfully" not in shown and "Scheduler started" not in shown

    logging.getLogger().setLevel(logging.DEBUG)
    ran.clear()
    await run_both()
    assert "DEBUG apscheduler.executors.default: Running job" in captured.getvalue()
