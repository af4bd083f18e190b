"""Logging set-up: every line redacted of secrets (tracebacks too), and what libraries log about requests
capped to one short line, so an unauthenticated caller cannot flood the log or plant lines in it."""

from __future__ import annotations

import logging
from collections.abc import Iterable

REDACTED = "[redacted]"
CAPPED_LOGGERS = ("slack_bolt", "slack_sdk", "bot.slack.bolt")  # they log request and response bodies
CAP = 300
ROUTINE_LOGGERS = ("apscheduler",)  # "Running job ...", "executed successfully": every few seconds, worth nothing to a reader
ROUTINE_LINES = ("Context impl ", "Will assume ", "Running upgrade ")  # Alembic's: `bot migrate` says where it went, in one line


class SafeFormatter(logging.Formatter):
    """Formats a record, then removes every secret from the whole text (message and traceback), and cuts
    the libraries' request logging down to one line of at most ``CAP`` characters."""

    def __init__(self, secrets: Iterable[str], fmt: str | None = None) -> None:
        super().__init__(fmt)
        self._secrets = tuple(sorted({s for s in secrets if s}, key=len, reverse=True))

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        if record.name.startswith(CAPPED_LOGGERS):
            if record.getMessage().startswith("Invalid request signature detected"):
                text = text[: text.index("Invalid request signature detected")] + "Invalid request signature detected (request refused)"
            text = text.replace("\r", "\\r").replace("\n", "\\n")
            if len(text) > CAP:
                text = text[: CAP - 1] + "…"
        return text


def configure(level: str, secrets: Iterable[str]) -> None:
    """Send logs to stderr at ``level``, redacted and capped."""
    handler = logging.StreamHandler()
    install_redaction(secrets, handler)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)


def install_redaction(secrets: Iterable[str], handler: logging.Handler) -> None:
    """Give one handler the redacting, capping formatter, and the scheduler's routine lines at DEBUG."""
    handler.setFormatter(SafeFormatter(secrets, "%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(routine_at_debug)


def routine_at_debug(record: logging.LogRecord) -> bool:
    """The scheduler's INFO lines (and Alembic's step by step) become DEBUG lines, shown only when the log level is DEBUG;
    warnings and errors (a missed run, a job that raised) stay as they are."""
    if record.levelno == logging.INFO and (record.name.startswith(ROUTINE_LOGGERS)
                                           or record.name.startswith("alembic") and record.getMessage().startswith(ROUTINE_LINES)):
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return logging.getLogger().isEnabledFor(logging.DEBUG)
    return True
