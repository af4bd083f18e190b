"""``bot consumers TOPIC``: every consumer group Kafka says reads a topic, declared or not (the stored census;
``--refresh`` takes a new one first)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from bot.cli.errors import command
from bot.cli.lineage import census_lines, census_of


def add_parsers(sub: Any) -> None:
    """Register ``consumers``."""
    consumers = sub.add_parser("consumers", help="the consumer groups Kafka says read a topic, declared or not")
    consumers.add_argument("topic")
    consumers.add_argument("--refresh", action="store_true", help="take a census now (needs KAFKA_BOOTSTRAP_SERVERS)")
    consumers.add_argument("--format", choices=("text", "json"), default="text")
    consumers.set_defaults(run=command(run_consumers))


def run_consumers(args: argparse.Namespace) -> int:
    """``[{"group", "state", "members": [{"client_id", "host"}], "declared_by", "team", "last_commit", "lag"}]``; exit 1 when
    groups nobody declared read the topic."""
    census = census_of(args.topic, args.refresh)
    if args.format == "json":
        print(json.dumps([r.as_json() for r in census.readers], indent=2, ensure_ascii=False))
    else:
        print("\n".join(census_lines(census)))
    return 1 if census.undeclared else 0
