"""MkDocs hooks: the pages made from the code. A page's ``<!-- generated: rules -->`` becomes the classification rules as
``bot rules --format markdown`` prints them, ``<!-- generated: cli -->`` the reference of every ``bot`` command from its
argparse parsers, and ``<!-- generated: buf-rules -->`` Buf's breaking rules with their categories, ``<!-- generated: http -->`` the table of the routes the bot mounts, so none is ever copied by hand."""

from __future__ import annotations

import argparse
import functools
from typing import Any

from bot.cli import _parser
from bot.cli.buf import rules_markdown as buf_rules_markdown
from bot.domain.compat.report import rules_markdown
from bot.web import pagerduty
from bot.web.api import ENDPOINTS
from bot.web.server import SERVED


def on_page_markdown(markdown: str, **_: Any) -> str:
    """Fill the markers of a page."""
    for marker, make in (("<!-- generated: rules -->", rules_markdown), ("<!-- generated: buf-rules -->", buf_rules_markdown),
                         ("<!-- generated: cli -->", cli_reference), ("<!-- generated: http -->", http_reference)):
        if marker in markdown:
            markdown = markdown.replace(marker, make())
    return markdown


def cli_reference() -> str:
    """Every command and subcommand of ``bot``: its summary and its ``--help``."""
    return "\n".join(_commands(_parser(), "bot", 2))


def _commands(parser: argparse.ArgumentParser, name: str, depth: int) -> list[str]:
    lines: list[str] = []
    for action in parser._actions:  # argparse keeps its subcommands here, as documentation generators read them
        if not isinstance(action, argparse._SubParsersAction):
            continue
        summaries = {choice.dest: choice.help or "" for choice in action._choices_actions}
        for word, sub in action.choices.items():
            sub.formatter_class = functools.partial(argparse.HelpFormatter, width=100)
            lines += [f"{'#' * depth} `{name} {word}`", "", summaries.get(word, ""), "", "```text", sub.format_help().rstrip(), "```", ""]
            lines += _commands(sub, f"{name} {word}", min(depth + 1, 4))
    return lines


def http_reference() -> str:
    """The routes the bot mounts: the API's with their scopes, then the others."""
    rows = ["| route | needs | what it does |", "|---|---|---|"]
    rows += [f"| `{e.method} {e.path}` | {'scope `' + e.access + '`' if e.path.startswith('/api/v1/') and ':' in e.access else e.access} | {e.summary} |"
             for e in (*ENDPOINTS, pagerduty.ENDPOINT, *SERVED)]
    return "\n".join(rows) + "\n"
