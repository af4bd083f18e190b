"""``bot consumers TOPIC``: every consumer group Kafka says reads a topic, declared or not (the stored census;
``--refresh`` takes a new one first). The answer always carries its age, and says when it is not live."""

from __future__ import annotations

import argparse
import json
from typing import Any

from bot.cli.errors import USAGE_ERROR, CommandError, command
from bot.cli.lineage import census_lines, census_of
from bot.domain.ops import OpsError, topic_name

EVERY_READER_DECLARED, UNDECLARED_READERS, NOT_LIVE = 0, 1, 3


def add_parsers(sub: Any) -> None:
    """Register ``consumers``."""
    consumers = sub.add_parser("consumers", help="the consumer groups Kafka says read a topic, declared or not",
                               description="Exit codes: 0 every reader is declared; 1 some readers nobody declared; 2 bad input (not a "
                                           "topic name, or a topic the cluster does not have); 3 the cluster did not answer and this is the stored census.")
    consumers.add_argument("topic")
    consumers.add_argument("--refresh", action="store_true", help="take a census now (needs KAFKA_BOOTSTRAP_SERVERS)")
    consumers.add_argument("--format", choices=("text", "json"), default="text")
    consumers.set_defaults(run=command(run_consumers))


def run_consumers(args: argparse.Namespace) -> int:
    """One object: ``{"topic", "taken_at", "age_seconds", "partial", "unanswered", "partial_reason", "failed", "live", "notes",
    "readers": [{"group", "state", "live", "seen_at", "members", "declared_by", "team", "lag", ...}]}``. Exit 1 when groups nobody
    declared read the topic; 3 when the answer is not a live census (the cluster did not answer, the newest census failed, or
    none was taken within its interval)."""
    try:
        topic_name(args.topic)
    except OpsError as err:
        raise CommandError(str(err), USAGE_ERROR) from None
    census = census_of(args.topic, args.refresh, ask=True)
    if args.format == "json":
        print(json.dumps(census.as_json(), indent=2, ensure_ascii=False))
    else:
        print("\n".join(census_lines(census)))
    if not census.live:
        return NOT_LIVE
    return UNDECLARED_READERS if census.undeclared else EVERY_READER_DECLARED
