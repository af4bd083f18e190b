"""Leases: periodic work that one replica at a time does (a poller), taken over when its holder goes quiet; and the
names holders go by, which say which process holds, so a holder known dead (a process of this machine that is gone)
is taken over at once instead of when its lease runs out."""

from __future__ import annotations

import os
import secrets
import socket
from datetime import datetime, timedelta
from enum import StrEnum
from pathlib import Path

from sqlalchemy import or_, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col

from bot.store.database import Database
from bot.store.models import Lease


async def hold(db: Database, name: str, owner: str, ttl: timedelta, now: datetime) -> bool:
    """Take or renew the lease ``name`` for ``ttl``; False while another owner's lease runs."""
    async with db.session() as session:
        moved = await session.exec(update(Lease).where(col(Lease.name) == name, or_(col(Lease.owner) == owner, col(Lease.until) < now))
                                   .values(owner=owner, until=now + ttl))
        if getattr(moved, "rowcount", 0):
            await session.commit()
            return True
        session.add(Lease(name=name, owner=owner, until=now + ttl))
        try:
            await session.commit()
        except IntegrityError:
            return False
        return True


class Holder(StrEnum):
    """What this process can tell of a lease's holder."""

    ALIVE = "alive"  # a process of this machine that still runs
    DEAD = "dead"  # a process of this machine that ended (its pid gone, a zombie, or now another process's)
    UNKNOWN = "unknown"  # another machine's (or another pid namespace's), or a name that does not say: its lease decides


def process_owner(label: str) -> str:
    """A holder's name for this process: ``LABEL-RANDOM@HOST/MACHINE/PID/START`` (MACHINE: the boot and the pid namespace,
    so a process elsewhere is never judged by this one's pids; START: the pid's start time, so a reused pid is not it)."""
    pid, found = os.getpid(), _stat(os.getpid())
    return f"{label}-{secrets.token_hex(4)}@{socket.gethostname()}/{_machine() or '-'}/{pid}/{found[1] if found else '-'}"


def holder(owner: str | None) -> Holder:
    """Whether the process named ``owner`` (by :func:`process_owner`) is known to run, known to have ended, or unknown."""
    if not owner or "@" not in owner:
        return Holder.UNKNOWN
    parts = owner.rsplit("@", 1)[1].split("/")
    machine = _machine()
    if len(parts) != 4 or machine is None or parts[1] != machine or not parts[2].isdigit():
        return Holder.UNKNOWN
    found = _stat(int(parts[2]))
    if found is None or found[0] == "Z" or found[1] != parts[3]:
        return Holder.DEAD
    return Holder.ALIVE


def _machine() -> str | None:
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        namespace = os.readlink("/proc/self/ns/pid")  # pid:[4026531836]
    except OSError:
        return None  # not Linux: no holder is judged, leases decide
    return f"{boot[:8]}.{namespace.removeprefix('pid:[').removesuffix(']')}"


def _stat(pid: int) -> tuple[str, str] | None:
    """A process's state letter and start time (clock ticks after boot), or None when no such process runs."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0], fields[19]
