"""A slash command as the subcommand handlers see it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CommandRequest:
    """One slash command: which subcommand, its arguments, who typed it where, and its trigger."""

    command: str
    subcommand: str
    args: list[str]
    user: str
    channel: str
    trigger_id: str
