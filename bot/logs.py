"""Logging set-up with secret redaction on every handler."""

from __future__ import annotations

import logging
from collections.abc import Iterable

REDACTED = "[redacted]"


class RedactSecrets(logging.Filter):
    """Replaces known secret values (and bearer headers) in the rendered message."""

    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        self._secrets = tuple(sorted({s for s in secrets if s}, key=len, reverse=True))

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = message
        for secret in self._secrets:
            redacted = redacted.replace(secret, REDACTED)
        if redacted != message:
            record.msg, record.args = redacted, None
        return True


def configure(level: str, secrets: Iterable[str]) -> None:
    """Send logs to stderr at ``level``, with every secret redacted."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    install_redaction(secrets, handler)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)


def install_redaction(secrets: Iterable[str], handler: logging.Handler) -> None:
    """Attach the redaction filter to one handler."""
    handler.addFilter(RedactSecrets(secrets))
