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
# What a consumer that reads a backlog adds (the metrics topic, a replay, a DLQ scan, the offsets log): librdkafka stops
# fetching a partition whose local queue is over its thresholds and looks at it again only after fetch.queue.backoff.ms,
# a second by default, so a reader that keeps up sat idle for most of each second (measured on the metrics topic: bursts
# of 150,000 records, then 0.77 s with nothing fetched).
BACKLOG_READER = {"fetch.queue.backoff.ms": 10}


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
