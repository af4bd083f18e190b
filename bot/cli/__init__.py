"""The ``bot`` command line. A subcommand's module is imported only when it is asked for (all of them for help), so
``bot classify`` on files starts without the database, Slack or Kafka clients."""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import logging
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from bot import __version__
from bot.config import Config, ConfigError
from bot.domain.text import inert
from bot.logs import configure

MODULES = {  # subcommand -> the module whose add_parsers registers it
    "classify": "classify", "subject": "classify", "rules": "classify", "calendar": "calendar", "catalog": "lineage", "lineage": "lineage",
    "impact": "lineage", "propose": "propose", "sli": "sli", "backfill": "ops", "replay": "ops", "ops": "ops", "consumers": "consumers",
    "gate": "gate", "gate-job": "gate", "health": "health", "flink": "flink", "transition": "transition",
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``bot`` console script; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:2] == ["gate", "job"]:  # the Flink release gate reads as a form of the deploy gate
        argv = ["gate-job", *argv[2:]]
    parser = _parser(argv)
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):
        parser.print_help()
        return 2
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = Inert(sys.stdout), Inert(sys.stderr)
    try:
        return int(args.run(args) or 0)
    except ConfigError as err:
        print(f"bot: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader went away (`bot ... | head`): stop quietly, as a program killed by SIGPIPE does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the interpreter's last flush has somewhere to go
        return 128 + signal.SIGPIPE
    finally:
        sys.stdout, sys.stderr = streams


class Inert:
    """A text stream that writes control characters as ``\\u00NN``: what the bot prints comes partly from outside (group
    and client names, dead letters, what people typed in Slack), and none of it may drive the terminal."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(inert(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def _parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bot", description="ChangeOps: schema changes without surprises; safe hands on Kafka.")
    parser.add_argument("--version", action="version", version=f"changeops {__version__}")
    sub = parser.add_subparsers(metavar="COMMAND")

    serve = sub.add_parser("serve", help="serve Slack's request URL, /healthz and /readyz (reads the environment)")
    serve.add_argument("--port", type=int, help="listen port (default: $PORT or 3000)")
    serve.set_defaults(run=_serve)

    migrate = sub.add_parser("migrate", help="create or upgrade the database at $DATABASE_URL")
    migrate.add_argument("--revision", default="head", help="target revision (default: head)")
    migrate.set_defaults(run=_migrate)

    playground = sub.add_parser("playground", help="run the bot with the Slack emulator on this machine (SQLite)")
    playground.add_argument("--port", type=int, default=3000, help="the bot's port (default 3000)")
    playground.add_argument("--slack-port", type=int, default=3001, help="the emulator's port (default 3001)")
    playground.add_argument("--no-prompt", action="store_true", help="serve only; do not read commands from the terminal")
    playground.add_argument("--seed-kafka", action="store_true",
                            help="fill KAFKA_BOOTSTRAP_SERVERS with the demo topics (a lagging group, a dead-letter topic): make run's own broker")
    playground.add_argument("--stop-with", type=int, action="append", default=[], metavar="PID",
                            help="stop when process PID ends (repeatable; make run names its own shell and its Kafka broker)")
    playground.set_defaults(run=_playground)

    asked = next((word for word in argv if not word.startswith("-")), None)
    wanted = [MODULES[asked]] if asked in MODULES else [] if asked is None and "--version" in argv else list(dict.fromkeys(MODULES.values()))
    # (help, no command or a typo: every subcommand, so help lists them all)
    for name in wanted:
        importlib.import_module(f"bot.cli.{name}").add_parsers(sub)
    return parser


def _serve(args: argparse.Namespace) -> int:
    from bot.runtime import Bot

    config = Config.from_env(os.environ)
    configure(config.log_level, config.secrets)

    async def run() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        bot = Bot(config)
        await bot.start(args.port)
        settle_heap()
        try:
            await stop.wait()
            logging.getLogger("bot").info("shutting down: finishing work in flight (at most %.0f s)", config.shutdown_grace)
        finally:
            await bot.stop()

    asyncio.run(run())
    return 0


def settle_heap() -> None:
    """Move what start-up built (modules, the app, the catalog) out of the collector's sight: the cyclic
    collector's full passes otherwise walk it all, stalling the event loop for 100 ms and more, which
    showed as the slowest acknowledgements (bench/ack_latency.py: p99 195 ms before, 80 ms after)."""
    gc.collect()
    gc.freeze()


def _migrate(args: argparse.Namespace) -> int:
    from bot.store import migrate

    config = Config.from_env(os.environ, require_slack=False)
    configure(config.log_level, config.secrets)
    before = migrate.current(config.database_url)
    migrate.upgrade(config.database_url, args.revision)
    after = migrate.current(config.database_url)
    print(f"database at {after}" + (" (up to date)" if after == before else f" (was {before or 'empty'}; LOG_LEVEL=DEBUG lists each step)"))
    return 0


def _playground(args: argparse.Namespace) -> int:
    from bot.playground import run_playground

    config = Config.from_env(os.environ, require_slack=False)
    configure(config.log_level, config.secrets)
    asyncio.run(run_playground(config, args.port, args.slack_port, prompt=not args.no_prompt and sys.stdin.isatty(), seed_kafka=args.seed_kafka,
                               stop_with=args.stop_with))
    return 0
