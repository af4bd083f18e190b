"""``bot transition status ID``: a transition as it stands, through the bot's HTTP API (for scripts and terminals)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from bot.cli.api import ask
from bot.cli.propose import transition_text


def add_parsers(sub: Any) -> None:
    """Register ``transition``."""
    transition = sub.add_parser("transition", help="transitions: a breaking change shipped in steps (start one with bot propose --transition)",
                                description="Reads $CHANGEOPS_API_TOKEN and $CHANGEOPS_URL (default http://127.0.0.1:3000).").add_subparsers(metavar="ACTION")
    status = transition.add_parser("status", help="phase, mapping, proposals, and every reader of the old fields with its evidence")
    status.add_argument("id", help="the transition's number")
    status.add_argument("--format", choices=("text", "json"), default="text")
    status.set_defaults(run=run_status)


def run_status(args: argparse.Namespace) -> int:
    """Print the transition (the API's JSON object with ``--format json``); 1 when there is none."""
    number = str(args.id).lstrip("#")
    if not number.isdecimal():
        print(f"bot transition status: {args.id!r} is not a transition number", file=sys.stderr)
        return 2
    code, answer = ask("bot transition status", f"/api/v1/transitions/{int(number)}", None)
    if code:
        return code
    print(json.dumps(answer, ensure_ascii=False, indent=2) if args.format == "json" else transition_text(answer))
    return 0
