"""The App Home tab."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any
from zoneinfo import ZoneInfo

from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.services.outbox import Handler, Item
from bot.services.proposals import Proposals
from bot.slack import ids
from bot.slack.calendar.commands import agenda_lines
from bot.slack.commands import Router
from bot.slack.delivery import NoSuchUser, call, dm
from bot.slack.home.follow import HOME, HomeFollow
from bot.slack.proposals.commands import Services, listed
from bot.slack.render import Reply, escape, section, when

MAX_UNOWNED = 10
HOME_LISTED = 10  # proposals each of the Home tab's lists shows


async def home_view(user: str, routers: dict[str, Router], proposals: Proposals) -> dict[str, Any]:
    """What the Home tab shows: what waits on the user, their proposals, recent decisions, the commands."""
    shown = (f"Schema changes without surprises; safe hands on Kafka. As of {when(proposals.clock())}; kept current as things "
             "change, for a day after you open the tab.")
    blocks: list[dict[str, Any]] = [{"type": "header", "text": {"type": "plain_text", "text": "ChangeOps"}},
                                    {"type": "context", "elements": [{"type": "mrkdwn", "text": shown}]}]
    waiting = await proposals.listing(waiting_for=user, limit=HOME_LISTED + 1)
    mine = await proposals.listing(proposer=user, limit=HOME_LISTED + 1)
    recent = [v for v in await proposals.listing(limit=30) if v.state.final][:HOME_LISTED]
    for title, views, rest in (("Waiting on you", waiting, "`/schema list waiting`"), ("Your proposals", mine, "`/schema list mine`"),
                               ("Recent decisions", recent, "")):
        blocks.extend(Reply.sections(f"*{title}*", listed(views, HOME_LISTED, rest) or ["_none_"]).blocks)
    blocks.extend(await _unowned_readers(user, proposals))
    blocks.extend(await _next_days(user, proposals))
    blocks.append({"type": "divider"})
    for router in routers.values():
        blocks.extend(router.help().blocks)
    return {"type": "home", "blocks": blocks[:100]}


async def _next_days(user: str, proposals: Proposals) -> list[dict[str, Any]]:
    """The change calendar's next seven days for the viewer's teams (their entries, and entries on their subjects)."""
    teams = await proposals.lineage.teams()
    mine = {name for name, team in teams.items() if user in await proposals.membership.members(team)}
    if not mine:
        return []
    now = proposals.clock()
    subjects = {view_subject for view_subject, owner in (await proposals.registry.owners()).items() if owner in mine}
    entries = [e for e in await proposals.calendar.listing(now, now + timedelta(days=7))
               if e["owner"] in mine or set(e["scope"]["subjects"]) & subjects]
    freezes = [(f, w) for f in await proposals.calendar.freezes() for w in f.occurrences(now, now + timedelta(days=7))
               if f.scope.empty or f.scope.teams & mine or f.scope.subjects & subjects]
    lines = agenda_lines(entries, freezes, now.date(), 7, ZoneInfo("UTC"))
    return Reply.sections("*Your teams' next seven days* (UTC; `/calendar` shows your time zone)", lines[:40] or ["_nothing booked_"]).blocks


async def _unowned_readers(user: str, proposals: Proposals) -> list[dict[str, Any]]:
    """For the owners of subjects: the jobs nobody owns that read them, each with a button to claim it."""
    teams = await proposals.lineage.teams()
    mine = sorted([name for name, team in teams.items() if user in await proposals.membership.members(team)])
    readers = await proposals.lineage.unowned_readers(set(mine)) if mine else []
    if not readers:
        return []
    blocks: list[dict[str, Any]] = [section("*Readers nobody owns of your subjects* — changes that reach them wait for the fallback approvers")]
    for job, subject in readers[:MAX_UNOWNED]:
        text = f"`{escape(job.id.name)}` ({escape(job.id.namespace)}) reads *{escape(subject)}* · learned from {escape(job.learned)}"
        button = {"type": "button", "action_id": ids.CLAIM_JOB, "text": {"type": "plain_text", "text": f"Claim for {mine[0]}"[:75]},
                  "value": json.dumps([job.id.namespace, job.id.name, mine[0]])[:2000]}
        blocks.append({**section(text), "accessory": button})
    if len(readers) > MAX_UNOWNED:
        blocks.append(section(f"… and {len(readers) - MAX_UNOWNED} more (`bot lineage coverage` lists them all)"))
    return blocks


class HomeTab:
    """The outbox's handler for Home tab publications: each renders the user's tab as things are when it runs."""

    def __init__(self, client: AsyncWebClient, routers: dict[str, Router], proposals: Proposals, follow: HomeFollow) -> None:
        self.client, self.routers, self.proposals, self.follow = client, routers, proposals, follow

    def handlers(self) -> Mapping[str, Handler]:
        """Kind -> handler, for the dispatcher."""
        return {HOME: self.publish}

    async def publish(self, item: Item) -> None:
        """Publish the tab once for the rows coalesced here (they are all one user's)."""
        user = str(item.payload["user"])
        try:
            await call(self.client, "views.publish", user_id=user, view=await home_view(user, self.routers, self.proposals))
        except NoSuchUser:
            await self.follow.forget(user)  # gone from the workspace: owed nothing more
            raise


def register(app: AsyncApp, follow: HomeFollow, track: Callable[[Any], Any], services: Services) -> None:
    """Publish the Home tab whenever a user opens it, and answer its buttons."""

    async def on_home_opened(event: dict[str, Any]) -> None:
        if event.get("tab", "home") == "home":
            await follow.opened(event["user"])

    async def on_claim(ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        user = body["user"]["id"]
        try:
            namespace, name, team = json.loads(body["actions"][0]["value"])
            told = await services.claim_job(user, f"{namespace}/{name}", str(team))
        except (ValueError, TypeError):
            told = "That button does not name a job; nothing changed."
        await dm(follow.outbox, follow.db, user, told)  # what the click did, told even when Slack is away now
        await follow.opened(user)  # the tab the button is on, without the job claimed

    app.event("app_home_opened")(track(on_home_opened))
    app.action(ids.CLAIM_JOB)(track(on_claim))
