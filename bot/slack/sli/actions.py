"""The alert message's buttons: Acknowledge, Silence (and its form), Unsilence, and the runbook's actions."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from bot.domain.sli.evaluator import StateError
from bot.domain.sli.pipeline import TITLES, Sli
from bot.services.calendar import CalendarService
from bot.services.proposals import Proposals
from bot.services.sli import SliError
from bot.slack import ids
from bot.slack.proposals.cards import STATE_TEXT
from bot.slack.render import ephemeral, escape, fold, section, when
from bot.slack.sli.commands import SliCommands, until_of
from bot.slack.sli.messages import RUNBOOK
from bot.store.models import SliEpisode, aware

CHANGES_WINDOW = timedelta(hours=72)
DeadLetters = Callable[[str], Awaitable[list[str]]]  # a DLQ topic -> its newest messages, decoded, one line each


class AlertActions:
    """Listeners of the alert buttons."""

    def __init__(self, commands: SliCommands, proposals: Proposals, calendar: CalendarService, dead_letters: DeadLetters | None) -> None:
        self.commands, self.sli = commands, commands.sli
        self.proposals, self.calendar, self.dead_letters = proposals, calendar, dead_letters

    async def _episode(self, body: dict[str, Any], respond: AsyncRespond) -> SliEpisode | None:
        action = body["actions"][0]
        value = (action.get("selected_option") or {}).get("value") or action.get("value") or ""
        try:
            return await self.sli.episode(value.split("|", 1)[0])
        except SliError as err:
            await respond(**ephemeral(f"{err}; nothing changed."))
            return None

    async def _act(self, body: dict[str, Any], respond: AsyncRespond, verb: str,
                   work: Callable[[SliEpisode, str], Awaitable[str]]) -> None:
        """Find the button's episode, check the clicker may act on its pipeline, do ``work``; every outcome told to the clicker."""
        episode = await self._episode(body, respond)
        if episode is None:
            return
        user = body["user"]["id"]
        try:
            refusal = await self.commands.may_act(user, episode.pipeline)
            told = refusal or await work(episode, user)
        except (ValueError, SliError, StateError) as err:
            told = f"Not {verb}: {escape(err)}."
        if told:
            await respond(**ephemeral(told))

    async def on_acknowledge(self, ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond) -> None:
        """Acknowledge: the clicker's name goes on the message; reminders stop."""
        await ack()

        async def acknowledge(episode: SliEpisode, user: str) -> str:
            await self.sli.acknowledge(episode.fingerprint, user)
            return f"You acknowledged {escape(episode.pipeline)} · {TITLES[Sli(episode.sli)]}; reminders stop."

        await self._act(body, respond, "acknowledged", acknowledge)

    async def on_acknowledge_all(self, ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond) -> None:
        """A digest's button: acknowledge every firing episode in it that the clicker may act on."""
        await ack()
        user = body["user"]["id"]
        channel = (body.get("channel") or {}).get("id", "")
        ts = (body.get("container") or {}).get("message_ts") or (body.get("message") or {}).get("ts", "")
        done, refused = 0, set()
        for episode in await self.sli.in_message(channel, ts):
            if episode.resolved_at is not None or episode.acked_by:
                continue
            if await self.commands.may_act(user, episode.pipeline):
                refused.add(episode.pipeline)
                continue
            try:
                await self.sli.acknowledge(episode.fingerprint, user)
                done += 1
            except (SliError, StateError):
                continue
        others = f" Not yours to acknowledge: {escape(', '.join(sorted(refused)))}." if refused else ""
        await respond(**ephemeral(f"You acknowledged {done} alert{'s' if done != 1 else ''}.{others}"))

    async def on_silence(self, ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond, client: AsyncWebClient) -> None:
        """The Silence menu: 1 h, 4 h, 24 h, or a form asking until when."""
        await ack()
        choice = body["actions"][0]["selected_option"]["value"].split("|", 1)[-1]

        async def silence(episode: SliEpisode, user: str) -> str:
            if choice == "until":
                await client.views_open(trigger_id=body["trigger_id"], view=silence_form(episode))
                return ""
            until = until_of(choice, self.sli.clock())
            await self.sli.silence(episode.pipeline, episode.sli, until, user, "from the alert")
            return f"Silenced {escape(episode.pipeline)} · {TITLES[Sli(episode.sli)]} until {when(until)}."

        await self._act(body, respond, "silenced", silence)

    async def on_silence_form(self, ack: AsyncAck, body: dict[str, Any], view: dict[str, Any]) -> None:
        """The "until a time" form: a time in the future (within 30 days), shown at the field otherwise."""
        meta = json.loads(view.get("private_metadata") or "{}")
        picked = (view["state"]["values"].get(ids.UNTIL_BLOCK, {}).get(ids.UNTIL_ACTION) or {}).get("selected_date_time")
        reason = ((view["state"]["values"].get(ids.REASON_BLOCK, {}).get(ids.REASON_ACTION) or {}).get("value") or "")[:500]
        if not picked:
            await ack(response_action="errors", errors={ids.UNTIL_BLOCK: "Until when?"})
            return
        until = datetime.fromtimestamp(int(picked), UTC)
        try:
            until = until_of(until.isoformat(), self.sli.clock())
            episode = await self.sli.episode(str(meta.get("episode", "")))
            refusal = await self.commands.may_act(body["user"]["id"], episode.pipeline)
            if refusal:
                await ack(response_action="errors", errors={ids.UNTIL_BLOCK: refusal[:150]})
                return
            await self.sli.silence(episode.pipeline, episode.sli, until, body["user"]["id"], reason or "from the alert")
        except (ValueError, SliError, StateError) as err:
            await ack(response_action="errors", errors={ids.UNTIL_BLOCK: str(err)[:150]})
            return
        await ack()

    async def on_unsilence(self, ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond) -> None:
        """Lift the silence early."""
        await ack()

        async def unsilence(episode: SliEpisode, user: str) -> str:
            await self.sli.unsilence(episode.pipeline, episode.sli, user)
            return f"{escape(episode.pipeline)} · {TITLES[Sli(episode.sli)]} is posted again."

        await self._act(body, respond, "unsilenced", unsilence)

    async def on_runbook(self, ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond) -> None:
        """The runbook's advice for this SLI, with what the catalog knows of the pipeline."""
        await ack()
        episode = await self._episode(body, respond)
        if episode is None:
            return
        try:
            pipeline = await self.sli.pipeline(episode.pipeline)
        except SliError as err:
            await respond(**ephemeral(f"{escape(err)}."))
            return
        facts = [f"owner {escape(pipeline.owner)}"]
        if pipeline.topics:
            facts.append(f"source {escape(', '.join(pipeline.topics))} (group {escape(pipeline.group)})")
        if pipeline.sink:
            facts.append(f"sink {escape(pipeline.sink)}")
        if pipeline.checkpoint_interval:
            facts.append(f"checkpoint interval {pipeline.checkpoint_interval}")
        if pipeline.dlq:
            facts.append(f"DLQ {escape(pipeline.dlq)}")
        await respond(**ephemeral(f"*{TITLES[Sli(episode.sli)]} on {escape(pipeline.name)}* — {RUNBOOK[Sli(episode.sli)]}\n"
                                  f"_{'; '.join(facts)}_"))

    async def on_changes(self, ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond) -> None:
        """What changed upstream in the last 72 hours: proposals on the pipeline's source subjects, calendar entries touching them."""
        await ack()
        episode = await self._episode(body, respond)
        if episode is None:
            return
        pipeline = await self.sli.pipeline(episode.pipeline)
        graph = await self.sli.lineage.graph()
        subjects: set[str | None] = {d.subject for d in graph.datasets.values() if d.id.name in pipeline.topics}
        for job in graph.jobs.values():
            if job.id.name in pipeline.jobs:
                subjects |= {graph.datasets[i].subject for i in job.inputs if i in graph.datasets}
        now = self.sli.clock()
        since = now - CHANGES_WINDOW
        lines = []
        named = sorted(s for s in subjects if s)
        for subject in named:
            for view in await self.proposals.listing(subject=subject, limit=20):
                touched = max(aware(view.proposal.created_at), aware(view.proposal.decided_at) if view.proposal.decided_at else since)
                if touched >= since:
                    lines.append(f"• #{view.id} *{escape(subject)}* ({view.proposal.level}) {STATE_TEXT[view.state]}, proposed "
                                 f"{when(view.proposal.created_at)}")
        for entry in await self.calendar.listing(since, now + timedelta(hours=1)):
            scope = entry["scope"]
            if set(scope.get("subjects", [])) & set(named) or set(scope.get("jobs", [])) & set(pipeline.jobs):
                lines.append(f"• calendar #{entry['id']} {escape(entry['kind'])} *{escape(entry['title'])}* ({entry['status']}), "
                             f"{when(datetime.fromisoformat(entry['start']))}")
        sources = ", ".join(escape(s) for s in named) or "none known (name the source topics or jobs in the catalog)"
        title = f"*What changed upstream of {escape(pipeline.name)} in the last 72 hours* (subjects: {sources})"
        await respond(text=title, blocks=[section(title), *[section(c) for c in fold(lines or ["_No schema change and no calendar entry: look elsewhere first._"])][:40]],
                      response_type="ephemeral", replace_original=False)

    async def on_dead_letters(self, ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond) -> None:
        """Five of the newest dead letters, decoded."""
        await ack()
        episode = await self._episode(body, respond)
        if episode is None:
            return
        pipeline = await self.sli.pipeline(episode.pipeline)
        if not pipeline.dlq:
            await respond(**ephemeral(f"{escape(pipeline.name)} names no DLQ topic in the catalog (`dlq:`)."))
            return
        if self.dead_letters is None:
            await respond(**ephemeral("Kafka is not configured for this bot (KAFKA_BOOTSTRAP_SERVERS), so it cannot read the DLQ."))
            return
        try:
            letters = await self.dead_letters(pipeline.dlq)
        except Exception as err:  # the broker is away or refuses: say so, plainly
            await respond(**ephemeral(f"Could not read {escape(pipeline.dlq)}: {escape(type(err).__name__)}: {escape(str(err)[:300])}"))
            return
        title = f"*Newest dead letters in {escape(pipeline.dlq)}*"
        body_lines = [f"```{escape(line)[:2800]}```" for line in letters] or ["_The DLQ is empty._"]
        await respond(text=title, blocks=[section(title), *[section(line) for line in body_lines]], response_type="ephemeral",
                      replace_original=False)


def silence_form(episode: SliEpisode) -> dict[str, Any]:
    """Asks until when (and why) to silence an episode's SLI."""
    return {"type": "modal", "callback_id": ids.SLI_SILENCE_VIEW, "private_metadata": json.dumps({"episode": episode.fingerprint}),
            "title": {"type": "plain_text", "text": "Silence"}, "submit": {"type": "plain_text", "text": "Silence"},
            "close": {"type": "plain_text", "text": "Cancel"},
            "blocks": [section(f"*{escape(episode.pipeline)}* · {TITLES[Sli(episode.sli)]}: alerts are recorded but not posted, and "
                               "reminders wait, until:"),
                       {"type": "input", "block_id": ids.UNTIL_BLOCK, "label": {"type": "plain_text", "text": "Until"},
                        "element": {"type": "datetimepicker", "action_id": ids.UNTIL_ACTION}},
                       {"type": "input", "block_id": ids.REASON_BLOCK, "optional": True, "label": {"type": "plain_text", "text": "Why"},
                        "element": {"type": "plain_text_input", "action_id": ids.REASON_ACTION, "max_length": 500}}]}
