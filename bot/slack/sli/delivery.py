"""The Slack side of SLI alerts, as outbox handlers.

Events of one channel queue under one key and reach the planner together (the outbox coalesces them), so a
storm is planned as a whole: new episodes get a message each, or, when more than ``STORM`` open at once,
one digest (pages first); each oncall member of a team with a new page gets one DM; then messages already
posted are edited in place, once per batch whatever the number of its events, showing the newest state (edits
yield to new posts and pages); the thread of each message gets one timeline note per batch. Every planned row
is one Web API call, retried on its own; posts to one channel are spaced about a second apart (Slack's
posting limit), and a 429 waits for ``Retry-After``."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bot.domain.lineage.model import Team
from bot.domain.sli.escalation import GLOBAL
from bot.domain.sli.evaluator import Kind, Level, State
from bot.domain.sli.pipeline import TITLES, Sli
from bot.services.outbox import Expand, GiveUp, Handler, Item
from bot.services.proposals import Membership
from bot.services.sli import SLI_EVENT, SliService
from bot.slack.delivery import Gone, call, kept, message_row
from bot.slack.render import Reply, escape, mention, when
from bot.slack.sli.messages import digest_message, episode_message, headline, step, value_text
from bot.store.models import SliEpisode

SLI_MESSAGE, SLI_DIGEST, SLI_NOTE = "sli.message", "sli.digest", "sli.note"
STORM = 3  # more new episodes than this in one channel at once are shown in one digest message
POST_SPACING = 1.0  # seconds between two posts to one channel
SHOWN_KEPT = 5_000  # messages whose last edit is remembered


class SliDelivery:
    """Outbox handlers for alerts."""

    def __init__(self, client: AsyncWebClient, sli: SliService, membership: Membership) -> None:
        self.client, self.sli, self.membership = client, sli, membership
        self._last_post: dict[str, float] = {}
        self._spacing: dict[str, asyncio.Lock] = {}
        self._shown: dict[tuple[str, str], int] = {}  # what this replica last put in each message it edited

    def handlers(self) -> Mapping[str, Handler]:
        """Kind -> handler, for the dispatcher."""
        return {SLI_EVENT: self.plan, SLI_MESSAGE: self.message, SLI_DIGEST: self.digest, SLI_NOTE: self.note}

    # --- planning -------------------------------------------------------------------------------

    async def plan(self, item: Item) -> Expand:
        """What a batch of one channel's events means in Slack, as rows."""
        key = item.key
        events: dict[str, list[dict[str, Any]]] = {}
        for payload in item.payloads:
            events.setdefault(payload["episode"], []).append(payload)
        episodes = await self.sli.episodes(events)
        rows: list[tuple[str, str, dict[str, Any]]] = []  # new posts first, then pages; edits of messages already posted after them
        edits: list[tuple[str, str, dict[str, Any]]] = []
        fresh: list[SliEpisode] = []
        notes: dict[str, list[str]] = {}  # target episode (its message's thread) -> lines
        digests: set[tuple[str, str]] = set()
        for fp, happened in events.items():
            episode = episodes.get(fp)
            if episode is None:
                continue
            loud = any(not e["silenced"] for e in happened)
            if episode.message_ts is None:
                if loud:
                    fresh.append(episode)
                continue
            if episode.digest:
                digests.add((str(episode.message_channel), episode.message_ts))
            else:
                edits.append((SLI_MESSAGE, key, {"episode": fp}))  # one edit for all of this batch's events: it shows the newest state
            lines = [timeline(episode, e) for e in happened if e["kind"] != Kind.UPDATED.value]
            if lines:
                notes.setdefault(fp, []).extend(f"{escape(episode.pipeline)} · {TITLES[Sli(episode.sli)]}: {line}" if episode.digest else line
                                                for line in lines)
        fresh.sort(key=lambda e: (e.level != Level.PAGE, e.started_at, e.pipeline))
        if len(fresh) > STORM:
            rows.append((SLI_DIGEST, key, {"channel": fresh[0].channel, "episodes": [e.fingerprint for e in fresh]}))
        else:
            for episode in fresh:
                rows.append((SLI_MESSAGE, key, {"episode": episode.fingerprint}))
                later = [timeline(episode, e) for e in events[episode.fingerprint] if e["kind"] not in (Kind.OPENED.value, Kind.UPDATED.value)]
                if later:
                    notes.setdefault(episode.fingerprint, []).extend(later)
        rows += await self._pages(events, episodes)
        rows += edits + await self._related(events, episodes, {fp for _, _, p in edits for fp in [p["episode"]]})
        rows += [(SLI_DIGEST, key, {"message_channel": channel, "ts": ts}) for channel, ts in sorted(digests)]
        by_thread: dict[tuple[str, str] | str, tuple[str, list[str]]] = {}
        for fp, lines in notes.items():
            episode = episodes[fp]
            target: tuple[str, str] | str = (str(episode.message_channel), str(episode.message_ts)) if episode.digest else fp
            by_thread.setdefault(target, (fp, []))[1].extend(lines)
        rows += [(SLI_NOTE, key, {"episode": fp, "lines": lines}) for fp, lines in by_thread.values()]
        return Expand(rows)

    async def _pages(self, events: dict[str, list[dict[str, Any]]], episodes: dict[str, SliEpisode]) -> list[tuple[str, str, dict[str, Any]]]:
        """One DM per oncall member listing the pages of this batch: opened, escalated, or reminded (still unacknowledged),
        not silenced."""
        kinds = (Kind.OPENED.value, Kind.ESCALATED.value, Kind.REMINDER.value, Kind.UNSILENCED.value, Kind.UNFOLDED.value, Kind.LOST.value)
        paged = [episodes[fp] for fp, happened in events.items() if fp in episodes and episodes[fp].resolved_at is None and any(
            e["level"] == Level.PAGE.value and e["kind"] in kinds and not e["silenced"] and not e.get("held") for e in happened)]
        handed = [(episodes[fp], e["detail"]) for fp, happened in events.items() if fp in episodes and episodes[fp].resolved_at is None
                  for e in happened if e["kind"] == Kind.HANDED_ON.value]
        if not paged and not handed:
            return []
        pipelines = await self.sli.pipelines()
        teams = await self.sli.lineage.teams()
        lines_by_user: dict[str, list[str]] = {}
        for episode in paged:
            pipeline = pipelines.get(episode.pipeline)
            team = teams.get(pipeline.owner) if pipeline else None
            for user in team.oncall if team else []:
                lines_by_user.setdefault(user, []).append(f"• {headline(episode)} in {escape(episode.channel)}, since {when(episode.started_at)}")
        for episode, target in handed:
            for user in await self._people(target):
                lines_by_user.setdefault(user, []).append(f"• {headline(episode)} in {escape(episode.channel)}, since {when(episode.started_at)} — "
                                                          "escalated to you: nobody acknowledged it in time")
        rows = []
        for user, lines in sorted(lines_by_user.items()):
            intro = (":rotating_light: You are oncall: " + ("a pipeline pages" if len(lines) == 1 else f"{len(lines)} pipelines page")
                     + " (acknowledge in the channel to stop the reminders).")
            rows.append(message_row(user, Reply.sections(intro, lines[:60] + ([f"…and {len(lines) - 60} more"] if len(lines) > 60 else []))))
        return rows

    async def _people(self, target: str) -> set[str]:
        """Who a step of an escalation chain pages: a user group's members, a person, or the global oncall."""
        if target == GLOBAL:
            everyone = await self.sli.lineage.global_oncall()
            return await self.membership.members(everyone) if everyone is not None else set()
        if target.startswith("S"):
            return await self.membership.members(Team(target, target))
        return {target}

    async def _related(self, events: dict[str, list[dict[str, Any]]], episodes: dict[str, SliEpisode],
                       edited: set[str]) -> list[tuple[str, str, dict[str, Any]]]:
        """Edits of the messages whose folding these events may change: the open episodes of pipelines upstream and
        downstream of each episode that opened, escalated or resolved (a root cause's list, a folded episode's cause)."""
        moved = {episodes[fp].pipeline for fp, happened in events.items() if fp in episodes
                 and any(e["kind"] in (Kind.OPENED.value, Kind.ESCALATED.value, Kind.RESOLVED.value) for e in happened)}
        if not moved:
            return []
        folding = await self.sli.folding()
        near = {p for p in moved for p in folding.upstream.get(p, frozenset())}
        near |= {name for name, above in folding.upstream.items() if above & moved}
        targets = sorted(f.fingerprint for f in folding.firing if f.pipeline in near and f.fingerprint not in edited and f.fingerprint not in events)
        if not targets:
            return []
        shown = await self.sli.episodes(targets)
        return [(SLI_MESSAGE, f"sli:{shown[fp].channel}", {"episode": fp}) for fp in targets
                if fp in shown and shown[fp].message_ts and not shown[fp].digest]

    # --- sending --------------------------------------------------------------------------------

    async def message(self, item: Item) -> None:
        """Post an episode's message, or edit it in place (a post is remembered before anything else)."""
        episode = await self.sli.episode(item.payload["episode"])
        reply = await self._render(episode)
        channel = episode.channel
        if episode.message_ts and episode.message_channel:
            try:
                await self._edit(episode.message_channel, episode.message_ts, reply)
                return
            except Gone:  # someone deleted it in Slack (or the digest it was in): the alert is posted again, on its own
                channel = episode.message_channel
        posted = await self._post(channel, reply)
        await kept(self.client, posted, await self.sli.save_message([episode.fingerprint], str(posted["channel"]), str(posted["ts"]), digest=False,
                                                       replacing=episode.message_ts))

    async def digest(self, item: Item) -> None:
        """Post a storm's digest for new episodes, or edit a digest in place."""
        payload = item.payload
        if payload.get("ts"):
            episodes = await self.sli.in_message(payload["message_channel"], payload["ts"])
            if not episodes:
                return
            reply = await self._digest(episodes)
            try:
                await self._edit(payload["message_channel"], payload["ts"], reply)
                return
            except Gone:  # someone deleted the digest in Slack: posted again
                posted = await self._post(payload["message_channel"], reply)
                await kept(self.client, posted, await self.sli.save_message([e.fingerprint for e in episodes], str(posted["channel"]), str(posted["ts"]),
                                                               digest=True, replacing=payload["ts"]))
                return
        found = await self.sli.episodes(payload["episodes"])
        episodes = [found[fp] for fp in payload["episodes"] if fp in found and found[fp].message_ts is None]
        if not episodes:
            return
        posted = await self._post(payload["channel"], await self._digest(episodes))
        await self.sli.save_message([e.fingerprint for e in episodes], str(posted["channel"]), str(posted["ts"]), digest=True)

    async def note(self, item: Item) -> None:
        """Timeline lines in the thread of an episode's message (or its digest's)."""
        episode = await self.sli.episode(item.payload["episode"])
        if not (episode.message_channel and episode.message_ts):
            raise GiveUp(f"alert {episode.fingerprint} has no message to thread under (it could not be posted)")
        reply = Reply.sections(item.payload["lines"][0], item.payload["lines"][1:60])
        try:
            await self._post(episode.message_channel, reply, thread_ts=episode.message_ts)
        except Gone:  # someone deleted the alert in Slack: it is posted again, and the lines go into its thread
            await self.message(item)
            episode = await self.sli.episode(item.payload["episode"])
            await self._post(str(episode.message_channel), reply, thread_ts=episode.message_ts)

    async def _edit(self, channel: str, ts: str, reply: Reply) -> None:
        """``chat.update``, unless the message already shows exactly this (an edit queued behind one that already showed
        the newest state)."""
        shown = hash((reply.fallback, repr(reply.blocks)))
        if self._shown.get((channel, ts)) == shown:
            return
        await call(self.client, "chat.update", channel=channel, ts=ts, text=reply.fallback, blocks=reply.blocks)
        self._shown[(channel, ts)] = shown
        if len(self._shown) > SHOWN_KEPT:
            del self._shown[next(iter(self._shown))]

    async def _post(self, channel: str, reply: Reply, thread_ts: str | None = None) -> Any:
        """``chat.postMessage``, at most one per ``POST_SPACING`` seconds per channel from this replica."""
        lock = self._spacing.setdefault(channel, asyncio.Lock())
        async with lock:
            wait = self._last_post.get(channel, 0.0) + POST_SPACING - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            try:
                return await call(self.client, "chat.postMessage", channel=channel, text=reply.fallback, blocks=reply.blocks,
                                  thread_ts=thread_ts, unfurl_links=False)
            finally:
                self._last_post[channel] = time.monotonic()

    async def _render(self, episode: SliEpisode) -> Reply:
        catalog = await self.sli.catalog()
        state = await self._state(episode.pipeline, episode.sli)
        rules = catalog.rules.get(episode.pipeline)
        if rules is None:
            raise GiveUp(f"pipeline {episode.pipeline} is no longer in the catalog")
        folding = await self.sli.folding() if episode.resolved_at is None else None
        cause = folding.roots.get(episode.fingerprint) if folding else None
        below = folding.downstream_of(episode.fingerprint) if folding else []
        why = folding.hold_of(episode.fingerprint) if folding and cause is None else None
        return episode_message(episode, state, rules[episode.sli], self.sli.clock(), cause=cause, downstream=below,
                               expected=why.reason if why else None, flink_job=await self.sli.flink_job(episode.pipeline))

    async def _digest(self, episodes: list[SliEpisode]) -> Reply:
        states = {(r.pipeline, r.sli): State.from_json(r.state) for r in await self.sli.series()}
        return digest_message(episodes, states)

    async def _state(self, pipeline: str, sli: str) -> State:
        rows = [r for r in await self.sli.series(pipeline) if r.sli == sli]
        return State.from_json(rows[0].state) if rows else State()


def _when_iso(text: str | None) -> str:
    try:
        return when(datetime.fromisoformat(text)) if text else "—"
    except ValueError:
        return escape(text or "")


def timeline(episode: SliEpisode, event: dict[str, Any]) -> str:
    """One line of an episode's thread."""
    kind, at = Kind(event["kind"]), when(datetime.fromisoformat(event["at"]))
    value = value_text(episode.sli, event.get("value")) if event.get("value") is not None else ""
    actor = mention(event.get("actor"))
    detail = escape(event.get("detail") or "")
    held = f" — not paged: {escape(event['held'])}" if event.get("held") else ""
    return {
        Kind.OPENED: f"{at} opened at {event['level']} level{': ' + value if value else ''}{' — ' + detail if detail else ''}",
        Kind.ESCALATED: f"{at} :arrow_double_up: escalated to page: {value}",
        Kind.REMINDER: f"{at} :alarm_clock: still firing and not acknowledged{': ' + value if value else ''}",
        Kind.ACKNOWLEDGED: f"{at} :eyes: acknowledged by {actor}",
        Kind.SILENCED: f"{at} :mute: silenced by {actor}{' — ' + detail if detail else ''}",
        Kind.UNSILENCED: f"{at} :loud_sound: " + ("the silence ran out" if detail == "expired" else f"unsilenced by {actor}"),
        Kind.UNFOLDED: f"{at} :rotating_light: pages on its own: {detail}",
        Kind.HANDED_ON: f"{at} :arrow_heading_up: nobody acknowledged it: escalated to {step(event.get('detail') or '')}",
        Kind.LOST: f"{at} :warning: retention deleted unread data: {detail}",
        Kind.UNMEASURED: f"{at} :grey_question: not measured since {_when_iso(event.get('detail'))}: no sample for three intervals, so "
                         f"what it shows{' (' + value + ')' if value else ''} is the last measurement, not now",
        Kind.REMEASURED: f"{at} :straight_ruler: measured again: {value}",
        Kind.NOTED: f"{at} :pager: {detail}",
        Kind.RESOLVED: f"{at} :white_check_mark: resolved{': ' + value if value else ''}{' — ' + detail if detail else ''}",
        Kind.UPDATED: f"{at} {value}",
    }[kind] + held
