"""An operation's message: its plan with Confirm and Cancel, then its progress and outcome (edited in place), with
Undo for an applied backfill."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from bot.domain.flink.backfill import plan_lines, step_text
from bot.domain.ops import BackfillRequest, OpKind, OpState, ReplayRequest, deleted_text, moves_table, skipped, stamp_notes, topics_named
from bot.services.operations import DRY_RUN, Peek
from bot.slack import ids
from bot.slack.render import Reply, escape, mention, section, when
from bot.store.models import Operation

MAX_ROWS = 40  # partitions listed in a plan (the rest summed)
CONFIRM_TEXT_MAX = 300  # Slack's limit on a confirmation dialog's text
STATE_TEXT = {OpState.PLANNED.value: ":memo: planned, waiting for a confirmation", DRY_RUN: ":eyes: dry run (nothing will run)",
              OpState.APPLIED.value: ":white_check_mark: applied", OpState.UNDONE.value: ":leftwards_arrow_with_hook: undone",
              OpState.RUNNING.value: ":arrows_counterclockwise: running", OpState.CANCELLING.value: ":octagonal_sign: cancelling…",
              OpState.CANCELLED.value: ":no_entry_sign: cancelled", OpState.DONE.value: ":white_check_mark: done",
              OpState.FAILED.value: ":x: failed"}


def title(row: Operation) -> str:
    """``Backfill #3: reset payments-enricher on payments to 2026-12-02 08:00 UTC``."""
    if row.kind in (OpKind.PAUSE.value, OpKind.RESUME.value):
        return f"{row.kind.capitalize()} #{row.id}: the Flink job `{escape(row.request['job'])}`"
    if row.kind == OpKind.BACKFILL.value:
        request = BackfillRequest.from_json(row.request)
        to = request.target_text()
        return f"Backfill #{row.id}: reset `{request.group}` on {_topics(request, row)} {'by' if request.shift is not None else 'to'} {to}"
    replay = ReplayRequest.from_json(row.request)
    return f"Replay #{row.id}: `{replay.dlq}` → " + (f"`{replay.target}`" if replay.target else "their original topics")


def operation_message(row: Operation) -> Reply:
    """The whole message, as the operation stands."""
    head = f"*{title(row)}*"
    context = f"{STATE_TEXT.get(row.state, row.state)} · asked by {mention(row.requested_by) if row.surface == 'slack' else escape(row.requested_by) + ' (terminal)'}" \
              f" · {'team ' + escape(row.team) if row.team else 'no pipeline team: global oncall'}"
    blocks: list[dict[str, Any]] = [section(head), {"type": "context", "elements": [{"type": "mrkdwn", "text": context}]}]
    kind_lines = backfill_lines if row.kind == OpKind.BACKFILL.value else job_lines if row.kind in (OpKind.PAUSE.value, OpKind.RESUME.value) \
        else replay_lines
    lines = freeze_line(row) + kind_lines(row)
    blocks += [section(line) for line in lines]
    if row.result and row.state not in (OpState.RUNNING.value,):
        blocks.append(section(escape(row.result)))
    actions = buttons(row)
    if actions:
        blocks.append({"type": "actions", "block_id": f"op_{row.id}", "elements": actions})
    return Reply(f"{title(row)} — {row.state}", blocks[:50])


def backfill_lines(row: Operation) -> list[str]:
    """Per partition: committed now, target, messages re-read; the retention warning; the lag once applied."""
    moves = row.plan.get("moves", [])
    table = [escape(line) for line in moves_table(moves, "  !", MAX_ROWS)]
    total, lost_to_group = sum(max(0, m["reread"]) for m in moves), skipped(moves)
    lines = [f"{total:,} messages will be read again (group {escape(row.plan.get('group_state', '?').lower())}, no members).",
             "```" + "\n".join(table) + "```"]
    if lost_to_group:
        lines.insert(1, f":warning: *{lost_to_group:,} messages will be skipped*: the group has not read them and never will "
                        "(data loss for this group; re-read them later with a backfill to a time or offsets while they are retained).")
    if deleted_text(moves):
        lines.insert(1, f":warning: {escape(deleted_text(moves) or '')}")
    if any(m.get("asked") is not None for m in moves):
        lines.append("A shift past the start or the end of a partition stops there (its earliest retained or its latest offset).")
    lost, several = [m for m in moves if m["before_retention"]], len({m["topic"] for m in moves}) > 1
    if lost:
        lines.append(f":warning: *Retention:* the time asked for is older than what partition{'s' if len(lost) > 1 else ''} "
                     f"{', '.join(_partition(m, several) for m in lost)} still keep{'s' if len(lost) == 1 else ''}: they start at their earliest "
                     "retained offset, and the data before it is gone. Backfill that stretch from the lake instead.")
    flink = row.plan.get("flink")
    if flink:
        lines[0] = f"{total:,} records will be read again by the Flink job *{escape(flink['job'])}*."
        lines += [escape(line) for line in plan_lines(flink, total)]
        if row.state == OpState.RUNNING.value:
            lines.append(f":hourglass_flowing_sand: {escape(step_text(row.progress.get('step')))}" if row.progress.get("phase") != "undo"
                         else ":hourglass_flowing_sand: restarting the job from its original savepoint…")
    if row.state == OpState.PLANNED.value and flink:
        lines.append("Nothing changes until Confirm; the job keeps running until then.")
    elif row.state == OpState.PLANNED.value:
        lines.append("Nothing moves until Confirm, which checks the offsets again. The job must stay stopped until then.")
    progress = row.progress
    if row.state == OpState.APPLIED.value and "lag" in progress:
        if progress.get("caught_up_at") and progress.get("members_seen", True):
            lines.append(f":checkered_flag: Caught up at {when(progress['caught_up_at'])}.")
        elif progress.get("caught_up_at"):
            lines.append(f":grey_question: Offsets at the end again at {when(progress['caught_up_at'])}, with no client seen in the group: "
                         "not shown to have read them again (see the thread).")
        else:
            measured = progress.get("lag_at") or progress.get("applied_at")
            lines.append(f"Lag: {progress['lag']:,} of {total:,} to re-read" + (f", as of {when(measured)}" if measured else "")
                         + (" (followed here until it has caught up)" if progress.get("following") else ""))
            if progress.get("unanswered_since"):
                lines.append(f":warning: Kafka has not answered since {when(progress['unanswered_since'])} "
                             f"({escape(progress.get('unanswered', ''))}): the lag above is from before")
    return lines


def job_lines(row: Operation) -> list[str]:
    """A pause or a resume: what it does, where it stands."""
    flink = row.plan["flink"]
    reason = [f":robot_face: Paused automatically: {escape(row.plan['reason'])}. Resume is on the alert."] if row.plan.get("reason") else []
    if row.kind == OpKind.PAUSE.value:
        lines = reason + [f"Stops *{escape(flink['job'])}* (job {escape(flink['job_id'])}) with a savepoint in `{escape(flink['savepoint_dir'])}`, not "
                 "drained (no window fires early). Nothing reads for it until it is resumed: its lag grows meanwhile."]
    else:
        lines = [f"Starts *{escape(flink['job'])}* again from the savepoint `{escape(flink['savepoint'])}` ({escape(flink['savepoint_from'])}) "
                 f"with its SQL ({escape(flink['sql_from'])}); it reads on from where it stopped."]
    if row.state == OpState.PLANNED.value:
        lines.append("Nothing changes until Confirm.")
    elif row.state == OpState.RUNNING.value:
        lines.append(f":hourglass_flowing_sand: {'stopping the job with a savepoint…' if row.kind == OpKind.PAUSE.value else 'starting the job…'}")
    return lines


def _topics(request: BackfillRequest, row: Operation) -> str:
    if request.topics:
        return ", ".join(f"`{escape(t)}`" for t in request.topics)
    return escape(topics_named(request, row.plan.get("moves", [])))


def _partition(move: dict[str, Any], several: bool) -> str:
    return f"{escape(move['topic'])}/{move['partition']}" if several else str(move["partition"])


def replay_lines(row: Operation) -> list[str]:
    """The count (per original topic, the parked ones), what is skipped, the target, samples; then the progress."""
    plan, request = row.plan, ReplayRequest.from_json(row.request)
    count, parked = plan.get("count", 0), plan.get("parked", 0)
    if request.target is not None:
        where = f"to `{request.target}`"
    else:
        where = "back to their original topics (" + ", ".join(f"`{t}` {n:,}" for t, n in sorted((plan.get("targets") or {}).items(),
                                                                                               key=lambda item: -item[1])) + ")"
    lines = [f"*{count - parked:,}* messages to copy {where}, each with its key, headers and original timestamp, "
             f"exactly once. {plan.get('skipped', 0):,} already copied by an earlier replay "
             f"({'copied again: --again' if request.again else 'skipped'}); {plan.get('filtered', 0):,} left out by the filter."]
    lines += [f":warning: {escape(note)}." for note in stamp_notes(request.dlq, plan.get("append_time") or [])]
    if parked:
        lines.append(parked_line(plan))
    options = [f"since {request.since:%Y-%m-%d %H:%M} UTC" if request.since else "", f"until {request.until:%Y-%m-%d %H:%M} UTC" if request.until else "",
               f"the oldest {request.limit:,}" if request.limit else "", f"header {escape(request.header[0])}={escape(request.header[1])}" if request.header else "",
               f"at most {request.rate:g}/s" if request.rate else ""]
    if any(options):
        lines.append("Only " + ", ".join(o for o in options if o) + ".")
    if request.target is not None and "replay" not in request.target and row.state in (OpState.PLANNED.value, DRY_RUN):
        lines.append(f":bulb: Replaying into a live topic reopens closed windows downstream; a replay-only topic (such as "
                     f"`{request.dlq.removesuffix('.dlq').removesuffix('-dlq')}.replay`) keeps replays out of live windows.")
    if row.state in (OpState.PLANNED.value, DRY_RUN):
        for sample in plan.get("samples", [])[:5]:
            lines.append(f"```{escape(sample)[:1500]}```")
    text = row.progress.get("text")
    if row.state in (OpState.RUNNING.value, OpState.CANCELLING.value) and text:
        lines.append(f"Progress: {text}")
    return lines


def parked_line(plan: dict[str, Any]) -> str:
    """How many will be parked, where, and the errors they last failed with."""
    route = plan.get("route") or {}
    errors = "; ".join(f"{escape(error)} ×{count:,}" for error, count in list((plan.get("parked_errors") or {}).items())[:3])
    exists = plan.get("parked_topic") in (plan.get("partitions") or {})
    return (f":parking: *{plan['parked']:,} will be parked* in `{plan.get('parked_topic')}`{'' if exists else ' (created for them)'}, not replayed: "
            f"they were dead-lettered more than {route.get('max_replays', '?')} times" + (f". Last error: {errors}" if errors else "") + ".")


def freeze_line(row: Operation) -> list[str]:
    """The freeze the operation was planned in, and the booked changes it would meet, named (oncall may still act: it is
    an incident)."""
    if row.state not in (OpState.PLANNED.value, DRY_RUN):
        return []
    lines = []
    freeze = row.plan.get("freeze")
    if freeze:
        lines.append(f":snowflake: *Inside the freeze {escape(freeze['name'])}* (until {when(freeze['ends'])})"
                     + (f": {escape(freeze['reason'])}" if freeze.get("reason") else "") + ". Oncall may act in an incident; the run is booked in "
                     "the calendar inside it, for everyone to see.")
    booked = row.plan.get("booked") or []
    if booked:
        lines.append(":calendar: *It meets booked changes:* " + "; ".join(
            f"#{b['id']} {escape(b['title'])} ({escape(b['kind']).replace('_', ' ')}, {when(b['start'])} – {when(b['end'])}: {escape(b['why'])})"
            for b in booked) + ". Tell their owners, or plan it around them.")
    return lines


def confirm_text(what: str, inside: str, row: Operation) -> str:
    """The confirm dialog's question, naming the booked changes it meets, within Slack's 300 characters."""
    booked = row.plan.get("booked") or []
    names = ", ".join(f"#{b['id']} {escape(b['title'][:50])}" for b in booked[:2]) + (f" and {len(booked) - 2} more" if len(booked) > 2 else "")
    for meets in ((f", meeting booked change{'s' if len(booked) > 1 else ''} {names}" if booked else ""),
                  f", meeting {len(booked)} booked change{'s' if len(booked) > 1 else ''} (named in the plan)"):
        text = f"This will {what} now{inside}{meets}."
        if len(text) <= CONFIRM_TEXT_MAX:
            return text
    return f"This will {what} now{inside}."


def buttons(row: Operation) -> list[dict[str, Any]]:
    """What can be done now: Confirm and Cancel a plan, Cancel a run, Undo an applied backfill."""
    value = str(row.id)
    if row.state == OpState.PLANNED.value:
        lost_to_group = skipped(row.plan.get("moves", [])) if row.kind == OpKind.BACKFILL.value else 0
        what = ("move the group's offsets" + (f", *skipping {lost_to_group:,} messages it has not read* (lost to it)" if lost_to_group else "")
                if row.kind == OpKind.BACKFILL.value else replay_what(row))
        if row.kind in (OpKind.PAUSE.value, OpKind.RESUME.value):
            what = (f"stop *{escape(row.request['job'])}* with a savepoint" if row.kind == OpKind.PAUSE.value
                    else f"start *{escape(row.request['job'])}* from its savepoint")
        elif row.plan.get("flink"):
            what = (f"stop *{escape(row.plan['flink']['job'])}* with a savepoint and restart it without its source's state, re-reading "
                    f"{sum(max(0, m['reread']) for m in row.plan['moves']):,} records (downstream sees them again)")
        freeze = row.plan.get("freeze")
        inside = f", inside the freeze *{escape(freeze['name'])}* (until {when(freeze['ends'])})" if freeze else ""
        return [_button("Confirm", ids.OPS_CONFIRM, value, "primary", {
                    "title": {"type": "plain_text", "text": "Run it?"},
                    "text": {"type": "mrkdwn", "text": confirm_text(what, inside, row)},
                    "confirm": {"type": "plain_text", "text": "Run"}, "deny": {"type": "plain_text", "text": "Not yet"}}),
                _button("Cancel", ids.OPS_CANCEL, value, "danger")]
    if row.state == OpState.RUNNING.value and row.plan.get("flink"):
        return []  # a Flink job's steps run to their end (a backfill's roll back)
    if row.state == OpState.RUNNING.value:
        return [_button("Cancel", ids.OPS_CANCEL, value, "danger")]
    if row.state == OpState.APPLIED.value and row.kind == OpKind.BACKFILL.value and row.plan.get("flink"):
        return [_button("Undo", ids.OPS_UNDO, value, None, {
            "title": {"type": "plain_text", "text": "Undo the backfill?"},
            "text": {"type": "mrkdwn", "text": "The job restarts from its savepoint of before the backfill. What downstream saw again stays."},
            "confirm": {"type": "plain_text", "text": "Undo"}, "deny": {"type": "plain_text", "text": "Keep"}})]
    if row.state == OpState.APPLIED.value and row.kind == OpKind.BACKFILL.value:
        return [_button("Undo", ids.OPS_UNDO, value, None, {
            "title": {"type": "plain_text", "text": "Undo the reset?"},
            "text": {"type": "mrkdwn", "text": "The group goes back to the offsets it had before. Stop the job first."},
            "confirm": {"type": "plain_text", "text": "Undo"}, "deny": {"type": "plain_text", "text": "Keep"}})]
    return []


def replay_what(row: Operation) -> str:
    """What a replay's Confirm does, in a few words."""
    plan, target = row.plan, row.request.get("target")
    sent, parked = plan.get("count", 0) - plan.get("parked", 0), plan.get("parked", 0)
    parts = [f"copy {sent:,} messages" + (f" back to {len(plan.get('targets') or {})} original topics" if target is None else "")] if sent or not parked else []
    return " and ".join(parts + ([f"park {parked:,}"] if parked else []))


def _button(text: str, action: str, value: str, style: str | None, confirm: dict[str, Any] | None = None) -> dict[str, Any]:
    element: dict[str, Any] = {"type": "button", "text": {"type": "plain_text", "text": text}, "action_id": action, "value": value}
    if style:
        element["style"] = style
    if confirm:
        element["confirm"] = confirm
    return element


def status_lines(rows: list[Operation], links: list[str | None]) -> list[str]:
    """``/ops status``: one line each, running first, with a link to its message where there is one."""
    lines = []
    for row, url in zip(rows, links, strict=True):
        extra = (f" — {escape(row.progress['text'])} (as of {when(row.updated_at)})" if row.state == OpState.RUNNING.value
                 and row.progress.get("text") else "")
        extra = extra or (f" — {escape(row.result[:200])}" if row.result else "")
        link = f" · <{url}|message>" if url else ""
        lines.append(f"• {title(row)} · {STATE_TEXT.get(row.state, row.state)} · {when(row.created_at)}{extra}{link}")
    return lines




PEEK_GROUPS = 20  # errors listed in a peek; the rest are counted
PEEK_EXAMPLE = 500  # characters of each example shown


def peek_reply(peek: Peek) -> Reply:
    """``/replay peek``: the newest dead letters by error, the most frequent first, with examples decoded."""
    dlq = escape(peek.request.dlq)
    if not peek.read:
        return Reply.text(f"`{dlq}` holds no dead letters now (read {when(peek.at)}): nothing to replay.")
    title = (f"*Dead letters of `{dlq}`*: the newest {peek.read:,} of the {peek.held:,} it holds, read {when(peek.at)}, "
             f"by error ({len(peek.groups)} error{'s' if len(peek.groups) != 1 else ''}):")
    lines = []
    for group in peek.groups[:PEEK_GROUPS]:
        topics = ", ".join(f"{escape(t)} ×{n:,}" for t, n in sorted(group.topics.items(), key=lambda item: -item[1])[:5])
        span = f"{_when_ms(group.first)} → {_when_ms(group.last)}" if group.first > 0 else "no timestamps"
        lines.append(f"*{group.count:,} ×* {escape(group.error)}" + (f"  ·  from {topics}" if topics else "") + f"  ·  {span}")
        for letter in group.examples:
            text = escape(letter.text[:PEEK_EXAMPLE]).replace("```", "` ` `")
            lines.append(f"```[{letter.partition}@{letter.offset}] {text}```")
    rest = peek.groups[PEEK_GROUPS:]
    if rest:
        lines.append(f"… and {len(rest)} more errors ({sum(g.count for g in rest):,} dead letters)")
    lines.append(f"Plan a replay: `/replay {dlq} --to TOPIC [--filter header=value]`, or each back where it came from: `/replay {dlq} "
                 "--to-original` (a plan first; nothing is copied before Confirm)")
    return Reply.sections(title, lines)


def _when_ms(stamp: int) -> str:
    return when(datetime.fromtimestamp(stamp / 1000, UTC))
