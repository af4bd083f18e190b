"""MkDocs hooks: the pages made from the code. A page's ``<!-- generated: rules -->`` becomes the classification rules as
``bot rules --format markdown`` prints them, and ``<!-- generated: cli -->`` the reference of every ``bot`` command from its
argparse parsers, so neither is ever copied by hand."""

from __future__ import annotations

import argparse
import functools
from typing import Any

from bot.cli import _parser
from bot.domain.compat.report import rules_markdown


def on_page_markdown(markdown: str, **_: Any) -> str:
    """Fill the markers of a page."""
    for marker, make in (("<!-- generated: rules -->", rules_markdown), ("<!-- generated: cli -->", cli_reference)):
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
