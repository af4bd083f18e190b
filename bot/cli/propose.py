"""``bot propose SUBJECT FILE``: open a proposal from a producer's CI, through the bot's HTTP API."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from bot.cli.api import ask, with_references
from bot.domain.compat.formats import SchemaType
from bot.domain.transitions.model import TransitionError, parse_mapping_text


def add_parsers(sub: Any) -> None:
    """Register ``propose``."""
    propose = sub.add_parser("propose", help="propose a schema change through the running bot (HTTP API)",
                             description="Reads $CHANGEOPS_API_TOKEN and $CHANGEOPS_URL (default http://127.0.0.1:3000).")
    propose.add_argument("subject")
    propose.add_argument("file", help="the new schema (.avsc, .proto, .json), - for stdin")
    propose.add_argument("--type", metavar="TYPE", help="avro, protobuf or json: must be the subject's (default: by the file's extension, "
                                                        "else the subject's)")
    propose.add_argument("--notes", default="", help="for consumers: migration plan, dual-version period")
    propose.add_argument("--proposer", help="the proposer's Slack user id (U...): the bot confirms it with Slack; required unless "
                                            "the token proposes as a user (NAME@USER in CHANGEOPS_API_TOKENS)")
    propose.add_argument("--window-start", help="planned start, ISO 8601 with an offset (2026-12-03T02:00:00Z)")
    propose.add_argument("--window-hours", type=float, help="planned duration in hours")
    propose.add_argument("--revision-of", type=int, help="the proposal this one revises")
    propose.add_argument("--reference", action="append", default=None, metavar="NAME=SUBJECT:VERSION",
                         help="a schema reference (a named type another subject's version defines), in order; repeatable. "
                              "Without any, the subject's current references are kept")
    propose.add_argument("--transition", action="store_true", help="ship a breaking change in steps: FILE is the target (after the "
                                                                   "contract); the bot proposes the expand version (both sides) first")
    propose.add_argument("--deadline", help="with --transition: by when every reader has moved, ISO 8601 with an offset (default: 14 days)")
    propose.add_argument("--mapping", help="with --transition: OLD=NEW field paths, comma-separated (default: what Avro aliases say)")
    propose.add_argument("--format", choices=("text", "json"), default="text")
    propose.set_defaults(run=run_propose)


def run_propose(args: argparse.Namespace) -> int:
    """Send the proposal; print the level, the state and the teams asked."""
    try:
        schema = sys.stdin.read() if args.file == "-" else Path(args.file).read_text(encoding="utf-8")
    except OSError as err:
        print(f"bot propose: cannot read {args.file}: {err.strerror}", file=sys.stderr)
        return 2
    body = {"subject": args.subject, "schema": schema, "notes": args.notes, **({"proposer": args.proposer} if args.proposer else {}),
            "window_start": args.window_start, "window_hours": args.window_hours, "revision_of": args.revision_of}
    if args.type or args.file != "-":
        try:
            body["schema_type"] = (SchemaType.parse(args.type) if args.type else SchemaType.of_file(args.file, schema)).value
        except ValueError as err:
            print(f"bot propose: --type: {err}", file=sys.stderr)
            return 2
        if not args.type and Path(args.file).suffix.lower() not in (".avsc", ".proto", ".json"):
            del body["schema_type"]  # no extension to go by: the subject's own type
    if not with_references(body, args.reference, "bot propose"):
        return 2
    if args.transition:
        return start_transition(args, body)
    if args.deadline or args.mapping:
        print("bot propose: --deadline and --mapping go with --transition", file=sys.stderr)
        return 2
    code, answer = ask("bot propose", "/api/v1/proposals", body)
    if code:
        return code
    if args.format == "json":
        print(json.dumps(answer, ensure_ascii=False))
    else:
        waiting = f", waiting for {', '.join(answer['waiting'])} until {answer['deadline']}" if answer["waiting"] else ""
        print(f"proposal #{answer['id']} on {answer['subject']}: {answer['level']}, {answer['state']}{waiting}")
    return 0


def start_transition(args: argparse.Namespace, proposal: dict[str, Any]) -> int:
    """``bot propose --transition``: the target through ``POST /api/v1/transitions``; prints the transition."""
    body: dict[str, Any] = {key: proposal[key] for key in ("subject", "schema", "proposer") if key in proposal}
    if args.deadline:
        body["deadline"] = args.deadline
    if args.mapping:
        try:
            body["mapping"] = [r.as_json() for r in parse_mapping_text(args.mapping)]
        except TransitionError as err:
            print(f"bot propose: --{err}", file=sys.stderr)
            return 2
    code, answer = ask("bot propose", "/api/v1/transitions", body)
    if code:
        return code
    if args.format == "json":
        print(json.dumps(answer, ensure_ascii=False))
    else:
        print(transition_text(answer))
    return 0


def transition_text(answer: dict[str, Any]) -> str:
    """A transition for a terminal: its phase, mapping, proposals and readers."""
    words = ", ".join(f"{m['old']} -> {m['new']}" for m in answer["mapping"])
    lines = [f"transition #{answer['id']} on {answer['subject']}: {answer['phase']} ({words}), deadline {answer['deadline']}"
             + (" (overdue)" if answer.get("overdue") else ""),
             f"  expand: proposal #{answer['expand_proposal']}" + (f", contract: proposal #{answer['contract_proposal']}" if answer["contract_proposal"] else "")]
    for reader in answer["readers"]:
        kind = "job" if "job" in reader else "group"
        lines.append(f"  {'moved  ' if reader['moved'] else 'waiting'} {kind} {reader[kind]} ({reader['team'] or 'no team'}): {reader['evidence']}")
    if answer.get("ended"):
        lines.append(f"  ended: {answer['ended']}")
    lines += [f"  note: {note}" for note in answer.get("notes", [])]
    return "\n".join(lines)
