"""The declarative catalog (YAML): teams, subjects, datasets and jobs with field mappings.

``read_catalog`` checks everything and reports every problem with its place (``jobs[2] (enrich).
mappings["dwd.amount"]``) instead of stopping at the first. Schema files are read through a callback,
so this module stays pure.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from bot.domain.approvals import Policy
from bot.domain.calendar import CalendarError, ChangeHours, Freeze, Scope
from bot.domain.compat.formats import INVALID, SchemaType, field_paths_of, field_walk_of, parse_schema
from bot.domain.dead_letters import MAX_REPLAYS
from bot.domain.lineage.field_paths import FIELD_PATHS
from bot.domain.lineage.model import FLINK_VERSION, GROUP, GROUP_RULE, SUBJECT_MAX, Dataset, DatasetId, FieldRef, Job, JobId, Team
from bot.domain.lineage.namespaces import Namespaces, place_of
from bot.domain.ops import TOPIC
from bot.domain.sli.pipeline import Pipeline, PipelineError, Sli, apply_override, span

DEFAULT_KAFKA_NAMESPACE = "kafka://kafka:9092"
DEFAULT_JOB_NAMESPACE = "changeops"
MODES = {"BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE", "NONE"}
USER = re.compile(r"[UW][A-Z0-9]{2,}\Z")
USERGROUP = re.compile(r"S[A-Z0-9]{2,}\Z")
ROUTING_KEY_ENV = re.compile(r"PAGERDUTY_ROUTING_KEY_[A-Z0-9_]+\Z")
TEAM_MAX = NAMESPACE_MAX = 255  # characters of a team's name, of a subject's namespace
CHANNEL = re.compile(r"#?[^\s#]{1,80}")  # a Slack channel: its name (at most 80 characters, no spaces), with or without #, or its id


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the catalog, and where."""

    place: str
    message: str

    def __str__(self) -> str:
        return f"{self.place}: {self.message}"


@dataclass
class Subject:
    """A registry subject: its topic, owner, mode, channel and (optionally) its current schema."""

    name: str
    topic: str
    namespace: str
    owner: str
    compatibility: str = "FULL"
    channel: str | None = None
    schema_file: str | None = None
    schema: Any = None  # the schema file, parsed as its type
    schema_type: SchemaType = SchemaType.AVRO
    approval: dict[str, Any] = field(default_factory=dict)
    buf: list[str] = field(default_factory=list)  # Protobuf: Buf's categories or rule ids its changes are also judged by

    @property
    def dataset(self) -> DatasetId:
        """The topic, as a lineage dataset."""
        return DatasetId(self.namespace, self.topic)


@dataclass
class Catalog:
    """Everything a catalog file declares."""

    teams: dict[str, Team] = field(default_factory=dict)
    subjects: dict[str, Subject] = field(default_factory=dict)
    datasets: dict[DatasetId, Dataset] = field(default_factory=dict)
    jobs: list[Job] = field(default_factory=list)
    freezes: list[Freeze] = field(default_factory=list)
    pipelines: list[Pipeline] = field(default_factory=list)
    oncall: Team | None = None  # the global oncall group: may run backfills and replays of any pipeline
    namespaces: Namespaces = field(default_factory=Namespaces)  # each name OpenLineage may give a place -> the catalog's
    retired_groups: list[str] = field(default_factory=list)  # consumer groups that no longer read anything
    document: dict[str, Any] = field(default_factory=dict)  # the catalog as written (``bot catalog export`` starts from it)
    warnings: list[Problem] = field(default_factory=list)  # worth fixing, but the catalog is usable


SchemaLoader = Callable[[str], str]  # a schema file's text, by its path relative to the catalog


def read_catalog(data: Any, load_schema: SchemaLoader) -> tuple[Catalog, list[Problem]]:
    """Parse and check a catalog; the catalog is usable only when the problem list is empty."""
    reader = _Reader(load_schema)
    if not isinstance(data, dict):
        return Catalog(), [Problem("catalog", "expected a mapping with teams, subjects, datasets and jobs")]
    reader.read(data)
    reader.catalog.document = data
    return reader.catalog, reader.problems


class _Reader:
    def __init__(self, load_schema: SchemaLoader) -> None:
        self.load_schema = load_schema
        self.catalog = Catalog()
        self.problems: list[Problem] = []

    def problem(self, place: str, message: str) -> None:
        self.problems.append(Problem(place, message))

    def channel(self, raw: dict[str, Any], place: str) -> str | None:
        """A Slack channel, ``#name`` (at most 80 characters, no spaces) or its id; None (and a problem) for anything else."""
        value = raw.get("channel")
        if value is None:
            return None
        if not isinstance(value, str) or not CHANNEL.fullmatch(value):
            self.problem(f"{place}.channel", f"{str(value)[:90]!r} is not a Slack channel (#name, at most 80 characters without "
                                             "spaces, or a channel id such as C0123ABCD)")
            return None
        return value

    def read(self, data: dict[str, Any]) -> None:
        unknown = set(data) - {"version", "kafka_namespace", "namespace_aliases", "teams", "subjects", "datasets", "jobs", "freezes",
                                 "pipelines", "oncall", "retired_consumer_groups"}
        for section in sorted(unknown):
            self.problem(section, "unknown section (expected version, kafka_namespace, namespace_aliases, oncall, teams, subjects, "
                                  "datasets, jobs, freezes, pipelines, retired_consumer_groups)")
        kafka = data.get("kafka_namespace", DEFAULT_KAFKA_NAMESPACE)
        if not isinstance(kafka, str) or "://" not in kafka or len(kafka) > NAMESPACE_MAX:
            self.problem("kafka_namespace", f"expected a namespace such as kafka://broker:9092 (one server; at most {NAMESPACE_MAX} characters)")
            kafka = DEFAULT_KAFKA_NAMESPACE
        self.teams(_mapping(self, data, "teams"))
        self.global_oncall(data.get("oncall"))
        self.catalog.retired_groups = self.groups(data, "retired_consumer_groups", "retired_consumer_groups")
        self.subjects(_mapping(self, data, "subjects"), kafka)
        self.datasets(_sequence(self, data, "datasets"))
        self.aliases(_mapping(self, data, "namespace_aliases"), kafka)
        self.jobs(_sequence(self, data, "jobs"))
        self.fallbacks()
        self.freezes(_sequence(self, data, "freezes"))
        self.pipelines(_sequence(self, data, "pipelines"))

    def dead_letters(self, raw: Any, place: str) -> tuple[str | None, str | None, int]:
        """A pipeline's ``dlq``: the topic's name, or ``{topic, original_topic_header, max_replays}``."""
        if raw is None:
            return None, None, MAX_REPLAYS
        if isinstance(raw, str):
            raw = {"topic": raw}
        if not isinstance(raw, dict):
            self.problem(place, "expected the DLQ topic's name, or topic, original_topic_header and max_replays")
            return None, None, MAX_REPLAYS
        for key in sorted(set(raw) - {"topic", "original_topic_header", "max_replays"}):
            self.problem(f"{place}.{key}", "unknown setting (expected topic, original_topic_header, max_replays)")
        topic, header, most = raw.get("topic"), raw.get("original_topic_header"), raw.get("max_replays", MAX_REPLAYS)
        if not (isinstance(topic, str) and TOPIC.fullmatch(topic)):
            self.problem(f"{place}.topic" if "topic" in raw or len(raw) > 1 else place, "expected a topic name (letters, digits, . _ -)")
            topic = None
        if header is not None and not (isinstance(header, str) and header.strip()):
            self.problem(f"{place}.original_topic_header", "expected the name of the header that holds the original topic")
            header = None
        if isinstance(most, bool) or not isinstance(most, int) or not 1 <= most <= 1000:
            self.problem(f"{place}.max_replays", "expected a number of replays from 1 to 1000 (a dead letter replayed this often is parked)")
            most = MAX_REPLAYS
        return topic, header, most

    def pipelines(self, pipelines: list[Any]) -> None:
        """Pipelines and their SLI overrides; a pipeline lacking a source for a mandatory SLI is a warning."""
        keys = {"name", "owner", "channel", "source", "dlq", "sink", "sla", "checkpoint_interval", "interval", "jobs", "reports", "slis",
                "auto_pause"}
        jobs = {j.id.name for j in self.catalog.jobs}
        datasets = {d.name for d in self.catalog.datasets} | set(self.catalog.subjects)
        for number, raw in enumerate(pipelines):
            place = f"pipelines[{number}]"
            if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not re.fullmatch(r"[A-Za-z0-9_.-]{1,100}", raw["name"]):
                self.problem(place, "a pipeline needs a name (letters, digits, - _ .)")
                continue
            place = f"{place} ({raw['name']})"
            for key in sorted(set(raw) - keys):
                self.problem(f"{place}.{key}", f"unknown setting (expected {', '.join(sorted(keys))})")
            owner = self.owner(raw, place)
            source = raw.get("source") or {}
            topics = source.get("topics", []) if isinstance(source, dict) else None
            if isinstance(topics, str):
                topics = [topics]
            if not isinstance(source, dict) or set(source) - {"topics", "group"} or not isinstance(topics, list) \
                    or not all(isinstance(t, str) and t for t in topics) or not isinstance(source.get("group", ""), str):
                self.problem(f"{place}.source", "expected topics (a list of topic names) and group (the consumer group)")
                topics, source = [], {}
            names = {"jobs": raw.get("jobs", []), "reports": raw.get("reports", [])}
            for key, value in names.items():
                if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                    self.problem(f"{place}.{key}", "expected a list of names")
                    names[key] = []
            for job in names["jobs"]:
                if job not in jobs:
                    self.problem(f"{place}.jobs", f"unknown job {job!r}")
            reports = [s for s in names["reports"] if s in set(Sli)]
            for name in sorted(set(names["reports"]) - set(reports)):
                self.problem(f"{place}.reports", f"unknown SLI {name!r} (one of {', '.join(Sli)})")
            dlq, dlq_header, max_replays = self.dead_letters(raw.get("dlq"), f"{place}.dlq")
            self.channel(raw, place)
            if raw.get("sink") is not None and not (isinstance(raw["sink"], str) and raw["sink"].strip()):
                self.problem(f"{place}.sink", "expected a name")
            if isinstance(raw.get("sink"), str) and raw["sink"] not in datasets:
                self.catalog.warnings.append(Problem(f"{place}.sink", f"{raw['sink']!r} is not a dataset of this catalog"))
            times = {}
            for key in ("sla", "checkpoint_interval", "interval"):
                if raw.get(key) is not None:
                    try:
                        times[key] = span(raw[key], key)
                    except PipelineError as err:
                        self.problem(f"{place}.{key}", str(err))
            if times.get("interval") is not None and times["interval"].total_seconds() < 1:
                self.problem(f"{place}.interval", "must be at least 1s")
                times.pop("interval")
            overrides = raw.get("slis") or {}
            if not isinstance(overrides, dict):
                self.problem(f"{place}.slis", "expected a mapping of SLI name to overrides (or `disabled`)")
                overrides = {}
            pipeline = Pipeline(raw["name"], owner or "", raw.get("channel"), tuple(topics), source.get("group") or None, dlq,
                                raw.get("sink"), times.get("sla"), times.get("checkpoint_interval"),
                                times.get("interval") or timedelta(minutes=1), tuple(names["jobs"]), tuple(Sli(s) for s in reports), {},
                                dlq_header, max_replays, raw.get("auto_pause") is True)
            if times.get("checkpoint_interval") is None and any(j.flink for j in self.catalog.jobs if j.id.name in names["jobs"]):
                self.catalog.warnings.append(Problem(f"{place}.checkpoint_interval", "a Flink pipeline's checkpoint duration (read from Flink) "
                                                     "is judged against it: give the job's execution.checkpointing.interval"))
            if raw.get("auto_pause") not in (None, True, False):
                self.problem(f"{place}.auto_pause", "expected true or false")
            elif raw.get("auto_pause") and not any(j.flink for j in self.catalog.jobs if j.id.name in names["jobs"]):
                self.problem(f"{place}.auto_pause", "only a pipeline whose jobs include a Flink job (flink:) can be paused by savepoint")
            rules = pipeline.rules()
            for name, override in overrides.items():
                if name not in set(Sli):
                    self.problem(f"{place}.slis.{name}", f"unknown SLI (one of {', '.join(Sli)})")
                    continue
                try:
                    apply_override(rules[Sli(name)], override)
                except PipelineError as err:
                    self.problem(f"{place}.slis.{name}", str(err))
                    continue
                pipeline.overrides[name] = override
            if bool(topics) != bool(source.get("group")):
                self.problem(f"{place}.source", "give both the source topics and the consumer group that reads them")
            if any(p.name == pipeline.name for p in self.catalog.pipelines):
                self.problem(place, "a pipeline of that name is declared twice")
            missing = pipeline.missing()
            if missing:
                self.catalog.warnings.append(Problem(place, "not production-ready: nothing measures " + ", ".join(missing)
                                                     + " (name the source topics and group, the dlq, or list what the pipeline reports)"))
            self.catalog.pipelines.append(pipeline)

    def freezes(self, freezes: list[Any]) -> None:
        """Freeze windows: recurring (cron, duration, timezone) or one-off (start, end), scoped or global."""
        known = {"teams": set(self.catalog.teams), "subjects": set(self.catalog.subjects), "jobs": {j.id.name for j in self.catalog.jobs},
                 "datasets": {d.name for d in self.catalog.datasets}}
        for number, raw in enumerate(freezes):
            place = f"freezes[{number}]"
            if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not raw["name"].strip():
                self.problem(place, "a freeze needs a name (and cron, duration, timezone, or start and end)")
                continue
            place = f"{place} ({raw['name']})"
            scopes = {part: raw.get(part) or {} for part in ("scope", "except")}
            if any(not isinstance(s, dict) or set(s) - set(known) or not all(isinstance(v, list) for v in s.values()) for s in scopes.values()):
                self.problem(f"{place}.scope", "expected lists under teams, subjects, datasets and/or jobs (in scope and in except)")
                continue
            for part, named in scopes.items():
                for key, names in named.items():
                    for name in names:
                        if name not in known[key]:
                            self.problem(f"{place}.{part}.{key}", f"unknown {key[:-1]} {name!r}")
            try:
                freeze = Freeze(raw["name"], str(raw.get("reason") or ""), Scope.from_json(scopes["scope"]), raw.get("cron"),
                                duration(raw["duration"]) if raw.get("duration") is not None else None, str(raw.get("timezone") or "UTC"),
                                moment(raw["start"]) if raw.get("start") is not None else None,
                                moment(raw["end"]) if raw.get("end") is not None else None, Scope.from_json(scopes["except"]))
            except CalendarError as err:
                self.problem(place, str(err).removeprefix(f"freeze {raw['name']}: "))
                continue
            if any(f.name == freeze.name for f in self.catalog.freezes):
                self.problem(place, "a freeze of that name is declared twice")
            self.catalog.freezes.append(freeze)

    def fallbacks(self) -> None:
        """Fallback teams must exist; a subject whose fallback resolves to nobody is worth a warning."""
        for subject in self.catalog.subjects.values():
            place = f"subjects.{subject.name}.approval.fallback"
            policy = Policy.from_json(subject.approval)
            for name in policy.fallback:
                if name not in self.catalog.teams:
                    self.problem(place, f"unknown team {name!r}")
            if not policy.fallback_teams(subject.owner, self.catalog.teams):
                self.catalog.warnings.append(Problem(
                    place, "nobody can acknowledge a change that reaches readers nobody owns (give the owner's team oncall "
                           "members, declare a governance team, or list fallback teams): such changes will expire"))

    # --- sections -------------------------------------------------------------------------------

    def aliases(self, raw: dict[str, Any], kafka: str) -> None:
        """``namespace_aliases``: each namespace's other names (a Kafka cluster's other bootstrap servers), so that an event
        naming a place by one of them is read as the catalog's namespace; no name may stand for two places."""
        used: dict[str, str] = {}
        for namespace in [kafka, *(d.namespace for d in self.catalog.datasets)]:
            if used.setdefault(place_of(namespace), namespace) != namespace:
                self.problem("namespace_aliases", f"{used[place_of(namespace)]} and {namespace} name one place: write it one way "
                                                  "throughout the catalog")
        aliases: dict[str, str] = {}
        named: dict[str, str] = {}  # key -> the alias that took it
        for namespace, others in raw.items():
            place = f"namespace_aliases[{namespace!r}]"
            others = [others] if isinstance(others, str) else others
            if not isinstance(others, list) or not all(isinstance(o, str) and o.strip() for o in others):
                self.problem(place, "expected the namespace's other names, such as [kafka://broker-2:9092, kafka://broker-3:9092]")
                continue
            for alias in others:
                taken = used.get(place_of(alias))
                if place_of(alias) == place_of(str(namespace)):
                    self.catalog.warnings.append(Problem(place, f"{alias} is already matched as {namespace} (a Kafka host is "
                                                                 "matched in any case, without a listener's protocol)"))
                elif taken is not None:
                    self.problem(place, f"{alias} is a namespace the catalog declares its own datasets in ({taken}): an alias "
                                        "cannot also name another place")
                elif place_of(alias) in named:
                    self.problem(place, f"{alias} is already an alias of {aliases[named[place_of(alias)]]}: a name stands for one place")
                else:
                    named[place_of(alias)], aliases[alias] = alias, str(namespace)
        self.catalog.namespaces = Namespaces.of(used.values(), aliases)

    def teams(self, teams: dict[str, Any]) -> None:
        for name, raw in teams.items():
            place = f"teams.{name}"
            if len(str(name)) > TEAM_MAX:
                self.problem(f"teams.{str(name)[:60]}…", f"a team's name holds at most {TEAM_MAX} characters ({len(str(name))} here)")
                continue
            if not isinstance(raw, dict):
                self.problem(place, "expected a mapping (usergroup, members, oncall, channel)")
                continue
            team = Team(str(name), raw.get("usergroup"), self.users(raw, "members", place), self.users(raw, "oncall", place),
                        self.channel(raw, place))
            if raw.get("change_hours") is not None:
                try:
                    if not isinstance(raw["change_hours"], dict):
                        raise CalendarError("expected days, start, end and timezone")
                    team.change_hours = ChangeHours.from_json(raw["change_hours"]).as_json()
                except CalendarError as err:
                    self.problem(f"{place}.change_hours", str(err))
            team.oncall_usergroup = raw.get("oncall_usergroup")
            if not isinstance(raw.get("self_approval", False), bool):
                self.problem(f"{place}.self_approval", "expected true or false")
            team.self_approval = raw.get("self_approval") is True
            team.consumer_groups = self.groups(raw, "consumer_groups", f"{place}.consumer_groups")
            team.escalation, team.escalate_after = self.escalation(raw, place)
            team.receivers = self.receivers(raw.get("receivers", []), f"{place}.receivers")
            for key in ("usergroup", "oncall_usergroup"):
                if raw.get(key) is not None and not (isinstance(raw[key], str) and USERGROUP.match(raw[key])):
                    self.problem(f"{place}.{key}", f"{raw[key]!r} is not a Slack user group id (S...)")
            if team.usergroup is None and not team.members:
                self.problem(place, "a team needs a usergroup or members, or nobody can act for it")
            self.catalog.teams[team.name] = team

    def escalation(self, raw: dict[str, Any], place: str) -> tuple[list[str], float | None]:
        """``escalation: [S..., U...]`` (user groups or people, in order) and ``escalate_after: 15m``."""
        chain = raw.get("escalation", [])
        if not isinstance(chain, list) or not all(isinstance(x, str) and (USERGROUP.match(x) or USER.match(x)) for x in chain):
            self.problem(f"{place}.escalation", "expected a list of Slack user group ids (S...) and user ids (U... or W...), in order")
            chain = []
        after = raw.get("escalate_after")
        if after is None:
            return list(chain), None
        try:
            seconds = span(after, "escalate_after").total_seconds()
        except PipelineError as err:
            self.problem(f"{place}.escalate_after", str(err))
            return list(chain), None
        if seconds < 60:
            self.problem(f"{place}.escalate_after", "at least 1m: a page needs a moment to be acknowledged")
            return list(chain), None
        return list(chain), seconds

    def receivers(self, raw: Any, place: str) -> list[dict[str, str]]:
        """``receivers: [{pagerduty: {routing_key_env: PAGERDUTY_ROUTING_KEY_...}}, {webhook: {url: https://...}}]``."""
        if not isinstance(raw, list):
            self.problem(place, "expected a list of {pagerduty: {routing_key_env: NAME}} and {webhook: {url: URL}}")
            return []
        found = []
        for number, item in enumerate(raw):
            where = f"{place}[{number}]"
            if isinstance(item, dict) and set(item) == {"pagerduty"} and isinstance(item["pagerduty"], dict):
                name = item["pagerduty"].get("routing_key_env")
                if isinstance(name, str) and ROUTING_KEY_ENV.match(name):
                    found.append({"type": "pagerduty", "routing_key_env": name})
                else:
                    self.problem(f"{where}.pagerduty.routing_key_env", "the name of an environment variable that starts with "
                                 "PAGERDUTY_ROUTING_KEY_ and holds the integration's routing key (never the key itself)")
            elif isinstance(item, dict) and set(item) == {"webhook"} and isinstance(item["webhook"], dict):
                url = item["webhook"].get("url")
                if isinstance(url, str) and re.match(r"https?://[^\s/]+", url) and len(url) <= 2000:
                    found.append({"type": "webhook", "url": url})
                else:
                    self.problem(f"{where}.webhook.url", "an http:// or https:// URL that takes Alertmanager's webhook JSON")
            else:
                self.problem(where, "expected {pagerduty: {routing_key_env: NAME}} or {webhook: {url: URL}}")
        return found

    def global_oncall(self, raw: Any) -> None:
        """``oncall: {usergroup: S..., members: [U...]}``: who may run backfills and replays of any pipeline."""
        if raw is None:
            return
        if not isinstance(raw, dict) or set(raw) - {"usergroup", "members"}:
            self.problem("oncall", "expected usergroup (a Slack user group id) and/or members (Slack user ids)")
            return
        usergroup = raw.get("usergroup")
        if usergroup is not None and not (isinstance(usergroup, str) and USERGROUP.match(usergroup)):
            self.problem("oncall.usergroup", f"{usergroup!r} is not a Slack user group id (S...)")
            return
        members = self.users(raw, "members", "oncall")
        if usergroup is None and not members:
            self.problem("oncall", "give a usergroup or members, or nobody is the global oncall")
            return
        self.catalog.oncall = Team("oncall", usergroup, members, members)

    def users(self, raw: dict[str, Any], key: str, place: str) -> list[str]:
        users = raw.get(key, [])
        if not isinstance(users, list) or not all(isinstance(u, str) for u in users):
            self.problem(f"{place}.{key}", "expected a list of Slack user ids")
            return []
        for user in users:
            if not USER.match(user):
                self.problem(f"{place}.{key}", f"{user!r} is not a Slack user id (U... or W...)")
        return list(users)

    def subjects(self, subjects: dict[str, Any], kafka: str) -> None:
        for name, raw in subjects.items():
            place = f"subjects.{name}"
            if len(str(name)) > SUBJECT_MAX:
                self.problem(f"subjects.{str(name)[:60]}…", f"a subject's name holds at most {SUBJECT_MAX} characters ({len(str(name))} here)")
                continue
            if not isinstance(raw, dict):
                self.problem(place, "expected a mapping (topic, owner, compatibility, channel, schema, schema_type, buf)")
                continue
            topic = raw.get("topic") or _topic_of(str(name))
            mode = str(raw.get("compatibility", "FULL")).upper()
            if mode not in MODES:
                self.problem(f"{place}.compatibility", f"{raw.get('compatibility')!r} is not one of {', '.join(sorted(MODES))}")
            owner = self.owner(raw, place)
            if len(str(raw.get("namespace", kafka))) > NAMESPACE_MAX:
                self.problem(f"{place}.namespace", f"expected a namespace such as kafka://broker:9092 (at most {NAMESPACE_MAX} characters)")
            subject = Subject(str(name), str(topic), str(raw.get("namespace", kafka)), owner or "", mode, self.channel(raw, place),
                              raw.get("schema"))
            try:
                subject.schema_type = SchemaType.parse(str(raw.get("schema_type", "AVRO")))
            except ValueError as err:
                self.problem(f"{place}.schema_type", str(err))
            if "buf" in raw:
                subject.buf = self.buf(raw["buf"], subject.schema_type, f"{place}.buf")
            approval = raw.get("approval") or {}
            try:
                subject.approval = Policy.from_json(approval).as_json() if approval else {}
            except (TypeError, ValueError, AttributeError) as err:
                self.problem(f"{place}.approval", f"expected window_hours, reminders (fractions), acknowledge (levels), fallback (teams): {err}")
            if subject.schema_file is not None:
                try:
                    subject.schema = parse_schema(subject.schema_type, self.load_schema(str(subject.schema_file)))
                except INVALID as err:
                    self.problem(f"{place}.schema", f"{subject.schema_file} is not a valid {subject.schema_type.value} schema: {err}")
                except (OSError, ValueError) as err:
                    self.problem(f"{place}.schema", f"cannot use {subject.schema_file}: {err}")
            self.catalog.subjects[subject.name] = subject
            fields = field_paths_of(subject.schema_type, subject.schema) if subject.schema else []
            self.catalog.datasets[subject.dataset] = Dataset(subject.dataset, "topic", [owner] if owner else [], fields, subject.name)

    def buf(self, raw: Any, schema_type: SchemaType, place: str) -> list[str]:
        """A Protobuf subject's Buf categories or rule ids (``WIRE_JSON``, or a list), as buf.yaml v2 names them."""
        from bot.domain.buf.config import BufConfigError, valid_names  # Buf's rules: only for catalogs that name them

        names = [raw] if isinstance(raw, str) else raw
        if schema_type is not SchemaType.PROTOBUF:
            self.problem(place, "Buf's rules judge Protobuf schemas: set schema_type: PROTOBUF, or leave buf out")
            return []
        try:
            valid_names(names, "v2", place)
        except BufConfigError as err:
            self.problem(place, str(err).removeprefix(f"{place}: "))
            return []
        return list(names)

    def datasets(self, datasets: list[Any]) -> None:
        for index, raw in enumerate(datasets):
            place = f"datasets[{index}]"
            if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not isinstance(raw.get("namespace"), str):
                self.problem(place, "a dataset needs a name and a namespace (e.g. iceberg://lake)")
                continue
            place = f"{place} ({raw['name']})"
            ident = DatasetId(raw["namespace"], raw["name"])
            if ident in self.catalog.datasets:
                self.problem(place, f"dataset {ident.namespace}/{ident.name} is declared twice")
                continue
            fields = raw.get("fields", [])
            if not isinstance(fields, list) or not all(isinstance(f, str) and f for f in fields):
                self.problem(f"{place}.fields", "expected a list of field paths")
                fields = []
            owner = self.owner(raw, place)
            self.catalog.datasets[ident] = Dataset(ident, str(raw.get("kind", "dataset")), [owner] if owner else [], list(fields))

    def jobs(self, jobs: list[Any]) -> None:
        seen: set[JobId] = set()
        for index, raw in enumerate(jobs):
            place = f"jobs[{index}]"
            if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
                self.problem(place, "a job needs a name")
                continue
            place = f"{place} ({raw['name']})"
            ident = JobId(str(raw.get("namespace", DEFAULT_JOB_NAMESPACE)), raw["name"])
            if ident in seen:
                self.problem(place, f"job {ident.name} is declared twice")
                continue
            seen.add(ident)
            owner = self.owner(raw, place)
            inputs = self.refs(raw, "inputs", place)
            outputs = self.refs(raw, "outputs", place)
            job = Job(ident, [owner] if owner else [], self.channel(raw, place), [d for _, d in inputs], [d for _, d in outputs])
            job.mappings = self.mappings(raw.get("mappings", {}), inputs, outputs, f"{place}.mappings")
            targets = {target.dataset for _, target in job.mappings}
            job.unmapped_outputs = [d for d in job.outputs if d not in targets]
            job.consumer_groups = self.groups(raw, "consumer_groups", f"{place}.consumer_groups")
            flink = raw.get("flink")
            if flink is not None and not (isinstance(flink, str) and FLINK_VERSION.fullmatch(flink)):
                self.problem(f"{place}.flink", "expected the Flink version the job runs on, such as \"2.3.0\"")
            elif flink is not None:
                job.flink = flink
            self.catalog.jobs.append(job)

    def groups(self, raw: dict[str, Any], key: str, place: str) -> list[str]:
        """A list of Kafka consumer group names (a job's, a team's, the retired ones)."""
        groups = raw.get(key) or []
        if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
            self.problem(place, "expected a list of Kafka consumer group names")
            return []
        for group in groups:
            if not GROUP.fullmatch(group):
                self.problem(place, f"{group[:80]!r} is not a Kafka consumer group id ({GROUP_RULE})")
        return list(groups)

    # --- references -----------------------------------------------------------------------------

    def owner(self, raw: dict[str, Any], place: str) -> str | None:
        owner = raw.get("owner")
        if owner is None:
            self.problem(f"{place}.owner", "missing: every subject, dataset and job has an owning team")
            return None
        if owner not in self.catalog.teams:
            self.problem(f"{place}.owner", f"unknown team {owner!r}")
        return str(owner)

    def refs(self, raw: dict[str, Any], key: str, place: str) -> list[tuple[str, DatasetId]]:
        items = raw.get(key, [])
        if not isinstance(items, list):
            self.problem(f"{place}.{key}", "expected a list of datasets")
            return []
        found = []
        for item in items:
            ident = self.dataset_ref(item)
            if ident is None:
                self.problem(f"{place}.{key}", f"dangling dataset {item!r}: declare it under datasets, or as a subject's topic")
                continue
            found.append((item if isinstance(item, str) else ident.name, ident))
        return found

    def dataset_ref(self, item: Any) -> DatasetId | None:
        if isinstance(item, dict):
            ident = DatasetId(str(item.get("namespace")), str(item.get("name")))
            return ident if ident in self.catalog.datasets else None
        if not isinstance(item, str):
            return None
        if item in self.catalog.subjects:
            return self.catalog.subjects[item].dataset
        named = [d for d in self.catalog.datasets if d.name == item]
        return named[0] if len(named) == 1 else None

    def mappings(self, raw: Any, inputs: list[tuple[str, DatasetId]], outputs: list[tuple[str, DatasetId]],
                 place: str) -> list[tuple[FieldRef, FieldRef]]:
        if not isinstance(raw, dict):
            self.problem(place, 'expected a mapping of "output.field": [input.fields]')
            return []
        pairs: list[tuple[FieldRef, FieldRef]] = []
        for target_text, sources in raw.items():
            at = f'{place}["{target_text}"]'
            target = self.field_ref(str(target_text), outputs, at, "outputs")
            if isinstance(sources, str):
                sources = [sources]
            if not isinstance(sources, list) or not sources:
                self.problem(at, "expected a list of input fields")
                continue
            for source_text in sources:
                source = self.field_ref(str(source_text), inputs, at, "inputs")
                if source is not None and target is not None:
                    pairs.append((source, target))
        return pairs

    def has_field(self, dataset: Dataset, path: str) -> bool:
        """Whether ``path`` is a field of ``dataset`` (any, when its fields are unknown); a subject's schema past the
        listing's limit is asked itself."""
        known = dataset.fields
        if not known or any(k == path or k.startswith(path + ".") for k in known):
            return True
        subject = self.catalog.subjects.get(dataset.subject or "")
        if len(known) < FIELD_PATHS or subject is None or subject.schema is None:
            return False
        walk = field_walk_of(subject.schema_type, subject.schema)
        return walk is not None and walk.has(path)

    def field_ref(self, text: str, refs: list[tuple[str, DatasetId]], place: str, side: str) -> FieldRef | None:
        """``dataset.field.path`` against the job's declared datasets, longest dataset name first."""
        candidates = sorted([*refs, *((d.name, d) for _, d in refs)], key=lambda c: -len(c[0]))
        for label, dataset in candidates:
            if text.startswith(label + "."):
                path = text[len(label) + 1:]
                if not self.has_field(self.catalog.datasets[dataset], path):
                    self.problem(place, f"{dataset.name} has no field {path!r}")
                    return None
                return FieldRef(dataset, path)
        self.problem(place, f"{text!r} is not a field of the job's {side} (write dataset.field)")
        return None


def _mapping(reader: _Reader, data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key, {})
    if value is None:
        return {}
    if not isinstance(value, dict):
        reader.problem(key, "expected a mapping")
        return {}
    return value


def _sequence(reader: _Reader, data: dict[str, Any], key: str) -> list[Any]:
    value = data.get(key, [])
    if value is None:
        return []
    if not isinstance(value, list):
        reader.problem(key, "expected a list")
        return []
    return value


def duration(value: Any) -> timedelta:
    """``62h``, ``90m``, ``2d``, ``1h30m`` (or minutes as a number); CalendarError otherwise."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return timedelta(minutes=value)
    match = re.fullmatch(r"\s*(?:(\d+)\s*d)?\s*(?:(\d+)\s*h)?\s*(?:(\d+)\s*m)?\s*", str(value))
    if not match or not any(match.groups()):
        raise CalendarError(f"duration {value!r} is not like 62h, 90m, 2d or 1h30m")
    days, hours, minutes = (int(g or 0) for g in match.groups())
    return timedelta(days=days, hours=hours, minutes=minutes)


def moment(value: Any) -> datetime:
    """An ISO 8601 time with an offset (YAML may already have made it a datetime); CalendarError otherwise."""
    if isinstance(value, datetime):
        parsed = value
    else:
        try:
            parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError:
            raise CalendarError(f"{value!r} is not an ISO 8601 time (2026-12-24T00:00:00Z)") from None
    if parsed.tzinfo is None:
        raise CalendarError(f"{value!r} needs a time zone offset (e.g. Z or +01:00)")
    return parsed.astimezone(UTC)


def _topic_of(subject: str) -> str:
    """Confluent's TopicNameStrategy: subject ``orders-value`` is topic ``orders``."""
    return subject.removesuffix("-value").removesuffix("-key")
