"""``bot gate SUBJECT FILE``: may this schema ship? For a producer's deploy pipeline: exit 0 only when the exact
schema is an approved version of the subject and no freeze covers it now (or an emergency override stands); 1
otherwise (``frozen`` names the freeze and when it ends); 2 for usage errors.

``bot gate job JOB --sql FILE [--state NAME=FILE ...]``: may this Flink job release ship? The five checks of the
release gate, answered by the bot (its warm planner); exit 0 pass, 1 blocked, 2 bad input or no planner."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

from bot.cli.api import ask, with_references
from bot.domain.compat.formats import SchemaType

VERDICT = {"approved": "approved as version {version}", "pending": "waiting for acknowledgements (proposal #{proposal})",
           "rejected": "not approved: proposal #{proposal} was {proposal_state}", "unknown": "not approved: no proposal carries this schema",
           "frozen": "approved as version {version}, but frozen: {freeze[name]} covers it until {freeze[ends]}"}


def add_parsers(sub: Any) -> None:
    """Register ``gate``."""
    gate = sub.add_parser("gate", help="exit 0 only when this exact schema is an approved version of the subject (deploy gate)",
                          description="Reads $CHANGEOPS_API_TOKEN (a token with proposals:read) and $CHANGEOPS_URL.")
    gate.add_argument("subject")
    gate.add_argument("file", help="the schema the release ships (.avsc, .proto, .json), - for stdin")
    gate.add_argument("--type", metavar="TYPE", help="avro, protobuf or json (default: by the file's extension, else the subject's)")
    gate.add_argument("--reference", action="append", default=None, metavar="NAME=SUBJECT:VERSION",
                      help="a schema reference the release registers with it, in order; repeatable (default: the subject's current ones)")
    gate.add_argument("--url", help="the bot's address (default $CHANGEOPS_URL, else http://127.0.0.1:3000)")
    gate.add_argument("--format", choices=("text", "json"), default="text")
    gate.set_defaults(run=run_gate)
    job = sub.add_parser("gate-job", help="bot gate job JOB --sql FILE: the Flink release gate's five checks (exit 0 pass, 1 blocked)",
                         description="Reads $CHANGEOPS_API_TOKEN (a token with proposals:read) and $CHANGEOPS_URL. Also: bot gate job ...")
    job.add_argument("job", help="the job's name in the catalog")
    job.add_argument("--sql", required=True, help="the job's Flink SQL (CREATE TABLE ... ; INSERT INTO ...), - for stdin")
    job.add_argument("--state", action="append", default=[], metavar="NAME=FILE", help="a state's Avro schema (.avsc); repeat per state")
    job.add_argument("--author", help="the developer's Slack user id (default: the token's user)")
    job.add_argument("--url", help="the bot's address (default $CHANGEOPS_URL, else http://127.0.0.1:3000)")
    job.add_argument("--format", choices=("text", "json"), default="text")
    job.set_defaults(run=run_job_gate)


def run_gate(args: argparse.Namespace) -> int:
    """Ask the bot; print the verdict (and the changes when not approved)."""
    try:
        text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text(encoding="utf-8")
        by_name = Path(args.file).suffix.lower() in (".avsc", ".proto", ".json")
        kind = SchemaType.parse(args.type) if args.type else SchemaType.of_file(args.file, text) if by_name else None
        schema: Any = text if kind is SchemaType.PROTOBUF else json.loads(text)
    except OSError as err:
        print(f"bot gate: cannot read {args.file}: {err.strerror}", file=sys.stderr)
        return 2
    except json.JSONDecodeError as err:
        print(f"bot gate: {args.file} is not JSON: {err.msg} at line {err.lineno}", file=sys.stderr)
        return 2
    except ValueError as err:
        print(f"bot gate: --type: {err}", file=sys.stderr)
        return 2
    registry_form = isinstance(schema, dict) and "schema" in schema and "type" not in schema  # {"schema", "schemaType", "references"}
    body: dict[str, Any] = dict(schema) if registry_form else {"schema": text}
    if kind is not None and (args.type or not registry_form):
        body["schemaType"] = kind.value
    if not with_references(body, args.reference, "bot gate"):
        return 2
    answer = ask("bot gate", f"/api/v1/subjects/{quote(args.subject, safe='')}/check", body, args.url)[1]
    if answer is None:
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


def run_job_gate(args: argparse.Namespace) -> int:
    """Send the job's SQL and state schemas to the bot; print the verdict and every finding."""
    try:
        sql = sys.stdin.read() if args.sql == "-" else Path(args.sql).read_text(encoding="utf-8")
        state = {}
        for item in args.state:
            name, _, file = item.partition("=")
            if not name or not file:
                print(f"bot gate job: --state {item}: expected NAME=FILE", file=sys.stderr)
                return 2
            state[name] = Path(file).read_text(encoding="utf-8")
    except OSError as err:
        print(f"bot gate job: cannot read {err.filename}: {err.strerror}", file=sys.stderr)
        return 2
    except UnicodeDecodeError:
        print("bot gate job: a file is not UTF-8 text", file=sys.stderr)
        return 2
    body = {"sql": sql, "state": state, **({"author": args.author} if args.author else {})}
    answer = ask("bot gate job", f"/api/v1/jobs/{quote(args.job, safe='')}/check", body, args.url, timeout=600)[1]
    if answer is None:
        return 2
    if args.format == "json":
        print(json.dumps(answer, ensure_ascii=False))
    else:
        print(f"{answer['job']}: {'release may ship' if answer['verdict'] == 'pass' else 'release blocked'} (Flink {answer['flink']})")
        for check in answer["checks"]:
            print(f"  {'ok     ' if check['ok'] else 'BLOCKED'} {check['check']}")
            for finding in check["findings"]:
                where = f"line {finding['line']}" + (f", column {finding['column_number']}" if finding["column_number"] else "") \
                    if finding["line"] else ""
                mark = {"warning": "warning: ", "info": "note: "}.get(finding["level"], "")
                print(f"          {args.sql}:{where}: {mark}{finding['message']}" if where else f"          {mark}{finding['message']}")
    return 0 if answer["verdict"] == "pass" else 1
