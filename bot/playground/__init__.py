"""The local playground: the bot and the Slack emulator in one process, on this machine.

Open the page the emulator serves (``http://127.0.0.1:3001/``): a Slack-like workspace where you act as
one of the demo people. Or type slash commands at the prompt (``/schema help``), or POST them to the
emulator: ``curl -s localhost:3001/_emulator/command -d '{"text": "/schema help"}'``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import secrets
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any

from aiohttp import web

from bot.config import Config
from bot.emulator import Emulator, SlackDriver, Workspace
from bot.emulator.render import as_text
from bot.playground import kafka_demo
from bot.playground.demo import book_demo_calendar
from bot.playground.journeys import ALERTS, CARDS, GUIDE, Journeys, post_welcome
from bot.playground.page import PlaygroundPage
from bot.runtime import Bot
from bot.store import migrate

DEMO_USER = "U0000000YOU"
PEOPLE = {"you": DEMO_USER, "alice": "U0000ALICE", "bob": "U00000BOB", "carol": "U0000CAROL", "dave": "U00000DAVE"}
ROLES = {  # who is who in examples/catalog.yaml: the page's person switcher
    "you": ("upstream engineer", "orders-team: you own orders-value and propose its changes"),
    "carol": ("downstream owner", "analytics-team and growth-team: dwd_orders, ads_daily_sales, the recommendations black box"),
    "bob": ("downstream owner, oncall", "analytics-team, and the global oncall: backfills and replays of any pipeline"),
    "alice": ("upstream oncall", "orders-team and its oncall: the enrich-orders pipeline"),
    "dave": ("outsider", "in no team: may look, may not approve or run anything"),
}
SETTLE = 0.1
IDLE_SECONDS = 15.0
DEMO_PIPELINE, FEED_SECONDS = "enrich-orders", 60.0
WATCH_SECONDS = 0.5


def seed(ws: Workspace) -> None:
    """The people, channels and user group of examples/catalog.yaml (you are in orders-team, dave in no team), and the
    welcome in the cards' channel."""
    for name, user in PEOPLE.items():
        ws.add_user(user, name, is_admin=name == "you")
    everyone = list(PEOPLE.values())
    ws.add_user(GUIDE, "playground", is_bot=True)
    for channel in (CARDS, ALERTS, "analytics"):  # cards (the bot's changes channel), alerts and oncall, a team's
        ws.add_channel(channel, everyone)
    ws.add_usergroup("orders-team", [DEMO_USER, PEOPLE["alice"]], group_id="S0ORDERS")
    for user in everyone:
        ws.open_dm(user)
    post_welcome(ws)


def people() -> list[dict[str, str]]:
    """The demo people as the page lists them."""
    return [{"id": PEOPLE[name], "name": name, "role": role, "detail": detail} for name, (role, detail) in ROLES.items()]


def kafka_note(config: Config) -> str:
    """What the page says about Kafka: which features it backs here, or how to get them."""
    if config.kafka_bootstrap_servers:
        return (f"Kafka: `{config.kafka_bootstrap_servers}` · the lag and DLQ of `enrich-orders` are polled; "
                "`/backfill`, `/replay` and the reader census run against it")
    return ("Kafka is not running here: `/backfill`, `/replay`, the reader census and the lag and DLQ pollers need a broker "
            "(SLI samples can still be posted to the HTTP API). With Java installed, `make run` starts one.")


class Playground:
    """A bot wired to an emulated workspace."""

    def __init__(self, config: Config, *, seed_kafka: bool = False) -> None:
        self.seed_kafka = seed_kafka  # fill the broker `make run` started with the demo topics
        token, secret = f"xoxb-playground-{secrets.token_hex(8)}", secrets.token_hex(16)
        self.ws = Workspace(token)
        seed(self.ws)
        self.emulator = Emulator(self.ws)
        self.config = dataclasses.replace(config, slack_bot_token=token, slack_signing_secret=secret, host="127.0.0.1")
        self.bot: Bot | None = None
        self.driver: SlackDriver | None = None
        self._runner: web.AppRunner | None = None
        self.page: PlaygroundPage | None = None
        self._feeder: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()

    async def start(self, port: int, slack_port: int) -> None:
        """Migrate, then start the emulator and the bot pointed at it."""
        await asyncio.to_thread(migrate.upgrade, self.config.database_url)
        app = self.emulator.application()
        app.router.add_post("/_emulator/command", self._command)
        self.page = PlaygroundPage(self.emulator, people(), kafka_note(self.config))
        self.page.add_routes(app)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", slack_port).start()
        self.emulator.base_url = f"http://127.0.0.1:{int(self._runner.addresses[0][1])}"
        if self.seed_kafka and self.config.kafka_bootstrap_servers:  # before the bot polls: no topic is new to its pollers
            print(await asyncio.to_thread(kafka_demo.seed, self.config.kafka_bootstrap_servers))
        self.bot = Bot(dataclasses.replace(self.config, slack_api_url=f"{self.emulator.base_url}/api/"))
        await self.bot.start(port)
        self.driver = SlackDriver(self.emulator, f"{self.bot.url}/slack/events", self.config.slack_signing_secret)
        self.page.driver = self.driver
        self.page.journeys = Journeys(self.ws, self.driver, self.bot, PEOPLE)
        if await self.bot.lineage.teams():  # a catalog is loaded: book the demo calendar once
            await book_demo_calendar(self.bot.calendar, DEMO_USER)
        if DEMO_PIPELINE in (await self.bot.sli.pipelines()):
            self._feeder = asyncio.create_task(self._feed(self.bot))

    async def _feed(self, bot: Bot) -> None:
        """The demo pipeline's own healthy samples, each minute (what its job would report), until the stop: a
        batch in hand is finished, never cancelled halfway through its database session."""
        while not self._stopping.is_set():
            await bot.sli.ingest(kafka_demo.healthy_samples(DEMO_PIPELINE, bot.sli.clock()))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), FEED_SECONDS)

    async def stop(self) -> None:
        """Stop everything started."""
        self._stopping.set()
        if self._feeder is not None:
            await self._feeder
        if self.driver:
            await self.driver.close()
        if self.bot:
            await self.bot.stop()
        if self._runner:
            await self._runner.cleanup()

    async def send(self, text: str, user: str = DEMO_USER, channel: str = CARDS) -> list[str]:
        """Send one slash command and return what appeared in Slack because of it."""
        assert self.driver is not None
        if not text.startswith("/"):
            return ["Type a slash command, such as /schema help (or @bob /schema list waiting to act as bob)."]
        seen_messages, seen_ephemerals = len(self.ws.messages), len(self.ws.ephemerals)
        delivery = await self.driver.command(text, user=user, channel=channel)
        if delivery.status != 200:
            return [f"(Slack would show: the command failed with HTTP {delivery.status})"]
        await asyncio.sleep(SETTLE)  # what the acknowledgement set going (a response_url reply, a message owed) ...
        assert self.bot is not None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.bot.idle(), IDLE_SECONDS)  # ... has been delivered, however busy the machine
        shown = [as_text(e.text, e.blocks) for e in self.ws.ephemerals[seen_ephemerals:] if e.user == user]
        shown += [as_text(m.text, m.blocks) for m in self.ws.messages[seen_messages:]]
        return shown

    async def _command(self, request: web.Request) -> web.Response:
        body: dict[str, Any] = await request.json()
        user = str(body.get("user", DEMO_USER))
        replies = await self.send(str(body.get("text", "")), PEOPLE.get(user, user), str(body.get("channel", CARDS)))
        return web.json_response({"replies": replies}, dumps=lambda o: json.dumps(o, ensure_ascii=False))


def who(line: str) -> tuple[str, str]:
    """``@bob /schema list waiting`` runs the command as bob; a plain line runs it as you."""
    if line.startswith("@"):
        name, _, rest = line[1:].partition(" ")
        if name in PEOPLE:
            return PEOPLE[name], rest.strip()
    return DEMO_USER, line


async def run_playground(config: Config, port: int, slack_port: int, *, prompt: bool, seed_kafka: bool = False,
                         stop_with: Sequence[int] = ()) -> None:
    """Run until SIGTERM, SIGINT or SIGHUP, the end of the terminal's input (with ``prompt``: read slash commands
    from it), or the end of any process in ``stop_with`` (``make run`` names its own shell and its Kafka broker,
    so the whole stops together whichever part is stopped)."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(signum, stop.set)  # also when the shell that started us in the background ignores SIGINT
    watching = asyncio.create_task(_stop_when_gone(stop_with, stop))
    playground = Playground(config, seed_kafka=seed_kafka)
    try:
        starting = asyncio.create_task(playground.start(port, slack_port))
        await asyncio.wait([starting, asyncio.create_task(stop.wait())], return_when=asyncio.FIRST_COMPLETED)
        if not starting.done():
            starting.cancel()
            await asyncio.gather(starting, return_exceptions=True)
            print("Stopped while starting.")
            return
        await starting
        assert playground.bot is not None
        print(f"ChangeOps playground: open {playground.emulator.base_url}/ in a browser (the bot on {playground.bot.url})")
        print(f"Database: {config.database_url}")
        print(f"""Send a command: curl -s {playground.emulator.base_url}/_emulator/command -d '{{"text": "/schema help"}}'""")
        print("What people do in the page is told below; stop with Ctrl-C.", flush=True)
        if prompt:
            print("Type a slash command (e.g. /schema help), or act as someone else: @bob /schema list waiting. Ctrl-D to quit.")
            typing = asyncio.create_task(_read_prompt(playground, stop))
            await stop.wait()
            typing.cancel()
        else:
            await stop.wait()
    finally:
        watching.cancel()
        await playground.stop()


async def _stop_when_gone(pids: Sequence[int], stop: asyncio.Event) -> None:
    """Set ``stop`` once any of ``pids`` has ended."""
    while pids:
        for pid in pids:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                print(f"Process {pid} ended: stopping the playground.", flush=True)
                stop.set()
                return
            except PermissionError:  # alive, someone else's
                pass
        await asyncio.sleep(WATCH_SECONDS)


async def _read_prompt(playground: Playground, stop: asyncio.Event) -> None:
    """Slash commands typed at the terminal, until its input ends. The terminal is read by a daemon thread: a
    blocked read never holds up the stop."""
    loop = asyncio.get_running_loop()
    lines: asyncio.Queue[str] = asyncio.Queue()

    def read() -> None:
        for line in sys.stdin:
            loop.call_soon_threadsafe(lines.put_nowait, line)
        loop.call_soon_threadsafe(lines.put_nowait, "")

    threading.Thread(target=read, name="playground-prompt", daemon=True).start()
    while True:
        sys.stdout.write("you> ")
        sys.stdout.flush()
        line = await lines.get()
        if not line:
            stop.set()
            return
        user, text = who(line.strip())
        if text:
            for reply in await playground.send(text, user):
                print(reply, end="\n\n")
