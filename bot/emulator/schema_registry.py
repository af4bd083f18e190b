"""A Confluent-compatible Schema Registry, emulated over real HTTP (the part the bot uses).

``POST /subjects/{subject}/versions`` registers (an identical schema keeps its id and version), ``POST
/subjects/{subject}`` looks a schema up (its subject, version and id; 404 when the subject does not have it),
``GET /subjects`` lists subjects, ``GET /subjects/{subject}/versions`` lists versions,
``GET /subjects/{subject}/versions/{version}`` (or ``latest``) returns one, ``GET /schemas/ids/{id}`` returns a schema.
``refuse(subject, status, code, message)`` makes the next registration fail the way a registry does
(409 for an incompatible schema, 422 for an invalid one).
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


class SchemaRegistryEmulator:
    """Subjects, versions and ids, in memory."""

    def __init__(self) -> None:
        self.schemas: dict[int, str] = {}
        self.subjects: dict[str, list[int]] = {}
        self.refusals: dict[str, tuple[int, int, str]] = {}

    def refuse(self, subject: str, status: int = 409, code: int = 409, message: str = "Schema being registered is incompatible with an earlier schema") -> None:
        """Refuse the next registration under ``subject``."""
        self.refusals[subject] = (status, code, message)

    def application(self) -> web.Application:
        """The aiohttp application to serve."""
        app = web.Application()
        app.router.add_post("/subjects/{subject}/versions", self._register)
        app.router.add_post("/subjects/{subject}", self._lookup)
        app.router.add_get("/subjects", self._subjects)
        app.router.add_get("/subjects/{subject}/versions", self._versions)
        app.router.add_get("/subjects/{subject}/versions/{version}", self._version)
        app.router.add_get("/schemas/ids/{id}", self._schema)
        return app

    async def _register(self, request: web.Request) -> web.Response:
        subject = request.match_info["subject"]
        if subject in self.refusals:
            status, code, message = self.refusals.pop(subject)
            return _json({"error_code": code, "message": message}, status)
        try:
            body = json.loads(await request.text())
            schema = json.loads(body["schema"])
        except (json.JSONDecodeError, KeyError, TypeError):
            return _json({"error_code": 42201, "message": "Invalid schema"}, 422)
        text = json.dumps(schema, sort_keys=True)
        known = next((i for i, s in self.schemas.items() if s == text), None)
        ident = known if known is not None else len(self.schemas) + 1
        self.schemas[ident] = text
        versions = self.subjects.setdefault(subject, [])
        if ident not in versions:
            versions.append(ident)
        return _json({"id": ident})

    async def _lookup(self, request: web.Request) -> web.Response:
        subject = request.match_info["subject"]
        try:
            text = json.dumps(json.loads(json.loads(await request.text())["schema"]), sort_keys=True)
        except (json.JSONDecodeError, KeyError, TypeError):
            return _json({"error_code": 42201, "message": "Invalid schema"}, 422)
        if subject not in self.subjects:
            return _json({"error_code": 40401, "message": f"Subject '{subject}' not found."}, 404)
        ids = self.subjects[subject]
        ident = next((i for i in ids if self.schemas[i] == text), None)
        if ident is None:
            return _json({"error_code": 40403, "message": "Schema not found"}, 404)
        return _json({"subject": subject, "version": ids.index(ident) + 1, "id": ident, "schema": self.schemas[ident]})

    async def _versions(self, request: web.Request) -> web.Response:
        subject = request.match_info["subject"]
        if subject not in self.subjects:
            return _json({"error_code": 40401, "message": f"Subject '{subject}' not found."}, 404)
        return _json(list(range(1, len(self.subjects[subject]) + 1)))

    async def _subjects(self, _request: web.Request) -> web.Response:
        return _json(sorted(self.subjects))

    async def _version(self, request: web.Request) -> web.Response:
        subject, version = request.match_info["subject"], request.match_info["version"]
        ids = self.subjects.get(subject)
        if not ids:
            return _json({"error_code": 40401, "message": f"Subject '{subject}' not found."}, 404)
        number = len(ids) if version in ("latest", "-1") else int(version) if version.isdigit() else 0
        if not 1 <= number <= len(ids):
            return _json({"error_code": 40402, "message": f"Version {version} not found."}, 404)
        ident = ids[number - 1]
        return _json({"subject": subject, "version": number, "id": ident, "schema": self.schemas[ident]})

    async def _schema(self, request: web.Request) -> web.Response:
        ident = int(request.match_info["id"])
        if ident not in self.schemas:
            return _json({"error_code": 40403, "message": "Schema not found"}, 404)
        return _json({"schema": self.schemas[ident]})


def _json(body: Any, status: int = 200) -> web.Response:
    return web.Response(text=json.dumps(body), status=status, content_type=CONTENT_TYPE)
