"""The HTTP API for pipelines and emitters: OpenLineage events in, proposals in and out.

Every route needs a bearer token with the route's scope (401 without a known token, 403 without the
scope); bad input of any kind is answered 400 with ``error`` (and ``field``), never a traceback."""

from __future__ import annotations

import hmac
import json
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import aiohttp
from aiohttp import web
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.config import ApiToken
from bot.domain.calendar import CalendarError, Scope
from bot.domain.lineage.catalog import moment
from bot.domain.lineage.model import SUBJECT_MAX
from bot.domain.lineage.openlineage import OpenLineageError, parse_event
from bot.domain.references import read_references
from bot.domain.sli.samples import SampleError, checked, latest_believed
from bot.domain.transitions.model import TransitionError, read_mapping
from bot.services.calendar import CalendarService
from bot.services.gate import Gate, GateError
from bot.services.lineage import LineageService
from bot.services.proposals import ProposalError, Proposals, ProposalView
from bot.services.releases import ReleaseError, Releases
from bot.services.sli import SliService
from bot.services.transitions import Transitions
from bot.store.models import aware, utcnow

log = logging.getLogger(__name__)
Handler = Callable[[web.Request, ApiToken], Awaitable[web.StreamResponse]]


@dataclass(frozen=True)
class Endpoint:
    """One route the bot serves, as its reference lists it (the routes are mounted from these)."""

    method: str
    path: str
    access: str  # the token scope it needs, or what else authenticates it
    summary: str
    query: tuple[str, ...] = ()  # the query parameters it takes (any other is refused)


ENDPOINTS = (
    Endpoint("POST", "/api/v1/proposals", "proposals:write", "propose a schema change: `subject`, `schema`, `proposer` (a Slack user id), "
             "optional `references`, `notes`, `window_start`, `window_hours`"),
    Endpoint("GET", "/api/v1/proposals/{id}", "proposals:read", "a proposal as it stands: level, findings, impact, acknowledgements, registration"),
    Endpoint("POST", "/api/v1/transitions", "proposals:write", "ship a breaking change as a transition: `subject`, `schema` (the target, after "
             "the contract), `proposer`, optional `deadline` (ISO 8601), `mapping` (`[{old, new}]`)"),
    Endpoint("GET", "/api/v1/transitions/{id}", "proposals:read", "a transition as it stands: phase, mapping, its proposals, every reader of "
             "the old fields with whether it moved and the evidence"),
    Endpoint("POST", "/api/v1/subjects/{subject}/check", "proposals:read", "the deploy gate: whether this schema is an approved version "
             "(`approved`, `pending`, `rejected`, `unknown` or `frozen`), with its level and changes"),
    Endpoint("POST", "/api/v1/jobs/{job}/check", "proposals:read", "the Flink release gate: the job's SQL, sinks and savepoint state "
             "against the registry and the lineage"),
    Endpoint("GET", "/api/v1/calendar", "calendar:read", "the calendar's entries between `from` and `to`, each with its conflicts "
             "(a freeze it falls in among them), as a JSON array", query=("from", "to")),
    Endpoint("POST", "/api/v1/calendar", "calendar:write", "book a window: `kind`, `title`, `start`, `end`, `owner`, `booked_by`, `scope`"),
    Endpoint("POST", "/api/v1/lineage", "lineage:write", "an OpenLineage run event (its column lineage facets give field-level lineage)"),
    Endpoint("POST", "/api/v1/metrics", "metrics:write", "SLI samples of pipelines: a JSON array of `{pipeline, sli, value, time, labels}`"),
)
Route = Callable[[web.Request], Awaitable[web.StreamResponse]]
USER_ID = re.compile(r"[UW][A-Z0-9]{2,20}")
MAX_NOTES = 10_000
BOOKING_FIELDS = ("kind", "title", "start", "end", "owner", "scope", "booked_by")
MAX_SAMPLES = 10_000


MAX_BODY = 4 * 1024 * 1024  # bytes a request's body may hold


class BadRequest(Exception):
    """Input the API refuses: answered 400 with the message (and the field at fault)."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


def authenticate(tokens: Sequence[ApiToken], header: str) -> ApiToken | None:
    """The token that ``Authorization: Bearer ...`` shows, compared in constant time against every token."""
    given = header[7:].strip().encode() if header.startswith("Bearer ") else b""
    found = None
    for token in tokens:
        if hmac.compare_digest(given, token.token.encode()):
            found = token
    return found


@web.middleware
async def json_refusals(request: web.Request, handler: Route) -> web.StreamResponse:
    """What aiohttp itself refuses under ``/api/`` (a route that does not exist, a method a route does not take) is told in
    JSON, as the API's own refusals are."""
    try:
        return await handler(request)
    except web.HTTPException as err:
        if not request.path.startswith("/api/") or err.status < 400:
            raise
        if isinstance(err, web.HTTPMethodNotAllowed):
            message = f"{request.path} takes {', '.join(sorted(err.allowed_methods))}, not {request.method}"
        elif isinstance(err, web.HTTPNotFound):
            message = f"there is no {request.path} in the HTTP API (its reference lists the routes)"
        else:
            message = err.reason
        return _error(err.status, message, headers={k: v for k, v in err.headers.items() if k == "Allow"})


def guarded(tokens: Sequence[ApiToken], scope: str, handler: Handler, query: tuple[str, ...] = ()) -> Route:
    """``handler``, for a known token with ``scope`` only; bad input (a query parameter it does not take too) answered 400."""

    async def route(request: web.Request) -> web.StreamResponse:
        if not tokens:
            return _error(503, "the HTTP API is disabled: set CHANGEOPS_API_TOKEN or CHANGEOPS_API_TOKENS")
        token = authenticate(tokens, request.headers.get("Authorization", ""))
        if token is None:
            return _error(401, "missing or wrong bearer token", headers={"WWW-Authenticate": "Bearer"})
        if scope not in token.scopes:
            return _error(403, f"the token {token.name!r} does not have the scope {scope}")
        unknown = sorted(set(request.query) - set(query))
        if unknown:
            takes = f"it takes {', '.join(query)}" if query else "it takes none"
            return _error(400, f"{request.path} does not take the query parameter {', '.join(unknown)[:200]} ({takes}); nothing changed")
        try:
            return await handler(request, token)
        except BadRequest as err:
            return _error(400, str(err), field=err.field)
        except web.HTTPRequestEntityTooLarge:
            return _error(413, f"the body is larger than the {MAX_BODY // 1024 ** 2} MiB a request may carry: send less at once "
                               "(lineage: fewer events to a request)")

    return route


async def read_json(request: web.Request) -> Any:
    """The request body as JSON; BadRequest for anything else (bad UTF-8, malformed or absurdly nested JSON)."""
    try:
        return json.loads(await request.text())
    except json.JSONDecodeError as err:
        raise BadRequest(f"malformed JSON: {err.msg} at line {err.lineno} column {err.colno}") from None
    except UnicodeDecodeError:
        raise BadRequest("the body is not UTF-8 text") from None
    except RecursionError:
        raise BadRequest("the JSON is nested too deeply") from None


def add_routes(app: web.Application, tokens: Sequence[ApiToken], lineage: LineageService, proposals: Proposals, slack: AsyncWebClient,
               calendar: CalendarService, sli: SliService, releases: Releases, transitions: Transitions) -> None:
    """Mount the API."""

    async def post_metrics(request: web.Request, _token: ApiToken) -> web.StreamResponse:
        body = await read_json(request)
        if not isinstance(body, list):
            raise BadRequest('expected a JSON array of {"pipeline", "sli", "value", "time", "labels"}')
        if len(body) > MAX_SAMPLES:
            raise BadRequest(f"at most {MAX_SAMPLES} samples per request")
        known, now = await sli.known(str(i["pipeline"]) for i in body if isinstance(i, dict) and isinstance(i.get("pipeline"), str)), utcnow()
        samples, refused = [], []
        for index, item in enumerate(body):
            try:
                if not isinstance(item, dict):
                    raise SampleError("malformed", "expected an object")
                samples.append(checked(item.get("pipeline"), item.get("sli"), item.get("value"), item.get("time"), item.get("labels"), known, latest_believed(now)))
            except SampleError as err:
                sli.reject(err.kind, str(err))
                refused.append({"index": index, "kind": err.kind, "error": str(err)})
        await sli.ingest(samples)
        return web.json_response({"ok": not refused, "accepted": len(samples), "refused": refused[:100]}, status=200 if samples or not refused else 400)

    async def post_proposal(request: web.Request, token: ApiToken) -> web.StreamResponse:
        body, subject, schema = await _proposing(request, "schema: required (an Avro or JSON Schema as JSON or as a string, a .proto as a string)")
        schema_type = body.get("schema_type", body.get("schemaType"))
        if schema_type is not None and not isinstance(schema_type, str):
            raise BadRequest("schema_type: AVRO, PROTOBUF or JSON", "schema_type")
        notes = body.get("notes") or ""
        if not isinstance(notes, str) or len(notes) > MAX_NOTES:
            raise BadRequest(f"notes: a string of at most {MAX_NOTES} characters", "notes")
        start, hours, revision_of = _window(body)
        try:
            references = read_references(body["references"]) if "references" in body else None
        except ValueError as err:
            raise BadRequest(f"references: {err}", "references") from None
        try:
            checked = await proposals.check(subject, schema, hours, references, schema_type)
            named = body.get("proposer")
            if token.user is not None and named not in (None, token.user):
                raise BadRequest(f"proposer: this token proposes as {token.user}; leave proposer out or give that user", "proposer")
            proposer = await _proposer(slack, token.user or named)
            view = await proposals.propose(subject, schema, proposer, notes=notes, window_start=start, window_hours=hours,
                                           surface="api", revision_of=revision_of, api_token=token.name, checked=checked)
        except ProposalError as err:
            raise BadRequest(str(err), err.field) from None
        return web.json_response(_proposal_json(view), status=201)

    async def get_proposal(request: web.Request, _token: ApiToken) -> web.StreamResponse:
        number = request.match_info["id"]
        if not number.isdigit() or len(number) > 12:
            return _error(404, f"there is no proposal #{number[:20]}")
        try:
            view = await proposals.view(int(number))
        except ProposalError as err:
            return _error(404, str(err))
        return web.json_response(_proposal_json(view))

    async def post_transition(request: web.Request, token: ApiToken) -> web.StreamResponse:
        body, subject, schema = await _proposing(request, "schema: required, the target schema (after the contract)")
        deadline = None
        if body.get("deadline") is not None:
            try:
                deadline = datetime.fromisoformat(str(body["deadline"]).replace("Z", "+00:00"))
            except ValueError:
                raise BadRequest("deadline: ISO 8601 with a time zone offset (2026-12-31T18:00:00Z)", "deadline") from None
            if deadline.tzinfo is None:
                raise BadRequest("deadline needs a time zone offset (e.g. 2026-12-31T18:00:00Z)", "deadline")
        try:
            mapping = read_mapping(body.get("mapping"))
        except TransitionError as err:
            raise BadRequest(str(err), "mapping") from None
        named = body.get("proposer")
        if token.user is not None and named not in (None, token.user):
            raise BadRequest(f"proposer: this token proposes as {token.user}; leave proposer out or give that user", "proposer")
        if await proposals.registry.subject(subject) is None:
            return _error(404, f"unknown subject {subject!r}: it must be in the catalog (bot catalog load)", field="subject")
        proposer = await _proposer(slack, token.user or named)
        try:
            view = await transitions.start(subject, schema, proposer, deadline=deadline, mapping=mapping, surface="api", api_token=token.name)
        except ProposalError as err:
            status = 409 if "already open" in str(err) else 400
            return _error(status, str(err), field=err.field)
        return web.json_response({"ok": True, **view.as_json()}, status=201)

    async def get_transition(request: web.Request, _token: ApiToken) -> web.StreamResponse:
        number = request.match_info["id"]
        if not number.isdigit() or len(number) > 12:
            return _error(404, f"there is no transition #{number[:20]}")
        try:
            view = await transitions.view(int(number))
        except ProposalError as err:
            return _error(404, str(err))
        return web.json_response({"ok": True, **view.as_json()})

    async def post_lineage(request: web.Request, _token: ApiToken) -> web.StreamResponse:
        body = await read_json(request)
        items = body if isinstance(body, list) else [body]
        events = []
        for index, item in enumerate(items):
            try:
                events.append(parse_event(item))
            except OpenLineageError as err:
                raise BadRequest(f"{f'event {index}: ' if isinstance(body, list) else ''}{err}") from None
        changed = await lineage.ingest(events)
        log.info("lineage: %d event(s) received, %d changed the lineage", len(events), changed)
        return web.json_response({"ok": True, "events": len(events), "changed": changed})

    async def get_calendar(request: web.Request, _token: ApiToken) -> web.StreamResponse:
        try:
            start = moment(request.query["from"]) if request.query.get("from") else proposals.clock() - timedelta(days=1)
            end = moment(request.query["to"]) if request.query.get("to") else start + timedelta(days=30)
        except CalendarError as err:
            raise BadRequest(f"from/to: {err}") from None
        if end < start:
            raise BadRequest("to is before from")
        return web.json_response(await calendar.listing(start, end))

    async def post_calendar(request: web.Request, token: ApiToken) -> web.StreamResponse:
        body = await read_json(request)
        if not isinstance(body, dict):
            raise BadRequest("expected an object with kind, title, start, end, owner, scope and booked_by")
        scope = body.get("scope") or {}
        if not isinstance(scope, dict) or not all(isinstance(v, list) and all(isinstance(n, str) for n in v) for v in scope.values()) \
                or set(scope) - {"subjects", "datasets", "jobs"}:
            raise BadRequest("scope: an object of subjects, datasets and jobs (lists of names)", "scope")
        texts = {key: body.get(key) for key in ("kind", "title", "start", "end", "owner", "booked_by")}
        missing = [key for key, value in texts.items() if not isinstance(value, str) or not value.strip()]
        if missing:
            raise BadRequest(f"{missing[0]}: required string", missing[0])
        times = {}
        for key in ("start", "end"):
            try:
                times[key] = moment(texts[key])
            except CalendarError as err:
                raise BadRequest(f"{key}: {err}", key) from None
        try:
            number = await calendar.add(kind=str(texts["kind"]), title=str(texts["title"]), start=times["start"], end=times["end"],
                                        owner=str(texts["owner"]), booked_by=f"{texts['booked_by']} (api token {token.name})"[:64],
                                        scope=Scope.from_json(scope), surface="api")
        except CalendarError as err:
            named = str(err).split(":", 1)[0]
            raise BadRequest(str(err), named if named in BOOKING_FIELDS else None) from None
        return web.json_response(await calendar.listed(number), status=201)

    gate = Gate(proposals.db, proposals.registry, proposals.calendar, proposals.clock, proposals.references)

    async def post_check(request: web.Request, _token: ApiToken) -> web.StreamResponse:
        body = await read_json(request)
        references = None
        schema_type = None
        if isinstance(body, dict) and "schema" in body and "type" not in body:  # the Schema Registry's form: {"schema", "schemaType", "references"}
            schema_type = body.get("schemaType", body.get("schema_type"))
            if schema_type is not None and not isinstance(schema_type, str):
                return web.json_response({"error": "schemaType: AVRO, PROTOBUF or JSON"}, status=400)
            try:
                references = read_references(body["references"]) if "references" in body else None
            except ValueError as err:
                return web.json_response({"error": f"references: {err}"}, status=400)
            body = body["schema"]
        text = body if isinstance(body, str) else json.dumps(body)
        try:
            return web.json_response(await gate.check(request.match_info["subject"], text, references, schema_type))
        except GateError as err:
            return web.json_response({"error": str(err)}, status=err.status)

    async def post_job_check(request: web.Request, token: ApiToken) -> web.StreamResponse:
        body = await read_json(request)
        if not isinstance(body, dict) or not isinstance(body.get("sql"), str):
            raise BadRequest('expected {"sql": "the job\'s SQL", "state": {"NAME": SCHEMA}, "author": "U..."}', "sql")
        state = body.get("state") or {}
        if not isinstance(state, dict) or not all(isinstance(k, str) and k for k in state):
            raise BadRequest("state: an object of state names and their Avro schemas", "state")
        texts = {k: v if isinstance(v, str) else json.dumps(v) for k, v in state.items()}
        author = body.get("author") or token.user
        if author is not None and (not isinstance(author, str) or not USER_ID.fullmatch(author)):
            raise BadRequest("author: the Slack user id (U... or W...) of the developer releasing the job", "author")
        try:
            answer = await releases.check(request.match_info["job"], body["sql"], texts, author=author, checked_by=token.name)
        except ReleaseError as err:
            return _error(err.status, str(err))
        return web.json_response(answer)

    handlers: dict[str, dict[str, Handler]] = {"/api/v1/proposals": {"POST": post_proposal}, "/api/v1/proposals/{id}": {"GET": get_proposal},
                "/api/v1/transitions": {"POST": post_transition}, "/api/v1/transitions/{id}": {"GET": get_transition},
                "/api/v1/subjects/{subject}/check": {"POST": post_check}, "/api/v1/jobs/{job}/check": {"POST": post_job_check},
                "/api/v1/calendar": {"GET": get_calendar, "POST": post_calendar}, "/api/v1/lineage": {"POST": post_lineage},
                "/api/v1/metrics": {"POST": post_metrics}}
    for endpoint in ENDPOINTS:
        app.router.add_route(endpoint.method, endpoint.path, guarded(tokens, endpoint.access, handlers[endpoint.path][endpoint.method],
                                                                     endpoint.query))


async def _proposing(request: web.Request, schema_missing: str) -> tuple[dict[str, Any], str, str]:
    """A body that proposes a schema: the object, its subject and its schema (as text); BadRequest for anything else."""
    body = await read_json(request)
    if not isinstance(body, dict):
        raise BadRequest("expected an object with subject, schema and proposer")
    subject, schema = body.get("subject"), body.get("schema")
    if not isinstance(subject, str) or not subject.strip() or len(subject) > SUBJECT_MAX:
        raise BadRequest(f"subject: required string (at most {SUBJECT_MAX} characters)", "subject")
    if isinstance(schema, dict | list):
        schema = json.dumps(schema)
    if not isinstance(schema, str) or not schema.strip():
        raise BadRequest(schema_missing, "schema")
    return body, subject, schema


def _window(body: dict[str, Any]) -> tuple[datetime | None, float | None, int | None]:
    try:
        start = datetime.fromisoformat(body["window_start"].replace("Z", "+00:00")) if body.get("window_start") else None
        hours = float(body["window_hours"]) if body.get("window_hours") is not None else None
        revision_of = int(body["revision_of"]) if body.get("revision_of") is not None else None
    except (ValueError, TypeError, AttributeError, OverflowError) as err:
        raise BadRequest(f"window_start (ISO 8601), window_hours (number) or revision_of (number) is malformed: {err}") from None
    if start is not None and start.tzinfo is None:
        raise BadRequest("window_start needs a time zone offset (e.g. 2026-12-03T02:00:00Z)", "window_start")
    if hours is not None and hours != hours:
        raise BadRequest("window_hours is not a number", "window_hours")
    if revision_of is not None and not 0 < revision_of < 2**31:
        raise BadRequest("revision_of: a proposal number", "revision_of")
    return start, hours, revision_of


async def _proposer(slack: AsyncWebClient, proposer: Any) -> str:
    """The proposer, confirmed with Slack: a real, active person (a token never acts as anyone it likes)."""
    if not isinstance(proposer, str) or not USER_ID.fullmatch(proposer):
        raise BadRequest("proposer: required, the Slack user id (U... or W...) of the person proposing", "proposer")
    try:
        user = (await slack.users_info(user=proposer))["user"]
    except SlackApiError as err:
        if err.response.get("error") == "user_not_found":
            raise BadRequest(f"proposer: no Slack user {proposer}", "proposer") from None
        raise _unconfirmed() from None
    except (aiohttp.ClientError, OSError, TimeoutError):
        raise _unconfirmed() from None
    if user.get("deleted"):
        raise BadRequest(f"proposer: {proposer} is deactivated", "proposer")
    if user.get("is_bot") or user.get("is_app_user"):
        raise BadRequest(f"proposer: {proposer} is a bot, not a person", "proposer")
    return proposer


def _unconfirmed() -> web.HTTPServiceUnavailable:
    return web.HTTPServiceUnavailable(text=json.dumps({"ok": False, "error": "Slack could not confirm the proposer; try again"}),
                                      content_type="application/json")


def _proposal_json(view: ProposalView) -> dict[str, Any]:
    p = view.proposal
    final = view.state.final  # a proposal that is over waits for nobody; ``unanswered`` says who never decided
    return {"ok": True, "id": view.id, "subject": view.subject.name, "level": p.level, "state": p.state,
            "backward": p.backward, "forward": p.forward, "version": p.version, "teams": list(p.teams),
            "waiting": [] if final else view.waiting(), "unanswered": view.waiting() if final else [],
            "acknowledgements": [{"team": a.team, "user": a.user, "decision": a.decision, "reason": a.reason,
                                  "at": aware(a.created_at).isoformat()} for a in view.acknowledgements],
            "registration": {"state": p.registry_state, "id": p.registry_id, "version": p.registry_version, "error": p.registry_error,
                             "since": aware(p.registry_since).isoformat() if p.registry_since else None} if p.registry_state else None,
            "deadline": aware(p.deadline).isoformat() if p.deadline else None, "changes": p.findings, "impact": p.impact,
            "references": p.references, "schema_type": p.schema_type, "buf": p.buf}


def _error(status: int, message: str, *, field: str | None = None, headers: dict[str, str] | None = None) -> web.Response:
    body: dict[str, Any] = {"ok": False, "error": message}
    if field:
        body["field"] = field
    return web.json_response(body, status=status, headers=headers)
