"""``bot gate SUBJECT FILE``: may this schema ship? For a producer's deploy pipeline: exit 0 only when the exact
schema is an approved version of the subject and no freeze covers it now (or an emergency override stands); 1
otherwise (``frozen`` names the freeze and when it ends); 2 for usage errors."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

from bot.cli.api import Unreachable, call

VERDICT = {"approved": "approved as version {version}", "pending": "waiting for acknowledgements (proposal #{proposal})",
           "rejected": "not approved: proposal #{proposal} was {proposal_state}", "unknown": "not approved: no proposal carries this schema",
           "frozen": "approved as version {version}, but frozen: {freeze[name]} covers it until {freeze[ends]}"}


def add_parsers(sub: Any) -> None:
    """Register ``gate``."""
    gate = sub.add_parser("gate", help="exit 0 only when this exact schema is an approved version of the subject (deploy gate)",
                          description="Reads $CHANGEOPS_API_TOKEN (a token with proposals:read) and $CHANGEOPS_URL.")
    gate.add_argument("subject")
    gate.add_argument("file", help="the schema the release ships (.avsc), - for stdin")
    gate.add_argument("--url", help="the bot's address (default $CHANGEOPS_URL, else http://127.0.0.1:3000)")
    gate.add_argument("--format", choices=("text", "json"), default="text")
    gate.set_defaults(run=run_gate)


def run_gate(args: argparse.Namespace) -> int:
    """Ask the bot; print the verdict (and the changes when not approved)."""
    try:
        text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text(encoding="utf-8")
        schema = json.loads(text)
    except OSError as err:
        print(f"bot gate: cannot read {args.file}: {err.strerror}", file=sys.stderr)
        return 2
    except json.JSONDecodeError as err:
        print(f"bot gate: {args.file} is not JSON: {err.msg} at line {err.lineno}", file=sys.stderr)
        return 2
    try:
        status, answer = call(f"/api/v1/subjects/{quote(args.subject, safe='')}/check", {"schema": json.dumps(schema)}, args.url)
    except Unreachable as err:
        print(f"bot gate: {err}", file=sys.stderr)
        return 2
    if status >= 400:
        print(f"bot gate: {answer.get('error', status)}", file=sys.stderr)
        return 2
    if args.format == "json":
        print(json.dumps(answer, ensure_ascii=False))
    else:
        tail = "" if answer["status"] in ("approved", "frozen") else f" ({answer['level']})"
        if answer["status"] == "approved" and answer.get("override"):
            tail = f" (inside the freeze {answer['freeze']['name']}: an emergency override stands until {answer['override']['until']})"
        print(f"{args.subject}: {VERDICT[answer['status']].format(**answer)}{tail}")
        if answer["status"] not in ("approved", "frozen"):
            for change in answer["changes"][:50]:
                print(f"  {change['rule']} {change['path']}: {change['message']}")
    return 0 if answer["status"] == "approved" else 1
