"""The ``bot`` command line."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from collections.abc import Sequence

from bot import __version__
from bot.cli import calendar as calendar_cli
from bot.cli import classify as classify_cli
from bot.cli import consumers as consumers_cli
from bot.cli import gate as gate_cli
from bot.cli import health as health_cli
from bot.cli import lineage as lineage_cli
from bot.cli import ops as ops_cli
from bot.cli import propose as propose_cli
from bot.cli import sli as sli_cli
from bot.config import Config, ConfigError
from bot.logs import configure


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``bot`` console script; returns the exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):
        parser.print_help()
        return 2
    try:
        return int(args.run(args) or 0)
    except ConfigError as err:
        print(f"bot: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def _parser() -> argparse.ArgumentParser:
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
    playground.set_defaults(run=_playground)

    classify_cli.add_parsers(sub)
    calendar_cli.add_parsers(sub)
    lineage_cli.add_parsers(sub)
    propose_cli.add_parser(sub)
    sli_cli.add_parsers(sub)
    ops_cli.add_parsers(sub)
    consumers_cli.add_parser(sub)
    gate_cli.add_parser(sub)
    health_cli.add_parser(sub)
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
        try:
            await stop.wait()
            logging.getLogger("bot").info("shutting down: finishing work in flight (at most %.0f s)", config.shutdown_grace)
        finally:
            await bot.stop()

    asyncio.run(run())
    return 0


def _migrate(args: argparse.Namespace) -> int:
    from bot.store import migrate

    config = Config.from_env(os.environ, require_slack=False)
    configure(config.log_level, config.secrets)
    migrate.upgrade(config.database_url, args.revision)
    print(f"database at {migrate.current(config.database_url)}")
    return 0


def _playground(args: argparse.Namespace) -> int:
    from bot.playground import run_playground

    config = Config.from_env(os.environ, require_slack=False)
    configure(config.log_level, config.secrets)
    asyncio.run(run_playground(config, args.port, args.slack_port, prompt=not args.no_prompt and sys.stdin.isatty()))
    return 0
