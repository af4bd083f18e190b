"""The settings every librdkafka client of the bot starts with: its own log lines go through the bot's logging (its
format, its redaction, its level; librdkafka never writes to the terminal itself) and are produced only at the
bot's level. A broker that cannot be reached is reported by the bot in its own words ("the cluster did not
answer"); librdkafka's line for each reconnect attempt is DEBUG."""

from __future__ import annotations

import logging
import re
from typing import Any

LOG = logging.getLogger("bot.kafka.client")
SYSLOG = ((logging.DEBUG, 7), (logging.INFO, 6), (logging.WARNING, 4), (logging.ERROR, 3))  # librdkafka's log_level
TRANSPORT = re.compile(r"Connect to .* failed|Disconnected|Connection refused|(?:all )?brokers? (?:are )?down", re.IGNORECASE)


def settings(bootstrap: str, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """A client's configuration: ``bootstrap.servers``, the bot's logging, then ``options``."""
    level = LOG.getEffectiveLevel()
    syslog = next((number for threshold, number in reversed(SYSLOG) if level >= threshold), 7)
    return {"bootstrap.servers": bootstrap, "logger": LOG, "log_level": syslog, **(options or {})}


class _TransportAtDebug(logging.Filter):
    """Reconnect attempts and dropped connections, which librdkafka retries by itself, become DEBUG lines."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno > logging.DEBUG and TRANSPORT.search(record.getMessage()):
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            return LOG.isEnabledFor(logging.DEBUG)
        return True


LOG.addFilter(_TransportAtDebug())
