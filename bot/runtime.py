"""The running bot: database, services, Bolt app, web server, scheduler and outbox dispatcher, started and
stopped together. A stop is orderly and bounded: readiness turns 503, no new request is accepted, requests
and listeners in flight finish, the sweep in hand finishes, what they owe is delivered, then the database
closes; all within ``SHUTDOWN_GRACE_SECONDS``."""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from aiohttp import web
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp

from bot import workers
from bot.config import Config
from bot.flink.planner import Planner
from bot.kafka import dead_letters
from bot.kafka.avro import Registry
from bot.kafka.metrics import MetricsConsumer
from bot.kafka.pollers import Pollers
from bot.receivers import ReceiverDelivery
from bot.schema_registry import SchemaRegistry
from bot.services import leases
from bot.services.calendar import CalendarService
from bot.services.census import CensusService
from bot.services.degradation import AutoPause
from bot.services.deliveries import Deliveries
from bot.services.flink import FlinkService
from bot.services.health import HealthService
from bot.services.lineage import LineageService
from bot.services.operations import Operations
from bot.services.out_of_band import OutOfBand
from bot.services.outbox import Dispatcher, Outbox
from bot.services.proposals import REGISTER, Proposals
from bot.services.registry import Registry as SubjectRegistry
from bot.services.releases import Releases
from bot.services.sli import SLI_EVENT, SliService
from bot.services.transitions import Transitions
from bot.slack.app import add_listeners, create_app
from bot.slack.calendar.commands import CalendarCommands
from bot.slack.client import SlackConnections
from bot.slack.delivery import CARD, SlackDelivery
from bot.slack.flink.commands import FlinkCommands
from bot.slack.governance.health import HealthSlack
from bot.slack.governance.out_of_band import OutOfBandSlack
from bot.slack.home import HOME, HomeFollow, HomeTab
from bot.slack.identity import Identity
from bot.slack.inflight import Inflight
from bot.slack.membership import SlackMembership
from bot.slack.ops.actions import OpsActions
from bot.slack.ops.delivery import OpsDelivery
from bot.slack.proposals.commands import Services
from bot.slack.proposals.releases import ReleaseReports
from bot.slack.readers.actions import Readers
from bot.slack.sli.actions import AlertActions
from bot.slack.sli.commands import SliCommands
from bot.slack.sli.delivery import SliDelivery
from bot.slack.transitions.commands import TransitionSlack
from bot.slack.transitions.delivery import TransitionDelivery
from bot.store import migrate
from bot.store.database import Database
from bot.store.models import utcnow
from bot.web.metrics import BotMetrics
from bot.web.server import build_web_app

log = logging.getLogger(__name__)
SWEEP_SECONDS = 30  # reminders and expiries are claimed in the database; any replica may run the sweep
SLI_SWEEP_SECONDS = 15  # no data, alert reminders, silences running out
OPS_SWEEP_SECONDS = 10
TRANSITION_SWEEP_SECONDS = 5  # a transition moves on when its step is registered or its last reader moved: seen within seconds  # replays whose bot went quiet are looked for this often


class Bot:
    """One replica of the bot."""

    def __init__(self, config: Config, clock: Callable[[], datetime] = utcnow) -> None:
        self.config = config
        self.db = Database(config.database_url)
        self.deliveries = Deliveries(Database(config.database_url, pool_size=2))  # its own connections: acks never queue behind work
        self.lineage = LineageService(self.db)
        self.registry = SubjectRegistry(self.db)
        self.inflight = Inflight()
        self.outbox = Outbox()
        self.draining = False
        self.connections = SlackConnections(config.slack_bot_token, config.slack_api_url)
        self.identity = Identity(self.connections.client())
        self.slack: AsyncApp = create_app(config, self.deliveries, self.connections, self.identity)
        membership = SlackMembership(self.slack.client)
        self.schema_registry = SchemaRegistry(config.schema_registry_url) if config.schema_registry_url else None
        self.calendar = CalendarService(self.db, self.lineage, clock)
        self.owner = leases.process_owner("bot")
        self.sli = SliService(self.db, self.lineage, self.outbox, clock, config.changes_channel)
        self.census = CensusService(self.db, self.lineage, self.sli, config.kafka_bootstrap_servers, self.owner, clock,
                                    timedelta(seconds=config.census_seconds))
        self.proposals = Proposals(self.db, self.registry, self.lineage, membership, self.outbox, self.calendar, clock, self.schema_registry,
                                   readers=self.census if config.kafka_bootstrap_servers else None)
        self.home = HomeFollow(self.db, self.outbox, clock)
        for watched in (self.calendar, self.lineage):  # the tab lists the next days' bookings and freezes, and jobs nobody owns
            watched.watchers.add(self.home.owe)
        delivery = SlackDelivery(self.connections.client(retries=False), self.proposals, config.changes_channel, self.home)
        alerts = SliDelivery(self.connections.client(retries=False), self.sli, membership)
        self.avro_registry = Registry(config.schema_registry_url) if config.schema_registry_url else None
        self.planner = Planner(config.flink_root)
        self.flink = FlinkService(self.db, self.lineage, config.flink_rest_url, config.flink_savepoint_dir, config.flink_root, self.planner,
                                  version=config.flink_version)
        self.ops = Operations(self.db, self.lineage, self.sli, self.outbox, self.calendar, membership, config.kafka_bootstrap_servers,
                              self.avro_registry, self.owner, timedelta(seconds=config.ops_lease_seconds), clock, self.flink)
        operations = OpsDelivery(self.connections.client(retries=False), self.ops)
        self.watcher = OutOfBand(self.db, self.lineage, self.registry, self.proposals, self.outbox, config.schema_registry_url,
                                 config.kafka_bootstrap_servers, self.owner, config.changes_channel, clock)
        out_of_band = OutOfBandSlack(self.connections.client(retries=False), self.watcher, membership)
        self.health = HealthService(self.db, self.lineage, self.sli, self.census, self.outbox, bool(config.schema_registry_url),
                                    bool(config.kafka_bootstrap_servers), config.changes_channel, clock)
        health = HealthSlack(self.connections.client(retries=False), self.health)
        self.transitions = Transitions(self.db, self.proposals, self.lineage, self.calendar, self.outbox,
                                       readers=self.census if config.kafka_bootstrap_servers else None, clock=clock)
        self.releases = Releases(self.db, self.lineage, self.registry, self.calendar, self.outbox, self.planner, config.flink_version, clock,
                                 self.flink, self.transitions.gate)
        self.pagers = ReceiverDelivery(self.sli, config)
        calendar = CalendarCommands(self.calendar, self.slack.client, membership, lambda: config.public_url or self.url)
        actions = AlertActions(SliCommands(self.sli, membership), self.proposals, self.calendar, self._dead_letters if config.kafka_bootstrap_servers else None)
        routers = add_listeners(self.slack, Services(self.proposals, self.registry, self.slack.client), calendar, actions, OpsActions(self.ops, self.sli),
                                Readers(self.census, self.proposals, self.registry, membership), HealthSlack(self.slack.client, self.health), out_of_band,
                                self.proposals, self.outbox, self.inflight, FlinkCommands(self.flink, self.ops),
                                TransitionSlack(self.transitions, self.slack.client), self.home)
        self.dispatcher = Dispatcher(self.db, self.outbox, {**delivery.handlers(), **alerts.handlers(), **operations.handlers(), **self.pagers.handlers(),
                                                            **out_of_band.handlers(), **health.handlers(), **ReleaseReports(self.releases).handlers(),
                                                            **AutoPause(self.ops, self.sli).handlers(),
                                                            **TransitionDelivery(self.connections.client(retries=False), self.transitions,
                                                                                 config.changes_channel).handlers(),
                                                            **HomeTab(self.connections.client(retries=False), routers, self.proposals, self.home).handlers(),
                                                            REGISTER: self.proposals.register},
                                     coalesce=frozenset({SLI_EVENT, CARD, HOME}))  # queued card edits and tab publications: one render, the newest state
        self.figures = BotMetrics(self.db, self.dispatcher, self.sli, self.connections, clock)
        self.web = build_web_app(self.slack, self.db, migrate.head(), config, self.lineage, self.proposals, self.sli, self.releases,
                                 lambda: self.draining, self.figures, self.deliveries.claim, self.transitions, self.inflight)
        # a job due while the loop was busy, or before the bot started (the census is due at once), runs late rather than being
        # skipped until its next interval: APScheduler 3 drops a run more than a second late unless told otherwise
        self.scheduler = AsyncIOScheduler(timezone="UTC", job_defaults={"misfire_grace_time": None})
        self.scheduler.add_job(self._scheduled(self.deliveries.prune), "interval", hours=1, kwargs={"older_than": timedelta(days=1)},
                               id="prune-slack-deliveries", coalesce=True, max_instances=1)
        self.scheduler.add_job(self._scheduled(self.proposals.sweep), "interval", seconds=SWEEP_SECONDS, id="sweep-proposals",
                               coalesce=True, max_instances=1)
        self.scheduler.add_job(self._scheduled(self.proposals.release_held), "interval", seconds=SWEEP_SECONDS, id="release-held",
                               coalesce=True, max_instances=1)
        self.scheduler.add_job(self._scheduled(self.transitions.sweep), "interval", seconds=TRANSITION_SWEEP_SECONDS, id="sweep-transitions",
                               coalesce=True, max_instances=1)
        self.scheduler.add_job(self._scheduled(self.sli.sweep), "interval", seconds=SLI_SWEEP_SECONDS, id="sweep-sli",
                               coalesce=True, max_instances=1)
        self.scheduler.add_job(self._scheduled(self.health.monthly), "interval", hours=1, id="health-report", coalesce=True, max_instances=1)
        self.pollers: Pollers | None = None
        self.metrics: MetricsConsumer | None = None
        if config.kafka_bootstrap_servers:
            self.scheduler.add_job(self._scheduled(self.poll), "interval", seconds=config.poll_seconds, id="poll-kafka",
                                   coalesce=True, max_instances=1)
            self.scheduler.add_job(self._scheduled(self.ops.follow), "interval", seconds=config.poll_seconds, id="follow-backfills",
                                   coalesce=True, max_instances=1)
            self.scheduler.add_job(self._scheduled(self.census.scheduled), "interval", seconds=config.census_seconds, id="census",
                                   kwargs={"every": timedelta(seconds=config.census_seconds)}, coalesce=True, max_instances=1,
                                   next_run_time=datetime.now(UTC))
        if config.kafka_bootstrap_servers or config.flink_rest_url:  # replays, and operations on Flink jobs, whose owner went quiet
            self.scheduler.add_job(self._scheduled(self.ops.resume_orphans), "interval", seconds=OPS_SWEEP_SECONDS, id="resume-operations",
                                   coalesce=True, max_instances=1)
        if config.flink_rest_url:
            self.scheduler.add_job(self._scheduled(self.poll_flink), "interval", seconds=config.poll_seconds, id="poll-flink",
                                   coalesce=True, max_instances=1)
        if config.schema_registry_url or config.kafka_bootstrap_servers:
            self.scheduler.add_job(self._scheduled(self.watcher.scheduled), "interval", seconds=config.watch_seconds, id="out-of-band",
                                   kwargs={"every": timedelta(seconds=config.watch_seconds)}, coalesce=True, max_instances=1)
        self._runner: web.AppRunner | None = None
        self._socket_mode: AsyncSocketModeHandler | None = None
        self.port: int | None = None

    @property
    def url(self) -> str:
        """Where the bot listens (after ``start``)."""
        host = "127.0.0.1" if self.config.host in ("0.0.0.0", "") else self.config.host
        return f"http://{host}:{self.port}"

    async def start(self, port: int | None = None) -> None:
        """Serve HTTP on ``port`` (0 for any free port; default from config), start the scheduler and the dispatcher."""
        workers.warm_up()
        await self.connections.open()
        self.identity.learn()
        self._runner = web.AppRunner(self.web, access_log=None, shutdown_timeout=self.config.shutdown_grace / 2)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.config.host, self.config.port if port is None else port)
        await site.start()
        self.port = int(self._runner.addresses[0][1])
        self.scheduler.start()
        self.dispatcher.start()
        if self.config.kafka_bootstrap_servers and self.config.metrics_topic:
            self.metrics = MetricsConsumer(self.config.kafka_bootstrap_servers, self.config.metrics_topic, self.config.metrics_group, self.sli,
                                           self.config.schema_registry_url)
            self.metrics.start()
        if self.config.slack_app_token:
            self._socket_mode = AsyncSocketModeHandler(self.slack, self.config.slack_app_token)
            await self._socket_mode.connect_async()  # type: ignore[no-untyped-call]
            log.info("ChangeOps connected to Slack over Socket Mode; listening on %s for /healthz, /readyz and the API", self.url)
        else:
            log.info("ChangeOps listening on %s (Slack request URL: %s/slack/events)", self.url, self.url)

    def _scheduled(self, job: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        """A scheduled job, counted while it runs; one cut short because the bot stops ends quietly (the scheduler
        would log its cancellation as a failure, with a traceback, at every Ctrl-C)."""
        tracked = self.inflight.track(job)

        @functools.wraps(job)
        async def run(*args: Any, **kwargs: Any) -> Any:
            try:
                return await tracked(*args, **kwargs)
            except asyncio.CancelledError:
                if not self.draining:
                    raise
                log.debug("%s was cut short: the bot is stopping", getattr(job, "__name__", job))
                return None

        return run

    async def stop(self) -> None:
        """Stop in order, within the grace period: readiness 503, no new requests, in-flight work finished, what it
        owes delivered, the database closed."""
        deadline = time.monotonic() + self.config.shutdown_grace
        self.draining = True
        if self._socket_mode is not None:
            await self._socket_mode.close_async()  # type: ignore[no-untyped-call]
            self._socket_mode = None
        if self.scheduler.running:
            self.scheduler.shutdown(wait=False)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self.metrics is not None:
            await self.metrics.stop()
            self.metrics = None
        await self.ops.stop_runs(timeout=max(0.0, deadline - time.monotonic()) / 2)
        await self.inflight.wait(timeout=max(0.0, deadline - time.monotonic()))
        await asyncio.to_thread(self.ops.close)
        if self.pollers is not None:
            await asyncio.to_thread(self.pollers.close)
            self.pollers = None
        await asyncio.to_thread(self.census.close)
        await self.dispatcher.stop(timeout=max(0.0, deadline - time.monotonic()))
        await self.planner.close()
        await self.pagers.close()
        await self.identity.close()
        if self.schema_registry is not None:
            await self.schema_registry.close()
        if self.avro_registry is not None:
            self.avro_registry.close()
        self.watcher.close()
        await self.connections.close()
        await self.deliveries.db.close()
        await self.db.close()
        log.info("ChangeOps stopped")

    async def poll(self) -> int:
        """Measure source lag and DLQ size on the cluster (one replica at a time) and evaluate them; how many samples."""
        assert self.config.kafka_bootstrap_servers
        ttl = timedelta(seconds=max(3 * self.config.poll_seconds, 30))
        if not await leases.hold(self.db, "sli-pollers", self.owner, ttl, self.sli.clock()):
            return 0
        if self.pollers is None:
            self.pollers = Pollers(self.config.kafka_bootstrap_servers)
        pipelines = list((await self.sli.pipelines()).values())
        samples = await asyncio.to_thread(self.pollers.measure, pipelines, self.sli.clock())
        return await self.sli.ingest(samples)

    async def poll_flink(self) -> int:
        """Read every Flink pipeline's job from Flink (one replica at a time) and evaluate its samples; how many samples."""
        ttl = timedelta(seconds=max(3 * self.config.poll_seconds, 30))
        if not await leases.hold(self.db, "flink-pollers", self.owner, ttl, self.sli.clock()):
            return 0
        jobs = {name: job for name in (await self.sli.pipelines()) if (job := await self.sli.flink_job(name)) is not None}
        return await self.sli.ingest(await self.flink.samples(jobs))

    async def _dead_letters(self, topic: str) -> list[str]:
        assert self.config.kafka_bootstrap_servers
        return await asyncio.to_thread(dead_letters.newest, self.config.kafka_bootstrap_servers, topic, self.avro_registry)

    async def idle(self) -> None:
        """Wait until nothing is in flight and nothing is owed (tests use this instead of sleeping)."""
        while True:
            await self.inflight.wait(timeout=60)
            await self.dispatcher.idle()
            if not self.inflight.busy():
                return
