"""The backfill and replay forms (from ``/backfill`` or ``/replay`` alone, or an alert's button), prefilled where known."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from bot.slack import ids
from bot.slack.render import section


def _text(block: str, action: str, label: str, initial: str | None, optional: bool = False, hint: str | None = None,
          longest: int = 249) -> dict[str, Any]:
    element: dict[str, Any] = {"type": "plain_text_input", "action_id": action, "max_length": longest}
    if initial:
        element["initial_value"] = initial
    field: dict[str, Any] = {"type": "input", "block_id": block, "optional": optional, "label": {"type": "plain_text", "text": label},
                             "element": element}
    if hint:
        field["hint"] = {"type": "plain_text", "text": hint}
    return field


def _moment(block: str, action: str, label: str, initial: datetime | None, optional: bool) -> dict[str, Any]:
    element: dict[str, Any] = {"type": "datetimepicker", "action_id": action}
    if initial is not None:
        element["initial_date_time"] = int(initial.timestamp())
    return {"type": "input", "block_id": block, "optional": optional, "label": {"type": "plain_text", "text": label}, "element": element}


def backfill_form(channel: str, group: str | None = None, topics: str | None = None, since: datetime | None = None) -> dict[str, Any]:
    """Group, topics, back to when (or another reset), which partitions."""
    return {"type": "modal", "callback_id": ids.BACKFILL_VIEW, "private_metadata": json.dumps({"channel": channel}),
            "title": {"type": "plain_text", "text": "Plan a backfill"}, "submit": {"type": "plain_text", "text": "Plan"},
            "close": {"type": "plain_text", "text": "Cancel"},
            "blocks": [section("Resets a *stopped* consumer group to a time, or as below; you see the plan and confirm before anything moves."),
                       _text(ids.GROUP_BLOCK, ids.GROUP_ACTION, "Consumer group", group),
                       _text(ids.TOPIC_BLOCK, ids.TOPIC_ACTION, "Topics", topics, longest=3000,
                             hint="one topic, several separated by commas, or --all-topics (every topic the group has committed on)"),
                       _moment(ids.SINCE_BLOCK, ids.SINCE_ACTION, "Read again from", since, optional=True),
                       _text(ids.RESET_BLOCK, ids.RESET_ACTION, "Or reset instead", None, optional=True,
                             hint="one of --to-earliest, --to-latest, --shift-by -500, --to-offsets 0:1200,1:980, --by-duration 2h "
                                  "(leave the time empty)"),
                       _text(ids.OPTIONS_BLOCK, ids.OPTIONS_ACTION, "Partitions", None, optional=True, hint="e.g. 0,1 (all when empty; with one topic)")]}


def replay_form(channel: str, dlq: str | None = None, target: str | None = None) -> dict[str, Any]:
    """DLQ, target, since when, other options."""
    return {"type": "modal", "callback_id": ids.REPLAY_VIEW, "private_metadata": json.dumps({"channel": channel}),
            "title": {"type": "plain_text", "text": "Plan a DLQ replay"}, "submit": {"type": "plain_text", "text": "Plan"},
            "close": {"type": "plain_text", "text": "Cancel"},
            "blocks": [section("Copies dead letters back exactly once, keeping keys, headers and event time; you see the count and "
                               "samples and confirm first. A replay-only target keeps replays out of live windows."),
                       _text(ids.TOPIC_BLOCK, ids.TOPIC_ACTION, "DLQ topic", dlq),
                       _text(ids.TARGET_BLOCK, ids.TARGET_ACTION, "Copy to", target, optional=True,
                             hint="a topic; empty: each back to the topic it came from (its Connect or Spring headers)"),
                       _moment(ids.SINCE_BLOCK, ids.SINCE_ACTION, "Only dead letters since", None, optional=True),
                       _text(ids.OPTIONS_BLOCK, ids.OPTIONS_ACTION, "More options", None, optional=True,
                             hint="e.g. --limit 1000 --filter error=timeout --rate 500/s --until 2026-12-02T10:00Z")]}
