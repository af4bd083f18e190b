"""Ports for servers the tests start and stop."""

from __future__ import annotations

import random
import socket
from pathlib import Path


def free_port() -> int:
    """A free port below the kernel's ephemeral range: the brokers and registries the scripts start take theirs from that range
    (binding port 0), so one of them cannot take this port between now and when the test's process binds it."""
    ephemeral = Path("/proc/sys/net/ipv4/ip_local_port_range")
    low = int(ephemeral.read_text().split()[0]) if ephemeral.exists() else 32768
    for _ in range(100):
        port = random.randrange(10_000, max(10_001, low))
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise AssertionError("no free port below the ephemeral range")
