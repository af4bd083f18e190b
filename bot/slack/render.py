"""Replies as Block Kit with a plain-text fallback, kept within Slack's limits."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from bot.domain.text import unreordered

SECTION_TEXT_MAX = 3000
USER_ID = re.compile(r"[UW][A-Z0-9]{2,20}")


def when(moment: datetime | str | None) -> str:
    """A time each reader sees in their own zone (Slack's date formatting), with a UTC fallback; "—" for none."""
    if moment is None:
        return "—"
    value = datetime.fromisoformat(moment) if isinstance(moment, str) else moment
    value = (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC)
    return f"<!date^{int(value.timestamp())}^{{date_short_pretty}} {{time}}|{value:%Y-%m-%d %H:%M} UTC>"


def escape(text: object) -> str:
    """Text from people or schemas, made inert in mrkdwn: Slack's three control characters escaped, so no
    ``<!channel>``, ``<@U...>``, ``<#C...>`` or ``<http...|link>`` can be smuggled in (code spans do not protect), and
    characters that would reorder what follows them shown by their code point."""
    return unreordered(str(text)).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def mention(user: object) -> str:
    """``<@U123>`` for a Slack user id; anything else is shown as escaped text, never as markup."""
    return f"<@{user}>" if isinstance(user, str) and USER_ID.fullmatch(user) else escape(user or "someone")


@dataclass
class Reply:
    """A message body: fallback text plus blocks."""

    fallback: str
    blocks: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def text(cls, text: str) -> Reply:
        """A one-section reply."""
        return cls(text, [section(text)])

    @classmethod
    def sections(cls, title: str, lines: list[str]) -> Reply:
        """A title and lines, folded into as few sections as Slack's limits allow."""
        blocks = [section(title)] + [section(chunk) for chunk in fold(lines)]
        return cls("\n".join([title, *lines]), blocks)

    def extend(self, other: Reply) -> Reply:
        """This reply followed by another."""
        return Reply(f"{self.fallback}\n{other.fallback}", self.blocks + other.blocks)

    def ack(self) -> dict[str, Any]:
        """Keyword arguments for Bolt's ``ack``."""
        return {"text": self.fallback, "blocks": self.blocks}

    def respond(self) -> dict[str, Any]:
        """Keyword arguments for Bolt's ``respond`` (ephemeral)."""
        return {"text": self.fallback, "blocks": self.blocks, "response_type": "ephemeral"}


def ephemeral(text: str) -> dict[str, Any]:
    """Keyword arguments for ``respond`` to a click: a note only the clicker sees, leaving the message as it is."""
    return {"text": text, "response_type": "ephemeral", "replace_original": False}


def section(text: str) -> dict[str, Any]:
    """A mrkdwn section, cut to Slack's 3,000 characters."""
    if len(text) > SECTION_TEXT_MAX:
        text = text[: SECTION_TEXT_MAX - 1] + "…"
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def fold(lines: list[str], limit: int = SECTION_TEXT_MAX) -> list[str]:
    """Join lines into chunks of at most ``limit`` characters each."""
    chunks: list[str] = []
    current = ""
    for line in lines:
        candidate = f"{current}\n{line}" if current else line
        if len(candidate) > limit and current:
            chunks.append(current)
            candidate = line
        current = candidate
    if current:
        chunks.append(current)
    return chunks
