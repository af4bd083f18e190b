"""``GET /metrics``: the bot's own health in the Prometheus text format (prometheus-client writes it).

Counters come from where things happen (the outbox dispatcher's deliveries, Slack's 429s on the shared connection
pool, samples the SLI service took or refused, each HTTP request's latency); gauges are read from the database when
Prometheus scrapes (the outbox's depth and the age of its oldest row, open alert episodes, the census's age,
operations running), so every replica reports the same shared state and its own counters.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterator
from datetime import datetime
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import func
from sqlmodel import col, select

from bot.domain.ops import OpState
from bot.services.outbox import Dispatcher
from bot.services.sli import SliService
from bot.slack.client import SlackConnections
from bot.store.database import Database
from bot.store.models import CensusRun, Operation, OutboxMessage, SliEpisode, aware

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class BotMetrics(Collector):
    """Every figure of one replica; ``refresh`` reads the shared ones from the database before a scrape."""

    def __init__(self, db: Database, dispatcher: Dispatcher, sli: SliService, connections: SlackConnections,
                 clock: Callable[[], datetime]) -> None:
        self.db, self.dispatcher, self.sli, self.connections, self.clock = db, dispatcher, sli, connections, clock
        self.registry = CollectorRegistry(auto_describe=False)
        self.latency = Histogram("changeops_http_request_duration_seconds", "Time to answer an HTTP request, by route and status",
                                 ["route", "method", "status"], buckets=LATENCY_BUCKETS, registry=self.registry)
        self.registry.register(self)
        self.shared: dict[str, Any] = {}

    async def refresh(self) -> None:
        """Read the outbox, the open episodes, the newest census and the running operations."""
        now = self.clock()
        async with self.db.session() as session:
            depth, oldest = (await session.exec(select(func.count(), func.min(OutboxMessage.created_at))
                                                .where(col(OutboxMessage.state) == "pending"))).one()
            failed = (await session.exec(select(func.count()).where(col(OutboxMessage.state) == "failed"))).one()
            acked = col(SliEpisode.acked_by).is_not(None)
            episodes = (await session.exec(select(SliEpisode.level, SliEpisode.no_data, acked, func.count())
                                           .where(col(SliEpisode.resolved_at).is_(None))
                                           .group_by(col(SliEpisode.level), col(SliEpisode.no_data), acked))).all()
            census = (await session.exec(select(CensusRun).where(col(CensusRun.ok)).order_by(col(CensusRun.at).desc()).limit(1))).first()
            operations = (await session.exec(select(Operation.kind, func.count()).where(col(Operation.state) == OpState.RUNNING.value)
                                             .group_by(Operation.kind))).all()
        self.shared = {
            "depth": depth, "oldest": (now - aware(oldest)).total_seconds() if oldest is not None else 0.0, "failed": failed,
            "episodes": [(level, bool(no_data), bool(acked), count) for level, no_data, acked, count in episodes],
            "census": (now - aware(census.at)).total_seconds() if census is not None else None,
            "operations": dict(operations),
        }

    def collect(self) -> Iterator[Metric]:
        """The figures, as prometheus-client writes them."""
        shared = self.shared
        yield _gauge("changeops_outbox_pending", "Messages the bot owes and has not delivered yet", shared.get("depth", 0))
        yield _gauge("changeops_outbox_oldest_pending_age_seconds", "Age of the oldest message still owed (0 when none)", shared.get("oldest", 0.0))
        yield _gauge("changeops_outbox_failed", "Messages given up on (undeliverable; in the audit log)", shared.get("failed", 0))
        deliveries = CounterMetricFamily("changeops_outbox_deliveries", "Delivery attempts by this replica, by kind and result", labels=["kind", "result"])
        for (kind, result), count in sorted(self.dispatcher.results.items()):
            deliveries.add_metric([kind, result], count)
        yield deliveries
        limited = CounterMetricFamily("changeops_slack_rate_limited", "Slack Web API answers 429 (rate limited), by method", labels=["method"])
        for method, count in sorted(self.connections.rate_limited.items()):
            limited.add_metric([method], count)
        yield limited
        episodes = GaugeMetricFamily("changeops_sli_episodes_open", "Open alert episodes, by level and state", labels=["level", "state"])
        for level, no_data, acked, count in shared.get("episodes", []):
            episodes.add_metric([level, "no_data" if no_data else "acknowledged" if acked else "unacknowledged"], count)
        yield episodes
        samples = CounterMetricFamily("changeops_sli_samples", "SLI samples evaluated, and those refused by reason", labels=["result", "reason"])
        samples.add_metric(["ingested", ""], self.sli.ingested)
        for reason, count in sorted(self.sli.rejected.items()):
            samples.add_metric(["refused", reason], count)
        yield samples
        if shared.get("census") is not None:
            yield _gauge("changeops_census_age_seconds", "Age of the newest successful census of consumer groups", shared["census"])
        running = GaugeMetricFamily("changeops_operations_running", "Backfills and replays running now", labels=["kind"])
        for kind, count in sorted(shared.get("operations", {}).items()):
            running.add_metric([kind], count)
        yield running

    def route(self) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        """The ``/metrics`` handler."""

        async def metrics(_request: web.Request) -> web.StreamResponse:
            await self.refresh()
            return web.Response(body=generate_latest(self.registry), headers={"Content-Type": CONTENT_TYPE_LATEST})

        return metrics

    def middleware(self) -> Any:
        """Times every request by its route's pattern (``/api/v1/proposals/{id}``, never the raw path)."""

        @web.middleware
        async def timed(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
            started = time.perf_counter()
            status = 500
            try:
                response = await handler(request)
                status = response.status
                return response
            except web.HTTPException as err:
                status = err.status
                raise
            finally:
                resource = request.match_info.route.resource
                route = resource.canonical if resource is not None else "unmatched"
                self.latency.labels(route, request.method, str(status)).observe(time.perf_counter() - started)

        return timed


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)
