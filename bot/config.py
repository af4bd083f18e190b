"""Configuration read from environment variables.

Every problem stops start-up with one line that names the variable; secret values are never
echoed back (not in errors, not in ``repr``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

DEFAULT_DATABASE_URL = "sqlite:///changeops.db"
DEFAULT_SLACK_API_URL = "https://slack.com/api/"
SCOPES = ("proposals:read", "proposals:write", "lineage:write", "calendar:read", "calendar:write", "metrics:write")  # what an HTTP API token may be allowed to do


DEFAULT_PAGERDUTY_URL = "https://events.pagerduty.com/v2/enqueue"


class ConfigError(Exception):
    """A missing or malformed environment variable; the message is one human line."""


@dataclass(frozen=True)
class ApiToken:
    """A named bearer token of the HTTP API and the scopes it grants."""

    name: str
    token: str = field(repr=False)
    scopes: frozenset[str]
    user: str | None = None  # the Slack user the token acts for: its proposals are that user's (four eyes holds through the API)


@dataclass(frozen=True)
class Config:
    """Everything the bot reads from its environment."""

    slack_bot_token: str = field(repr=False)
    slack_signing_secret: str = field(repr=False)
    slack_app_token: str | None = field(default=None, repr=False)
    database_url: str = DEFAULT_DATABASE_URL
    kafka_bootstrap_servers: str | None = None
    schema_registry_url: str | None = None
    port: int = 3000
    host: str = "0.0.0.0"
    slack_api_url: str = DEFAULT_SLACK_API_URL
    api_tokens: tuple[ApiToken, ...] = field(default=(), repr=False)
    log_level: str = "INFO"
    changes_channel: str = "#schema-changes"
    shutdown_grace: float = 20.0
    public_url: str | None = None  # where people reach the bot (links it hands out, such as the calendar feed)
    metrics_topic: str | None = None  # the Kafka topic of PipelineSample records (SLI samples)
    metrics_group: str = "changeops-sli"
    poll_seconds: float = 30.0  # how often the bot measures source lag and DLQ size itself
    census_seconds: float = 300.0  # how often one replica takes the census of consumer groups
    flink_root: str = ""  # the folder of Flink runtimes for the release gate (scripts/flink.sh install)
    flink_version: str = "2.3.0"  # the planner a job is checked with when the catalog names no version
    flink_rest_url: str | None = None  # the Flink cluster's REST API (the JobManager's rest.port), for status and operations
    flink_savepoint_dir: str | None = None  # where the bot's savepoints go (a path or URI every Flink process can write)
    watch_seconds: float = 300.0  # how often one replica looks for schema changes made around the bot
    ops_lease_seconds: float = 30.0  # a running replay's lease: another bot resumes it this long after its owner went quiet
    pagerduty_url: str = DEFAULT_PAGERDUTY_URL  # PagerDuty's Events API v2 endpoint
    routing_keys: dict[str, str] = field(default_factory=dict, repr=False)  # PAGERDUTY_ROUTING_KEY_*: the catalog names them
    pagerduty_webhook_secrets: tuple[str, ...] = field(default=(), repr=False)  # PagerDuty's V3 webhook signing secrets

    @property
    def secrets(self) -> tuple[str, ...]:
        """The values that must never reach a log line: tokens, and the passwords inside URLs."""
        values = [self.slack_bot_token, self.slack_signing_secret, self.slack_app_token, *(t.token for t in self.api_tokens),
                  *self.routing_keys.values(), *self.pagerduty_webhook_secrets]
        for url in (self.database_url, self.schema_registry_url):
            if url:
                parts = urlsplit(url)
                values += [parts.password, unquote(parts.password or "")]
        return tuple(v for v in values if v and len(v) >= 4)

    @classmethod
    def from_env(cls, env: Mapping[str, str], *, require_slack: bool = True) -> Config:
        """Read and validate the environment; raise ConfigError naming the first bad variable."""
        bot_token = _optional(env, "SLACK_BOT_TOKEN")
        signing_secret = _optional(env, "SLACK_SIGNING_SECRET")
        app_token = _optional(env, "SLACK_APP_TOKEN")
        if require_slack:
            if bot_token is None:
                raise ConfigError("SLACK_BOT_TOKEN is not set: give the bot token (xoxb-...) from the Slack app's OAuth page")
            if signing_secret is None and app_token is None:
                raise ConfigError("SLACK_SIGNING_SECRET is not set: give the signing secret from the Slack app's Basic Information page "
                                  "(or SLACK_APP_TOKEN for Socket Mode)")
        if bot_token is not None and not bot_token.startswith("xoxb-"):
            raise ConfigError("SLACK_BOT_TOKEN is malformed: a bot token starts with 'xoxb-'")
        if signing_secret is not None and not re.fullmatch(r"[0-9A-Za-z]{8,}", signing_secret):
            raise ConfigError("SLACK_SIGNING_SECRET is malformed: expected the hexadecimal signing secret")
        if app_token is not None and not app_token.startswith("xapp-"):
            raise ConfigError("SLACK_APP_TOKEN is malformed: an app-level token starts with 'xapp-'")
        return cls(
            slack_bot_token=bot_token or "",
            slack_signing_secret=signing_secret or "",
            slack_app_token=app_token,
            database_url=_database_url(env),
            kafka_bootstrap_servers=_bootstrap(env),
            schema_registry_url=_http_url(env, "SCHEMA_REGISTRY_URL"),
            port=_port(env),
            host=_optional(env, "HOST") or "0.0.0.0",
            slack_api_url=_http_url(env, "SLACK_API_URL", trailing_slash=True) or DEFAULT_SLACK_API_URL,
            api_tokens=_api_tokens(env),
            log_level=_log_level(env),
            changes_channel=_optional(env, "CHANGES_CHANNEL") or "#schema-changes",
            shutdown_grace=_seconds(env, "SHUTDOWN_GRACE_SECONDS", 20.0),
            public_url=_http_url(env, "CHANGEOPS_PUBLIC_URL"),
            metrics_topic=_topic(env, "SLI_METRICS_TOPIC"),
            metrics_group=_topic(env, "SLI_METRICS_GROUP") or "changeops-sli",
            poll_seconds=_seconds(env, "SLI_POLL_SECONDS", 30.0),
            ops_lease_seconds=_seconds(env, "OPS_LEASE_SECONDS", 30.0),
            census_seconds=_seconds(env, "CENSUS_SECONDS", 300.0, most=86400),
            watch_seconds=_seconds(env, "WATCH_SECONDS", 300.0, most=86400),
            flink_root=_optional(env, "CHANGEOPS_FLINK_ROOT") or str(Path(_optional(env, "CHANGEOPS_CACHE") or Path(
                _optional(env, "XDG_CACHE_HOME") or Path.home() / ".cache") / "changeops") / "flink"),
            flink_version=_flink_version(env),
            flink_rest_url=_http_url(env, "FLINK_REST_URL"),
            flink_savepoint_dir=_optional(env, "FLINK_SAVEPOINT_DIR"),
            pagerduty_url=_http_url(env, "PAGERDUTY_EVENTS_URL") or DEFAULT_PAGERDUTY_URL,
            routing_keys={name: value.strip() for name, value in env.items() if name.startswith("PAGERDUTY_ROUTING_KEY_") and value.strip()},
            pagerduty_webhook_secrets=tuple(v.strip() for v in (_optional(env, "PAGERDUTY_WEBHOOK_SECRET") or "").split(",") if v.strip()),
        )


def _flink_version(env: Mapping[str, str]) -> str:
    value = _optional(env, "FLINK_VERSION") or "2.3.0"
    if not re.fullmatch(r"\d+\.\d+(\.\d+)?", value):
        raise ConfigError(f"FLINK_VERSION is malformed: {value!r} is not a Flink version such as 2.3.0")
    return value


def _optional(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name, "").strip()
    return value or None


def _database_url(env: Mapping[str, str]) -> str:
    url = _optional(env, "DATABASE_URL") or DEFAULT_DATABASE_URL
    scheme = url.split(":", 1)[0].split("+", 1)[0]
    if "://" not in url or scheme not in ("sqlite", "postgresql", "postgres"):
        raise ConfigError("DATABASE_URL is malformed: use sqlite:///path/to/file.db or postgresql://user@host:port/dbname")
    return url


def _bootstrap(env: Mapping[str, str]) -> str | None:
    value = _optional(env, "KAFKA_BOOTSTRAP_SERVERS")
    if value is None:
        return None
    for server in value.split(","):
        host, _, port = server.strip().rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ConfigError(f"KAFKA_BOOTSTRAP_SERVERS is malformed: {server.strip()!r} is not host:port")
    return value


def _http_url(env: Mapping[str, str], name: str, *, trailing_slash: bool = False) -> str | None:
    value = _optional(env, name)
    if value is None:
        return None
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"{name} is malformed: expected an http:// or https:// URL")
    if trailing_slash and not value.endswith("/"):
        value += "/"
    return value


def _topic(env: Mapping[str, str], name: str) -> str | None:
    value = _optional(env, name)
    if value is not None and not re.fullmatch(r"[A-Za-z0-9._-]{1,249}", value):
        raise ConfigError(f"{name} is malformed: {value!r} is not a Kafka topic or group name (letters, digits, . _ -)")
    return value


def _port(env: Mapping[str, str]) -> int:
    value = _optional(env, "PORT") or "3000"
    if not value.isdigit() or not 0 < int(value) < 65536:
        raise ConfigError(f"PORT is malformed: {value!r} is not a port number (1-65535)")
    return int(value)


def _api_tokens(env: Mapping[str, str]) -> tuple[ApiToken, ...]:
    """``CHANGEOPS_API_TOKEN`` (every scope, named ``default``) and ``CHANGEOPS_API_TOKENS``: entries
    ``NAME[@USER]:SCOPE[+SCOPE...]=TOKEN`` separated by commas or white space, e.g. ``ci:proposals:write=...`` or
    ``alice@U0123ABCD:proposals:write=...`` (a token that proposes as that Slack user)."""
    tokens: list[ApiToken] = []
    single = _optional(env, "CHANGEOPS_API_TOKEN")
    if single is not None:
        if len(single) < 16:
            raise ConfigError("CHANGEOPS_API_TOKEN is too short: use at least 16 characters")
        tokens.append(ApiToken("default", single, frozenset(SCOPES)))
    for number, entry in enumerate(re.split(r"[,\s]+", _optional(env, "CHANGEOPS_API_TOKENS") or ""), start=1):
        if not entry:
            continue
        head, equals, token = entry.partition("=")
        named, colon, scopes = head.partition(":")
        name, at, user = named.partition("@")
        granted = frozenset(SCOPES) if scopes == "*" else frozenset(scopes.split("+"))
        where = f"CHANGEOPS_API_TOKENS entry {number}"
        if not (equals and colon and re.fullmatch(r"[A-Za-z0-9_.-]{1,32}", name)):
            raise ConfigError(f"{where} is malformed: expected NAME[@USER]:SCOPE[+SCOPE...]=TOKEN, e.g. ci:proposals:write=<token>")
        if at and not re.fullmatch(r"[UW][A-Z0-9]{2,20}", user):
            raise ConfigError(f"{where} ({name}): {user!r} is not a Slack user id (U... or W...)")
        if not granted <= set(SCOPES):
            raise ConfigError(f"{where} ({name}) names an unknown scope: use {', '.join(SCOPES)} or *")
        if len(token) < 16:
            raise ConfigError(f"{where} ({name}): the token is too short: use at least 16 characters")
        if any(t.name == name or t.token == token for t in tokens):
            raise ConfigError(f"{where} ({name}): the name or the token is used twice")
        tokens.append(ApiToken(name, token, granted, user or None))
    return tuple(tokens)


def _seconds(env: Mapping[str, str], name: str, default: float, most: float = 600) -> float:
    value = _optional(env, name)
    if value is None:
        return default
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds <= most:
        raise ConfigError(f"{name} is malformed: {value!r} is not a number of seconds between 0 and {most:g}")
    return seconds


def _log_level(env: Mapping[str, str]) -> str:
    value = (_optional(env, "LOG_LEVEL") or "INFO").upper()
    if value not in ("DEBUG", "INFO", "WARNING", "ERROR"):
        raise ConfigError(f"LOG_LEVEL is malformed: {value!r} is not one of DEBUG, INFO, WARNING, ERROR")
    return value
