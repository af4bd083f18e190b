"""The Bolt app: middleware and the error handler first, then the listeners, wired to the services."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp

from bot.config import Config
from bot.services.deliveries import Deliveries
from bot.services.outbox import Outbox
from bot.services.proposals import Proposals
from bot.slack import calendar, choices, commands, flink, governance, home, ids, ops, proposals, readers, sli
from bot.slack.calendar.commands import CalendarCommands
from bot.slack.client import SlackConnections
from bot.slack.commands import Router
from bot.slack.flink.actions import FlinkActions
from bot.slack.flink.commands import FlinkCommands
from bot.slack.governance.health import HealthSlack
from bot.slack.governance.out_of_band import OutOfBandSlack
from bot.slack.home import HomeFollow
from bot.slack.identity import Identity
from bot.slack.inflight import Inflight
from bot.slack.middleware import OncePerDelivery
from bot.slack.ops.actions import OpsActions
from bot.slack.ops.commands import OpsCommands
from bot.slack.proposals.commands import Services
from bot.slack.readers.actions import Readers
from bot.slack.respond import PooledResponses
from bot.slack.sli.actions import AlertActions
from bot.slack.transitions import commands as transition_listeners
from bot.slack.transitions.commands import TransitionSlack

log = logging.getLogger(__name__)


def create_app(config: Config, deliveries: Deliveries, connections: SlackConnections, identity: Identity) -> AsyncApp:
    """An AsyncApp that ignores repeated deliveries (listeners come next); signatures are checked before it; ``identity``
    authorizes requests without calling Slack on the way to their ack; its Web API client and ``respond`` share
    ``connections``' pool."""
    client = connections.client()
    token, client.token = client.token, None  # Bolt warns that a token beside ``authorize`` goes unused: it is the client's
    app = AsyncApp(
        client=client,
        authorize=identity,
        signing_secret=config.slack_signing_secret or None,
        # the web server checks every request's signature before Bolt sees it (bot.web.server), and Socket Mode's come
        # over the app's own connection: Bolt's own check would do the first one again
        request_verification_enabled=False,
        logger=logging.getLogger("bot.slack.bolt"),
        process_before_response=True,  # listeners return at their ack (Inflight.listener): no 10 ms polling for it
    )
    client.token = token
    app.use(OncePerDelivery(deliveries))
    app.use(PooledResponses(connections))

    async def on_error(error: Exception, body: dict[str, Any]) -> None:
        log.exception("a Slack listener failed (%s)", body.get("type") or body.get("command"), exc_info=error)

    app.error(on_error)
    return app


def add_listeners(app: AsyncApp, services: Services, calendar_commands: CalendarCommands, alerts: AlertActions, operations: OpsActions,
                  consumers: Readers, health: HealthSlack, watcher: OutOfBandSlack, proposing: Proposals, outbox: Outbox,
                  inflight: Inflight, flink_commands: FlinkCommands, transitions: TransitionSlack, follow: HomeFollow) -> dict[str, Router]:
    """Every slash command, action, view and event, each counted while it runs: the slash commands' routers, then each
    feature's own listeners; returns the routers (the Home tab lists their help)."""
    routers = commands.register(app, services, calendar_commands, alerts.commands, OpsCommands(operations.ops, app.client), consumers, health,
                                flink_commands, transitions, inflight.listener)
    proposals.register(app, proposing, outbox, inflight.listener)  # Bolt tries listeners in order: the cards' buttons are the busiest
    transition_listeners.register(app, transitions, inflight.listener)
    readers.register(app, consumers, inflight.listener)
    governance.register(app, watcher, inflight.listener)
    sli.register(app, alerts, inflight.listener)
    ops.register(app, operations, inflight.listener)
    flink.register(app, FlinkActions(operations.ops, alerts.sli), inflight.listener)
    calendar.register(app, calendar_commands, inflight.listener)
    home.register(app, follow, inflight.listener, services)

    async def teams() -> list[str]:
        return list(await calendar_commands.calendar.lineage.teams())

    choices.register(app, {ids.SUBJECT_ACTION: services.registry.names, ids.SUBJECTS_ACTION: calendar_commands.calendar.subjects,
                           ids.OWNER_ACTION: teams, ids.TEAM_ACTION: teams}, inflight.listener)
    return routers
