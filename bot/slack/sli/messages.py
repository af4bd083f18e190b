"""How alerts look in Slack: an episode's message (value against threshold, since when, trend, who acknowledged,
the silence, the runbook's buttons), a storm's digest, and the ``/sli`` tables."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from bot.domain.sli.escalation import GLOBAL
from bot.domain.sli.evaluator import Level, State
from bot.domain.sli.folding import Firing
from bot.domain.sli.pipeline import TITLES, UNITS, Rule, Sli
from bot.domain.sli.retention import HORIZON, duration_text, read_lost
from bot.slack import ids
from bot.slack.render import Reply, escape, fold, mention, section, when
from bot.store.models import SliEpisode, aware

RUNBOOK = {  # seed 004, section 7: the response to each breach
    Sli.SOURCE_LAG: "Scale the source's parallelism and page oncall. If the job is stopped, catch up by resetting its consumer "
                    "group's offsets (a backfill), never by a parallel re-run that writes twice.",
    Sli.FRESHNESS: "Output is late against the SLA: look at source lag and checkpoint duration first; the SLA is what consumers feel.",
    Sli.COMMIT_SUCCESS_RATE: "A sink-level problem: check the sink, and the table catalog for commit conflicts (two writers "
                             "committing to one table, an expired lock, a maintenance job holding the pointer).",
    Sli.SCHEMA_ERROR_RATE: "Pause the pipeline: do not keep writing the lake table with a wrong schema. The first question: "
                           "what changed upstream?",
    Sli.DLQ_VOLUME: "Dirty data is leaking through: if the DLQ keeps growing above its threshold, pause the main stream and look at "
                    "sample dead letters before replaying anything.",
    Sli.BACKLOG: "Progress of a running backfill or replay.",
    Sli.CHECKPOINT_DURATION: "Checkpoints cannot keep up: state is bloating (check state size and TTLs) or the sink is blocked "
                             "(backpressure: check sink commit latency).",
    Sli.SINK_COMMIT_LATENCY: "Commits are blocked at the pointer swap: check the sink's commit queue, table maintenance jobs and "
                             "catalog contention.",
    Sli.RETENTION_HEADROOM: "Retention will delete records the group has not read: scale the consumer out, or pause the producer, "
                            "before it does; once data is lost, backfill the gap from the sink or the source of record, not from Kafka.",
    Sli.BACKPRESSURE: "The job cannot keep up: find the first vertex that is ok again downstream of the busy ones; the one before it "
                      "is the bottleneck (often the sink): scale it, batch its commits, or slow the source.",
    Sli.CHECKPOINT_FAILURES: "Checkpoints fail: the job cannot restart from where it is (a full restart would re-read since the last "
                             "good one). Read the failure (below); a timeout means state bloat or a blocked sink, an I/O error the "
                             "checkpoint storage.",
    Sli.PENDING_RECORDS: "What the job's sources have still to read: its lag, in records.",
    Sli.RESTARTS: "The Flink job keeps failing and restarting (a poison record, a broken dependency): read its exception, pause it by "
                  "savepoint rather than let it cycle, fix the cause (or route the record to the DLQ), then resume it.",
}
MARK = {Level.PAGE: ":red_circle:", Level.WARN: ":large_orange_circle:"}
BARS = "▁▂▃▄▅▆▇█"
SILENCE_CHOICES = (("1h", "for 1 hour"), ("4h", "for 4 hours"), ("24h", "for 24 hours"), ("until", "until a time…"))


def value_text(sli: str, value: float | None) -> str:
    """A value with its unit, as people read it."""
    if value is None:
        return "no data"
    if sli == Sli.RETENTION_HEADROOM:
        if value <= 0:
            return "none: unread data is being deleted"
        return f"beyond {duration_text(HORIZON.total_seconds())}" if value >= HORIZON.total_seconds() else duration_text(value)
    unit = UNITS[Sli(sli)]
    if unit == "level":
        return "high" if value >= 1 else "low" if value > 0 else "ok"
    if unit in ("restarts", "failures"):
        return f"{value:.0f} {unit if value != 1 else unit[:-1]}"
    if unit == "ratio":
        return f"{value * 100:.3g}%"
    if unit == "messages":
        return f"{value:,.0f} messages"
    return f"{value:,.0f} s" if value >= 10 else f"{value:.1f} s"


def sparkline(values: list[float]) -> str:
    """The last values as bars (empty for fewer than two)."""
    if len(values) < 2:
        return ""
    low, high = min(values), max(values)
    if high == low:
        return BARS[3] * len(values)
    return "".join(BARS[int((v - low) / (high - low) * (len(BARS) - 1))] for v in values)



def step(target: str) -> str:
    """A step of an escalation chain, as Slack shows it."""
    if target == GLOBAL:
        return "the global oncall"
    return f"<!subteam^{target}>" if target.startswith("S") else mention(target)


def headline(episode: SliEpisode) -> str:
    """``:red_circle: PAGE orders-enrich · Source lag`` (and how it ended)."""
    title = f"*{escape(episode.pipeline)}* · {TITLES[Sli(episode.sli)]}"
    if episode.resolved_at is not None:
        return f":white_check_mark: *Resolved* {title} (was {episode.level})"
    if episode.no_data:
        return f":grey_question: *No data* {title}"
    return f"{MARK[Level(episode.level)]} *{episode.level.upper()}* {title}"


def episode_message(episode: SliEpisode, state: State, rule: Rule, now: datetime, *, cause: Firing | None = None,
                    downstream: Sequence[Firing] = (), expected: str | None = None, flink_job: str | None = None) -> Reply:
    """An episode's own message, rendered from what is stored now; ``cause``: the root cause upstream it is folded under;
    ``downstream``: the episodes folded under it; ``expected``: the booked entry that expects it."""
    sli = Sli(episode.sli)
    open_ = episode.resolved_at is None
    current = state.last_value if open_ else None
    measured = f" (measured {when(state.last_time)})" if open_ and state.last_time is not None else ""  # an edit shows it until the next
    fields = [f"*Now*\n{value_text(sli, current) + measured if open_ else 'back to normal'}", f"*Threshold*\n{rule.threshold_text()}",
              f"*Since*\n{when(episode.started_at)}",
              f"*Ended*\n{when(episode.resolved_at)}" if not open_ else f"*Peak*\n{value_text(sli, episode.peak)}"]
    trend = sparkline(state.trend) if open_ and state.episode is not None and state.episode.fingerprint == episode.fingerprint else ""
    if trend:
        fields.append(f"*Trend (last {len(state.trend)})*\n`{trend}` {value_text(sli, state.trend[0])} → {value_text(sli, state.trend[-1])}")
    if episode.no_data and open_:
        fields[0] = f"*Now*\nno sample for three intervals (last at {when(state.last_time)})"
    unmeasured = unmeasured_since(episode, state)
    if unmeasured is not None:
        fields[0] = f"*Now*\n:grey_question: not measured since {when(unmeasured)} (last: {value_text(sli, current)})"
    blocks: list[dict[str, Any]] = [section(headline(episode)),
                                    {"type": "section", "fields": [{"type": "mrkdwn", "text": f} for f in fields[:10]]}]
    notes = []
    if sli is Sli.RETENTION_HEADROOM and open_:
        notes += retention_notes(episode.pipeline, state)
    if sli is Sli.CHECKPOINT_FAILURES and state.labels.get("reason"):
        notes.append(f":boom: Job {escape(state.labels.get('job', '?'))}, latest checkpoint failure: `{escape(state.labels['reason'][:500])}`")
    if sli is Sli.RESTARTS and state.labels.get("exception"):
        notes.append(f":boom: Job {escape(state.labels.get('job', '?'))}, latest exception: `{escape(state.labels['exception'][:500])}`")
    if cause is not None:
        notes.append(f":arrow_up: *Caused upstream by {escape(cause.pipeline)}* ({TITLES[Sli(cause.sli)] if not cause.no_data else 'no data'}, "
                     f"{cause.level} since {when(cause.started_at)}): not paged on its own while that fires")
    if expected is not None:
        notes.append(f":calendar: *{escape(expected[:1].upper() + expected[1:])}*: shown, not paged while it runs (it pages if it outlives it)")
    if downstream:
        names = sorted({f.pipeline for f in downstream})
        notes.append(f":arrow_down: Also late downstream: {escape(', '.join(names[:20]))}{f' and {len(names) - 20} more' if len(names) > 20 else ''}")
    if open_ and state.episode is not None and state.episode.fingerprint == episode.fingerprint and state.episode.escalation:
        notes.append(f":arrow_heading_up: Nobody acknowledged it: escalated {state.episode.escalation} step"
                     f"{'s' if state.episode.escalation > 1 else ''} up its team's chain, last {when(state.episode.escalated_at)}")
    if episode.acked_by:
        notes.append(f":eyes: Acknowledged by {mention(episode.acked_by)} {when(episode.acked_at)}")
    silenced = open_ and state.silenced(now)
    if silenced:
        reason = f" — {escape(state.silence_reason)}" if state.silence_reason else ""
        notes.append(f":mute: Silenced by {mention(state.silenced_by)} until {when(state.silenced_until)}{reason}")
    notes.append(f":book: {RUNBOOK[sli]}")
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": n[:3000]} for n in notes]})
    if open_:
        blocks.append({"type": "actions", "block_id": f"sli:{episode.fingerprint}", "elements": actions(episode, silenced, flink_job)})
    fallback = f"{headline(episode)}: {value_text(sli, current) if open_ else 'resolved'} ({rule.threshold_text()})"
    return Reply(fallback, blocks)


def unmeasured_since(episode: SliEpisode, state: State) -> datetime | None:
    """When an open episode's samples stopped (three intervals without one), or None while they arrive."""
    current = state.episode
    if episode.resolved_at is not None or current is None or current.fingerprint != episode.fingerprint:
        return None
    return current.unmeasured_since


def retention_notes(pipeline: str, state: State) -> list[str]:
    """What a retention headroom alert says: where and when unread data goes at the current rate, and what is gone."""
    labels, notes = state.labels, []
    lost = read_lost(labels.get("lost"))
    for gone in lost[:20]:
        count = gone.last - gone.first + 1
        span = (f", written from {when(gone.since)} to {when(gone.until)}" if gone.since and gone.until
                else f", written before {when(gone.until)} (the oldest was deleted before the bot saw it)" if gone.until else "")
        notes.append(f":warning: *Data lost*: retention deleted offsets {gone.first:,}–{gone.last:,} of "
                     f"{escape(gone.topic)}/{gone.partition} ({count:,} message{'s' if count != 1 else ''}{span}) before "
                     f"group {escape(labels.get('group', '?'))} read them")
    if not lost and labels.get("partition") and state.last_value is not None and state.last_value < HORIZON.total_seconds():
        by = f"(by its {escape(labels.get('by', 'retention'))})"
        around = when(state.last_time + timedelta(seconds=max(0.0, state.last_value))) if state.last_time else "—"
        if state.episode is not None and state.episode.unmeasured_since is not None:
            notes.append(f":hourglass: {escape(pipeline)} would lose unread data on partition {escape(labels['partition'])} around "
                         f"{around} at the rate measured {when(state.last_time)}, the last time it was measured {by}")
        else:
            soon = "any moment now" if state.last_value <= 0 else f"in {duration_text(state.last_value)}"
            notes.append(f":hourglass: {escape(pipeline)} will lose unread data on partition {escape(labels['partition'])} {soon} "
                         f"(around {around}) at the current rate {by}")
    return notes


def actions(episode: SliEpisode, silenced: bool, flink_job: str | None = None) -> list[dict[str, Any]]:
    """Acknowledge, Silence or Unsilence, the runbook's buttons for this SLI, and for a Flink pipeline Pause and Resume (by
    savepoint) and Plan a backfill (the Flink way)."""
    fp = episode.fingerprint
    elements: list[dict[str, Any]] = []
    if not episode.acked_by:
        elements.append(button("Acknowledge", ids.SLI_ACK, fp, style="primary"))
    if silenced:
        elements.append(button("Unsilence", ids.SLI_UNSILENCE, fp))
    else:
        elements.append({"type": "static_select", "action_id": ids.SLI_SILENCE, "placeholder": {"type": "plain_text", "text": "Silence…"},
                         "options": [{"text": {"type": "plain_text", "text": label}, "value": f"{fp}|{value}"} for value, label in SILENCE_CHOICES]})
    sli = Sli(episode.sli)
    if sli in (Sli.SOURCE_LAG, Sli.RETENTION_HEADROOM):
        elements += [button("Plan a backfill", ids.SLI_BACKFILL, fp), button("Catch-up advice", ids.SLI_RUNBOOK, fp)]
    elif sli is Sli.DLQ_VOLUME:
        elements += [button("Sample dead letters", ids.SLI_DEAD_LETTERS, fp), button("Plan a replay", ids.SLI_REPLAY, fp),
                     button("Pause advice", ids.SLI_RUNBOOK, fp)]
    elif sli is Sli.SCHEMA_ERROR_RATE:
        elements += [button("What changed upstream?", ids.SLI_CHANGES, fp), button("Runbook", ids.SLI_RUNBOOK, fp)]
    else:
        elements.append(button("Hints", ids.SLI_RUNBOOK, fp))
    if flink_job is not None:
        if not any(e.get("action_id") == ids.SLI_BACKFILL for e in elements):
            elements.append(button("Plan a backfill", ids.SLI_BACKFILL, fp))
        elements += [button(f"Pause {flink_job[:40]}", ids.SLI_FLINK_PAUSE, fp), button(f"Resume {flink_job[:40]}", ids.SLI_FLINK_RESUME, fp)]
    return elements


def button(text: str, action_id: str, value: str, style: str | None = None) -> dict[str, Any]:
    """A button."""
    element = {"type": "button", "text": {"type": "plain_text", "text": text}, "action_id": action_id, "value": value}
    if style:
        element["style"] = style
    return element


def digest_message(episodes: list[SliEpisode], states: dict[tuple[str, str], State]) -> Reply:
    """One message for many episodes of one channel (a storm): pages first, then by start."""
    ordered = sorted(episodes, key=lambda e: (e.resolved_at is not None, e.level != Level.PAGE, aware(e.started_at), e.pipeline))
    firing = [e for e in ordered if e.resolved_at is None]
    pages = sum(1 for e in firing if e.level == Level.PAGE)
    title = (f":rotating_light: *{len(firing)} alerts firing* in this channel ({pages} page{'s' if pages != 1 else ''}); "
             f"{len(episodes) - len(firing)} resolved. Too many at once for a message each: they are listed here and updated in place.")
    lines = []
    for episode in ordered[:120]:
        state = states.get((episode.pipeline, episode.sli), State())
        value = value_text(episode.sli, state.last_value) if episode.resolved_at is None else "resolved"
        extra = f" · acknowledged by {mention(episode.acked_by)}" if episode.acked_by else ""
        lines.append(f"• {headline(episode)} — {value}, since {when(episode.started_at)}{extra}")
    if len(ordered) > 120:
        lines.append(f"…and {len(ordered) - 120} more: `/sli status`")
    chunks = fold(lines)[:45]
    blocks = [section(title), *[section(c) for c in chunks]]
    if firing:
        blocks.append({"type": "actions", "elements": [button(f"Acknowledge all I may ({len(firing)})", ids.SLI_ACK_ALL, "digest", "primary")]})
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": "Details and silences: `/sli status PIPELINE`, "
                                                                              "`/sli silence PIPELINE SLI 1h`."}]})
    return Reply(f"{len(firing)} alerts firing ({pages} pages)", blocks)


def status_table(rows: list[dict[str, Any]]) -> list[str]:
    """``/sli status PIPELINE``: one line per SLI (value, threshold, state, since)."""
    lines = []
    for row in rows:
        mark = {"page": ":red_circle:", "warn": ":large_orange_circle:"}.get(str(row["state"]).split(" ")[0], "")
        if not mark:
            mark = {"ok": ":large_green_circle:", "pending": ":hourglass_flowing_sand:", "disabled": ":white_circle:"}.get(
                str(row["state"]).split(" ")[0], ":grey_question:")
        since = f", since {when(datetime.fromisoformat(row['since']))}" if row["since"] else ""
        value = value_text(row["sli"], row["value"]) if row["value"] is not None else "—"
        measured = f" (measured {when(datetime.fromisoformat(row['measured_at']))})" if row["measured_at"] else ""
        lines.append(f"{mark} *{TITLES[Sli(row['sli'])]}* — {value}{measured} · "
                     f"{escape(row['threshold'])} · {escape(row['state'])}{since}")
    return lines


def overview(rows: list[dict[str, Any]]) -> list[str]:
    """``/sli status``: one line per pipeline, its firing SLIs named."""
    by_pipeline: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_pipeline.setdefault(row["pipeline"], []).append(row)
    lines = []
    for name, slis in by_pipeline.items():
        firing = [r for r in slis if r["episode"]]
        pages = [r for r in firing if str(r["state"]).startswith("page")]
        mark = ":red_circle:" if pages else ":large_orange_circle:" if firing else ":large_green_circle:"
        what = ", ".join(f"{TITLES[Sli(r['sli'])]} ({escape(r['state'])})" for r in firing) or "all clear"
        lines.append(f"{mark} *{escape(name)}* — {what}")
    return lines


def history_lines(episodes: list[SliEpisode]) -> list[str]:
    """``/sli history``: an episode per line."""
    lines = []
    for episode in episodes:
        lasted = ""
        if episode.resolved_at is not None:
            minutes = int((aware(episode.resolved_at) - aware(episode.started_at)).total_seconds() // 60)
            lasted = f", lasted {minutes // 60} h {minutes % 60} min" if minutes >= 60 else f", lasted {minutes} min"
        acked = f", acknowledged by {mention(episode.acked_by)}" if episode.acked_by else ""
        lines.append(f"• {when(episode.started_at)} {headline(episode)}, peak {value_text(episode.sli, episode.peak)}{lasted}{acked}")
    return lines

