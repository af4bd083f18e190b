"""What every command shares: a user-facing error with its exit code, and the wrapper that prints it."""

from __future__ import annotations

import argparse
import sys
from typing import Any

BAD_INPUT = 1
USAGE_ERROR = 2


class CommandError(Exception):
    """A message for the user and the exit code to leave with."""

    def __init__(self, message: str, code: int = BAD_INPUT) -> None:
        super().__init__(message)
        self.code = code


def command(handler: Any) -> Any:
    """A CLI handler whose CommandError becomes one line on stderr and its exit code."""

    def run(args: argparse.Namespace) -> int:
        try:
            return int(handler(args))
        except CommandError as err:
            print(f"bot: {err}", file=sys.stderr)
            return err.code

    return run
