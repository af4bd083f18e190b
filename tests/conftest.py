"""Shared fixtures: real PostgreSQL and Kafka (started by scripts/test.sh), databases, the Slack emulator."""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from aiohttp import web
from hypothesis import settings
from slack_sdk.web.async_client import AsyncWebClient

from bot.config import Config
from bot.emulator import Emulator, SlackDriver, Workspace
from bot.runtime import Bot
from bot.store import migrate
from tests.registry import RealRegistry, registry_url

NEEDS_SERVICES = "run the whole suite with `make test`, which starts PostgreSQL, Kafka and Flink"

# CI replays the same examples every run (no flaky discoveries there); developers keep exploring.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")


def _service(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} is not set: {NEEDS_SERVICES}")
    return value


@pytest.fixture(scope="session")
def kafka_bootstrap() -> str:
    """The bootstrap address of the real Kafka broker."""
    return _service("KAFKA_BOOTSTRAP_SERVERS")


@pytest.fixture(scope="session")
def flink_rest_url() -> str:
    """The REST address of the real Flink cluster (``scripts/flink.sh cluster start``)."""
    return _service("TEST_FLINK_REST_URL")


@pytest.fixture(scope="session")
def postgres_admin_url() -> str:
    """A superuser URL of the real PostgreSQL server."""
    return _service("TEST_DATABASE_URL")


@pytest.fixture
def postgres_url(postgres_admin_url: str) -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test."""
    name = f"t_{secrets.token_hex(6)}"
    with psycopg.connect(postgres_admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base, _, _ = postgres_admin_url.rpartition("/")
    yield f"{base}/{name}"
    with psycopg.connect(postgres_admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty database: each test using it runs on SQLite and on PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'changeops.db'}"
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite database migrated once per test process, for ``migrated_url`` to copy."""
    path = tmp_path_factory.mktemp("template") / "changeops.db"
    migrate.upgrade(f"sqlite:///{path}")
    assert migrate.current(f"sqlite:///{path}") == migrate.head()
    return path


@pytest.fixture(scope="session")
def postgres_template(postgres_admin_url: str) -> Iterator[str]:
    """A PostgreSQL database migrated once per test process, for ``migrated_url`` to clone (``CREATE DATABASE ... TEMPLATE``)."""
    name = f"template_{secrets.token_hex(6)}"
    with psycopg.connect(postgres_admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base, _, _ = postgres_admin_url.rpartition("/")
    migrate.upgrade(f"{base}/{name}")
    yield name
    with psycopg.connect(postgres_admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def migrated_url(database_url: str, request: pytest.FixtureRequest) -> str:
    """A database at the newest migration: a copy of one migrated once per test process (the same tables and revision as
    migrating it here, in a fraction of the time; the migrations themselves are tested on empty databases)."""
    if database_url.startswith("sqlite:///"):
        shutil.copyfile(request.getfixturevalue("sqlite_template"), database_url.removeprefix("sqlite:///"))
        return database_url
    template, name = request.getfixturevalue("postgres_template"), database_url.rpartition("/")[2]
    with psycopg.connect(request.getfixturevalue("postgres_admin_url"), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE "{name}"')
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    return database_url


class Clock:
    """A clock tests can move."""

    def __init__(self) -> None:
        self.now = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@dataclass
class SlackHarness:
    """A running bot, the emulated workspace it talks to, and a driver that plays Slack."""

    ws: Workspace
    emulator: Emulator
    driver: SlackDriver
    bot: Bot
    config: Config
    clock: Clock
    runner: web.AppRunner

    async def refuse_connections(self) -> None:
        """Take the emulated Slack off the network: every call is a refused connection."""
        await self.runner.cleanup()

    async def delete(self, channel: str, ts: str) -> None:
        """Someone deletes a message in Slack (over the Web API, as a workspace admin's client would)."""
        client = AsyncWebClient(token=self.config.slack_bot_token, base_url=f"{self.emulator.base_url}/api/")
        assert (await client.chat_delete(channel=channel, ts=ts))["ok"]

    async def accept_connections(self) -> None:
        """Bring the emulated Slack back on the same port."""
        port = int(self.emulator.base_url.rsplit(":", 1)[1])
        self.runner = web.AppRunner(self.emulator.application(), access_log=None)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", port).start()


API_TOKEN = "test-api-token-0123456789"
USERS = {"U0000ALICE": "alice", "U00000BOB": "bob", "U0000CAROL": "carol"}


def seed_workspace(ws: Workspace) -> None:
    """Three people, a changes channel, a pipeline channel, two user groups."""
    for user_id, name in USERS.items():
        ws.add_user(user_id, name)
    ws.add_channel("changes", list(USERS))
    ws.add_channel("schema-changes", list(USERS))
    ws.add_channel("orders-pipeline", ["U0000ALICE", "U00000BOB"])
    ws.add_usergroup("orders-team", ["U0000ALICE"])
    ws.add_usergroup("analytics-team", ["U00000BOB", "U0000CAROL"])


async def start_emulator(ws: Workspace) -> tuple[Emulator, web.AppRunner]:
    """Serve the emulator on an ephemeral port."""
    emulator = Emulator(ws)
    runner = web.AppRunner(emulator.application(), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    emulator.base_url = f"http://127.0.0.1:{int(runner.addresses[0][1])}"
    return emulator, runner


def bot_config(emulator: Emulator, database_url: str, **overrides: str) -> Config:
    """The environment a bot pointed at the emulator would have."""
    env = {
        "SLACK_BOT_TOKEN": emulator.ws.token,
        "SLACK_SIGNING_SECRET": "8f742231b10e8888abcd99yyyzzz85a5",
        "DATABASE_URL": database_url,
        "SLACK_API_URL": f"{emulator.base_url}/api/",
        "HOST": "127.0.0.1",
        "CHANGEOPS_API_TOKEN": API_TOKEN,
        "CHANGEOPS_FLINK_ROOT": os.environ.get("CHANGEOPS_FLINK_ROOT", ""),  # the runtime scripts/flink.sh installed
        **overrides,
    }
    return Config.from_env(env)


async def until(predicate: Callable[[], bool], seconds: float = 20.0) -> None:
    """Wait for the bot's own state (not the emulator's) to hold, ``seconds`` at most."""
    for _ in range(int(seconds / 0.01)):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"the bot did not get there in {seconds:.0f} s")


@asynccontextmanager
async def running_bot(ws: Workspace, database_url: str, **overrides: str) -> AsyncIterator[SlackHarness]:
    """A bot started on ``database_url`` against the emulated workspace ``ws``, stopped after."""
    emulator, runner = await start_emulator(ws)
    config = bot_config(emulator, database_url, **overrides)
    clock = Clock()
    bot = Bot(config, clock)
    await bot.start(0)
    driver = SlackDriver(emulator, f"{bot.url}/slack/events", config.slack_signing_secret)
    harness = SlackHarness(ws, emulator, driver, bot, config, clock, runner)
    try:
        yield harness
    finally:
        await driver.close()
        await harness.bot.stop()
        await harness.runner.cleanup()


@pytest.fixture
async def slack(migrated_url: str) -> AsyncIterator[SlackHarness]:
    """The bot on a migrated database, talking to a seeded emulated workspace over HTTP."""
    ws = Workspace(f"xoxb-test-{secrets.token_hex(6)}")
    seed_workspace(ws)
    async with running_bot(ws, migrated_url) as harness:
        await until(lambda: harness.bot.identity.answer is not None)  # the bot asks Slack who it is as it starts: tests count calls after
        for job in ("sweep-proposals", "release-held"):  # the tests own the clock and run these sweeps themselves
            harness.bot.scheduler.pause_job(job)
        yield harness


@pytest.fixture(scope="session")
def registry_server() -> Iterator[str]:
    """The URL of this process's real Schema Registry (Apicurio; see tests/registry.py)."""
    with registry_url() as url:
        yield url


@pytest.fixture
async def schema_registry(registry_server: str) -> AsyncIterator[RealRegistry]:
    """The real Schema Registry, with no subjects (its address in ``.url``)."""
    registry = RealRegistry(registry_server)
    await registry.clear()
    yield registry
