"""The real Schema Registry of the tests (Apicurio Registry, its Confluent API), and a way to take it off the network.

One registry per pytest process: the ones ``scripts/test.sh`` started (``TEST_SCHEMA_REGISTRY_URLS``, one per xdist
worker), else one this process starts with ``scripts/registry.sh``. Each test starts with no subjects.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from tests.ports import free_port

ROOT = Path(__file__).resolve().parent.parent
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


@contextmanager
def registry_url() -> Iterator[str]:
    """The URL of this process's registry (started and stopped here when the test script did not start one)."""
    given = os.environ.get("TEST_SCHEMA_REGISTRY_URLS", "").split()
    if given:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
        index = int(worker[2:]) if worker[2:].isdigit() else 0
        yield given[index % len(given)]
        return
    run_dir = tempfile.mkdtemp(prefix="changeops-registry.")
    started = subprocess.run([str(ROOT / "scripts/registry.sh"), "start", run_dir], capture_output=True, text=True, check=False)
    if started.returncode != 0:
        raise RuntimeError(f"scripts/registry.sh could not start the registry:\n{started.stderr}")
    exports = dict(shlex.split(line.removeprefix("export "))[0].split("=", 1) for line in started.stdout.splitlines() if line.startswith("export "))
    try:
        yield exports["SCHEMA_REGISTRY_URL"]
    finally:
        subprocess.run([str(ROOT / "scripts/registry.sh"), "stop", run_dir], capture_output=True, check=False)


class RealRegistry:
    """A client for the tests: what the registry holds, and registrations made around the bot."""

    def __init__(self, url: str) -> None:
        self.url = url

    async def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """One request; the status and the decoded answer."""
        async with aiohttp.ClientSession() as http, http.request(method, self.url + path, data=None if body is None else json.dumps(body),
                                                                  headers={"Content-Type": CONTENT_TYPE}) as response:
            text = await response.text()
            return response.status, json.loads(text) if text else None

    async def register(self, subject: str, schema: Any, references: list[dict[str, Any]] | None = None, schema_type: str = "AVRO") -> int:
        """Register ``schema`` (JSON or text, of the registry's ``schema_type``) around the bot; its id."""
        body: dict[str, Any] = {"schema": schema if isinstance(schema, str) else json.dumps(schema)}
        if schema_type != "AVRO":
            body["schemaType"] = schema_type
        if references:
            body["references"] = references
        status, answer = await self.call("POST", f"/subjects/{subject}/versions", body)
        assert status == 200, answer
        return int(answer["id"])

    async def versions(self, subject: str) -> list[dict[str, Any]]:
        """Every version of ``subject`` (number, id, schema, references), oldest first; empty for an unknown subject."""
        status, numbers = await self.call("GET", f"/subjects/{subject}/versions")
        if status == 404:
            return []
        found = []
        for number in numbers:
            _, version = await self.call("GET", f"/subjects/{subject}/versions/{number}")
            found.append(version)
        return found

    async def compatibility(self, subject: str) -> str:
        """The subject's compatibility level."""
        _, answer = await self.call("GET", f"/config/{subject}")
        return str(answer["compatibilityLevel"])

    async def set_compatibility(self, subject: str, level: str) -> None:
        """Set the subject's compatibility level (around the bot)."""
        status, answer = await self.call("PUT", f"/config/{subject}", {"compatibility": level})
        assert status == 200, answer

    async def clear(self) -> None:
        """Delete every subject (those that others reference after those that reference them)."""
        for _ in range(20):
            status, subjects = await self.call("GET", "/subjects")
            if not subjects:
                return
            for subject in subjects:
                if (await self.call("DELETE", f"/subjects/{subject}"))[0] == 200:
                    await self.call("DELETE", f"/subjects/{subject}?permanent=true")
                    await self.call("DELETE", f"/config/{subject}")
        raise RuntimeError(f"the registry at {self.url} still holds subjects: {subjects}")


class Outage:
    """A TCP proxy in front of the registry: ``url`` reaches it until ``cut()`` (connections reset, the port closed),
    and again after ``restore()`` (the same port). ``seen`` holds the bytes clients sent (to look at headers)."""

    def __init__(self, target: str) -> None:
        parts = urlsplit(target)
        self.host, self.port_to, self.path = parts.hostname or "127.0.0.1", parts.port or 80, parts.path
        self.server: asyncio.Server | None = None
        self.port = 0
        self.seen = bytearray()
        self.links: set[asyncio.StreamWriter] = set()

    @property
    def url(self) -> str:
        """The registry's URL through the proxy."""
        return f"http://127.0.0.1:{self.port}{self.path}"

    async def restore(self) -> None:
        """Listen (again, on the same port). The port is below the kernel's ephemeral range, so while it is closed no
        outgoing connection (of another test, on another worker) can be given it as its own."""
        self.port = self.port or free_port()
        self.server = await asyncio.start_server(self._link, "127.0.0.1", self.port)

    async def cut(self) -> None:
        """Close the port and every open connection."""
        if self.server is not None:
            self.server.close()
            for writer in list(self.links):
                writer.transport.abort()
            await self.server.wait_closed()
            self.server = None

    async def _link(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(self.host, self.port_to)
        except OSError:
            writer.transport.abort()
            return
        self.links |= {writer, up_writer}

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter, record: bool) -> None:
            with suppress(OSError, asyncio.CancelledError):
                while data := await source.read(65536):
                    if record:
                        self.seen += data
                    sink.write(data)
                    await sink.drain()
            sink.transport.abort()

        try:
            await asyncio.gather(pipe(reader, up_writer, True), pipe(up_reader, writer, False))
        finally:
            self.links -= {writer, up_writer}
