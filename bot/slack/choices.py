"""Menus of names that may outgrow a Slack menu (subjects, teams).

Slack lists at most 100 options in a menu. Up to that, the menu holds every name (Slack filters them as one types);
past it, the menu asks the bot as one types (``external_select``, Slack's ``block_suggestion``), and the bot answers
with the names that match, those that start with what was typed first. A name chosen beforehand is shown chosen
either way.

An option's value holds 150 characters and its text 75 (Kafka topics, and so subjects, reach 249): a longer name is
shown by its start and its end, and its value is a digest the form's submission turns back into the name (``name_of``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp

MENU_MAX = 100  # options one Slack menu lists (and one block_suggestion answer holds)
TEXT_MAX, VALUE_MAX = 75, 150  # characters of an option's text and of its value
LONG = "sha256:"  # the value of a name longer than VALUE_MAX: this and the name's digest

Names = Callable[[], Awaitable[list[str]]]


def option(name: str) -> dict[str, Any]:
    shown = name if len(name) <= TEXT_MAX else f"{name[:TEXT_MAX // 2 - 1]}…{name[-(TEXT_MAX - TEXT_MAX // 2):]}"
    return {"text": {"type": "plain_text", "text": shown}, "value": name if len(name) <= VALUE_MAX else _digest(name)}


async def name_of(value: str, names: Names) -> str:
    """The name an option's ``value`` stands for among ``names`` (the value itself when it is a name, or names none)."""
    if not value.startswith(LONG):
        return value
    return next((name for name in await names() if len(name) > VALUE_MAX and _digest(name) == value), value)


def _digest(name: str) -> str:
    return LONG + hashlib.sha256(name.encode()).hexdigest()


def menu(action_id: str, names: list[str], *, chosen: list[str] | None = None, multi: bool = False,
         placeholder: str | None = None) -> dict[str, Any]:
    """A menu of ``names`` (every one listed, or asked for as one types past ``MENU_MAX``), with ``chosen`` picked."""
    listed = len(names) <= MENU_MAX
    kind = ("multi_" if multi else "") + ("static_select" if listed else "external_select")
    element: dict[str, Any] = {"type": kind, "action_id": action_id}
    if listed:
        element["options"] = [option(name) for name in names]
    else:
        element["min_query_length"] = 0  # the first names are offered before anything is typed
    if placeholder is not None:
        element["placeholder"] = {"type": "plain_text", "text": placeholder}
    picked = [option(name) for name in chosen or [] if name in names]
    if picked:
        element.update({"initial_options": picked} if multi else {"initial_option": picked[0]})
    return element


def matching(names: list[str], typed: str) -> list[dict[str, Any]]:
    """Up to ``MENU_MAX`` options for what was typed: names that start with it, then names that hold it (any case)."""
    query = typed.strip().lower()
    starts = [n for n in names if n.lower().startswith(query)]
    holds = [n for n in names if query in n.lower() and not n.lower().startswith(query)]
    return [option(name) for name in (starts + holds)[:MENU_MAX]]


def register(app: AsyncApp, sources: Mapping[str, Names], track: Callable[[Any], Any]) -> None:
    """Answer Slack's ``block_suggestion`` for each menu's action id from its source of names."""
    for action_id, names in sources.items():
        app.options(action_id)(track(_suggest(names)))


def _suggest(names: Names) -> Callable[..., Awaitable[None]]:
    async def suggest(ack: AsyncAck, payload: dict[str, Any]) -> None:
        await ack(options=matching(sorted(await names()), str(payload.get("value") or "")))
    return suggest
