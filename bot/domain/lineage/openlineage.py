"""OpenLineage events (spec 2.x) read into lineage: the job, its datasets, fields and owners.

Reads RunEvents, JobEvents (which carry no run) and DatasetEvents (a dataset's own metadata, no job): job and
dataset identities and their other names (the ``symlinks`` dataset facet, and the name a dataset was renamed from: the
``lifecycleStateChange`` facet's ``previousIdentifier`` for RENAME), the ``schema`` dataset facet (nested fields become dotted paths), the ``columnLineage`` facet
(output field <- input fields, and the input fields that bear on the whole output, such as a filter's or a join's,
which every field of that output depends on) and the ``ownership`` facets. An output without a columnLineage facet
makes the job a black box for that output. A job the event says runs on Flink (the ``jobType`` job facet's integration,
the ``processing_engine`` run facet) is a Flink job, as one with ``flink:`` in the catalog. A job or dataset facet sent
with ``_deleted: true`` deletes that facet: it is read as absent, and a deleted schema, ownership or symlinks facet
clears what earlier events said (``cleared``). Anything malformed raises ``OpenLineageError`` with the place and the
reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bot.domain.lineage.model import FLINK_VERSION, GROUP, WHOLE, Dataset, DatasetId, FieldRef, Job, JobId

EVENT_TYPES = {"START", "RUNNING", "COMPLETE", "ABORT", "FAIL", "OTHER"}


class OpenLineageError(ValueError):
    """A malformed event; the message names the place and the reason."""


@dataclass
class LineageEvent:
    """What one event says about one job."""

    job: Job | None  # None for a DatasetEvent
    event_time: datetime
    event_type: str | None
    run_id: str | None
    datasets: list[Dataset] = field(default_factory=list)

    @property
    def carries_lineage(self) -> bool:
        """Whether the event names any input or output (heartbeats do not, and must not wipe edges)."""
        return self.job is not None and bool(self.job.inputs or self.job.outputs)


def parse_event(value: Any) -> LineageEvent:
    """Read one event (a decoded JSON object)."""
    if not isinstance(value, dict):
        raise OpenLineageError("an event is a JSON object")
    for key in ("eventTime", "producer", "schemaURL"):
        if not isinstance(value.get(key), str) or not value[key]:
            raise OpenLineageError(f"{key}: required string is missing")
    event_time = _time(value["eventTime"])
    event_type = value.get("eventType")
    if event_type is not None and event_type not in EVENT_TYPES:
        raise OpenLineageError(f"eventType: {event_type!r} is not one of {', '.join(sorted(EVENT_TYPES))}")
    run_id, run_facets = None, {}
    if "run" in value:
        run = value["run"]
        if not isinstance(run, dict) or not isinstance(run.get("runId"), str):
            raise OpenLineageError("run.runId: required string is missing")
        run_id, run_facets = run["runId"], _facets(run, "run")
    if "dataset" in value and "job" not in value and "run" not in value:  # a DatasetEvent: one dataset's metadata
        raw = value["dataset"]
        if not isinstance(raw, dict):
            raise OpenLineageError("dataset: expected an object")
        return LineageEvent(None, event_time, event_type, run_id, [_dataset(raw, "dataset", event_time)])
    raw_job = value.get("job")
    if not isinstance(raw_job, dict):
        raise OpenLineageError("job: required object is missing (a DatasetEvent has a dataset and neither job nor run)")
    job_id = JobId(*_identity(raw_job, "job"))
    job_facets = _facets(raw_job, "job")
    job = Job(job_id, owners=_owners(job_facets, "job"), consumer_groups=_groups(job_facets), flink=_flink(job_facets, run_facets),
              cleared=_cleared(raw_job, ("ownership",)))
    datasets: dict[DatasetId, Dataset] = {}
    mapped: set[DatasetId] = set()
    for side in ("inputs", "outputs"):
        items = value.get(side, [])
        if not isinstance(items, list):
            raise OpenLineageError(f"{side}: expected an array of datasets")
        for index, raw in enumerate(items):
            place = f"{side}[{index}]"
            if not isinstance(raw, dict):
                raise OpenLineageError(f"{place}: expected an object")
            found = _dataset(raw, place, event_time)
            ident, facets = found.id, _facets(raw, place)
            dataset = datasets.setdefault(ident, found)
            dataset.fields, dataset.owners = found.fields or dataset.fields, found.owners or dataset.owners
            dataset.symlinks += [name for name in found.symlinks if name not in dataset.symlinks]
            dataset.previous.update(found.previous)
            dataset.dropped_at = dataset.dropped_at or found.dropped_at
            dataset.cleared = tuple(dict.fromkeys(dataset.cleared + found.cleared))
            (job.inputs if side == "inputs" else job.outputs).append(ident)
            if side == "inputs":
                job.consumer_groups += [g for g in _groups(facets) if g not in job.consumer_groups]
            if side == "outputs" and "columnLineage" in facets:
                found_pairs = _column_lineage(facets["columnLineage"], ident, dataset.fields, f"{place}.facets.columnLineage")
                job.mappings += [pair for pair in dict.fromkeys(found_pairs) if pair not in job.mappings]
                mapped.add(ident)
    for source, _ in job.mappings:
        if source.dataset not in job.inputs:
            job.inputs.append(source.dataset)
            datasets.setdefault(source.dataset, Dataset(source.dataset, _kind(source.dataset)))
    job.unmapped_outputs = [d for d in job.outputs if d not in mapped]
    return LineageEvent(job, event_time, event_type, run_id, list(datasets.values()))


def _dataset(raw: dict[str, Any], place: str, when: datetime) -> Dataset:
    """A dataset's identity, and the fields and owners its facets name (and the name it was renamed from, ``when``)."""
    ident = DatasetId(*_identity(raw, place))
    facets = _facets(raw, place)
    schema = facets.get("schema")
    fields = _schema_fields(schema, f"{place}.facets.schema") if schema is not None else []
    symlinks = _symlinks(facets["symlinks"], ident, f"{place}.facets.symlinks") if "symlinks" in facets else []
    change, previous = _lifecycle(facets["lifecycleStateChange"], ident, f"{place}.facets.lifecycleStateChange") \
        if "lifecycleStateChange" in facets else (None, None)
    return Dataset(ident, _kind(ident), _owners(facets, place), fields, symlinks=symlinks,
                   cleared=_cleared(raw, ("schema", "ownership", "symlinks")), previous={previous: when} if previous else {},
                   dropped_at=when if change == "DROP" else None)


def _lifecycle(facet: Any, ident: DatasetId, place: str) -> tuple[str, DatasetId | None]:
    """The change the facet says (RENAME, DROP, CREATE, ALTER, OVERWRITE, TRUNCATE, or one a later spec adds), and the name a
    RENAME gave up (``previousIdentifier``: {namespace, name}; none for the other changes)."""
    change = facet.get("lifecycleStateChange") if isinstance(facet, dict) else None
    if not isinstance(change, str):
        raise OpenLineageError(f"{place}.lifecycleStateChange: expected a string (RENAME, CREATE, ALTER, DROP, OVERWRITE, TRUNCATE)")
    before = facet.get("previousIdentifier")
    if before is None or change != "RENAME":
        return change, None
    if not isinstance(before, dict):
        raise OpenLineageError(f"{place}.previousIdentifier: expected an object {{namespace, name}}")
    name = DatasetId(*_identity(before, f"{place}.previousIdentifier"))
    return change, None if name == ident else name


def _symlinks(facet: Any, ident: DatasetId, place: str) -> list[DatasetId]:
    """The other names the ``symlinks`` facet gives a dataset (``identifiers``: {namespace, name, type}), its own left out."""
    identifiers = facet.get("identifiers", []) if isinstance(facet, dict) else None
    if not isinstance(identifiers, list):
        raise OpenLineageError(f"{place}.identifiers: expected an array of {{namespace, name, type}}")
    names: list[DatasetId] = []
    for index, raw in enumerate(identifiers):
        at = f"{place}.identifiers[{index}]"
        if not isinstance(raw, dict):
            raise OpenLineageError(f"{at}: expected an object")
        name = DatasetId(*_identity(raw, at))
        if "type" in raw and not isinstance(raw["type"], str):
            raise OpenLineageError(f"{at}.type: expected a string (TABLE, LOCATION)")
        if name != ident and name not in names:
            names.append(name)
    return names


def _time(text: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise OpenLineageError(f"eventTime: {text!r} is not an ISO 8601 date-time") from None
    if parsed.tzinfo is None:
        raise OpenLineageError(f"eventTime: {text!r} has no time zone offset")
    return parsed


NAMESPACE_BYTES, NAME_BYTES = 500, 2000  # what one job's or dataset's identity may take (together, one index entry)


def _identity(raw: dict[str, Any], place: str) -> tuple[str, str]:
    """A job's or dataset's namespace and name (a storage path may be long, not past ``NAME_BYTES``)."""
    namespace, name = _string(raw, "namespace", place), _string(raw, "name", place)
    for key, value, most in (("namespace", namespace, NAMESPACE_BYTES), ("name", name, NAME_BYTES)):
        if len(value.encode()) > most:
            raise OpenLineageError(f"{place}.{key}: longer than {most:,} bytes ({value[:60]!r}…)")
    return namespace, name


def _string(raw: dict[str, Any], key: str, place: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value:
        raise OpenLineageError(f"{place}.{key}: required string is missing")
    return value


def _facets(raw: dict[str, Any], place: str) -> dict[str, Any]:
    """The facets of ``raw`` (its ``facets``, and its ``inputFacets`` or ``outputFacets``), those deleted left out."""
    facets = raw.get("facets", {})
    if not isinstance(facets, dict):
        raise OpenLineageError(f"{place}.facets: expected an object")
    extra = raw.get("inputFacets") or raw.get("outputFacets") or {}
    if not isinstance(extra, dict):
        raise OpenLineageError(f"{place}: inputFacets/outputFacets must be objects")
    for name, facet in facets.items():
        deleted = facet.get("_deleted") if isinstance(facet, dict) else None
        if deleted is not None and not isinstance(deleted, bool):
            raise OpenLineageError(f"{place}.facets.{name}._deleted: expected true or false")
    return {name: facet for name, facet in {**extra, **facets}.items() if not (isinstance(facet, dict) and facet.get("_deleted") is True)}


def _cleared(raw: dict[str, Any], names: tuple[str, ...]) -> tuple[str, ...]:
    """Which of ``names`` the facets of ``raw`` delete (checked by ``_facets``)."""
    facets = raw.get("facets") or {}
    return tuple(name for name in names if isinstance(facets.get(name), dict) and facets[name].get("_deleted") is True)


def _owners(facets: dict[str, Any], place: str) -> list[str]:
    ownership = facets.get("ownership")
    if ownership is None:
        return []
    owners = ownership.get("owners") if isinstance(ownership, dict) else None
    if not isinstance(owners, list) or not all(isinstance(o, dict) and isinstance(o.get("name"), str) for o in owners):
        raise OpenLineageError(f"{place}.facets.ownership.owners: expected an array of {{name, type}}")
    return [owner_name(o["name"]) for o in owners]


def _groups(facets: dict[str, Any]) -> list[str]:
    """Kafka consumer groups a facet names (``consumerGroup`` or ``consumerGroups``, in any facet of the job or of a
    Kafka input, as integrations send them); names that cannot be groups are ignored."""
    found: list[str] = []
    for facet in facets.values():
        if not isinstance(facet, dict):
            continue
        many = facet.get("consumerGroups")
        for value in [facet.get("consumerGroup"), *(many if isinstance(many, list) else [])]:
            if isinstance(value, str) and GROUP.fullmatch(value) and value not in found:
                found.append(value)
    return found


def _flink(job_facets: dict[str, Any], run_facets: dict[str, Any]) -> str | None:
    """The Flink version when the event says the job runs on Flink ('' when it does not say which one): the
    ``processing_engine`` run facet named flink, or the ``jobType`` job facet whose integration is FLINK."""
    engine = run_facets.get("processing_engine")
    if isinstance(engine, dict) and str(engine.get("name", "")).lower() == "flink":
        version = engine.get("version")
        return version if isinstance(version, str) and FLINK_VERSION.fullmatch(version) else ""
    kind = job_facets.get("jobType")
    return "" if isinstance(kind, dict) and str(kind.get("integration", "")).upper() == "FLINK" else None


def owner_name(name: str) -> str:
    """``team:orders`` names the team ``orders``; any other owner is kept as written."""
    return name.removeprefix("team:")


def _schema_fields(schema: Any, place: str) -> list[str]:
    fields = schema.get("fields") if isinstance(schema, dict) else None
    if not isinstance(fields, list):
        raise OpenLineageError(f"{place}.fields: expected an array")
    paths: list[str] = []

    def walk(items: list[Any], prefix: str, at: str, depth: int) -> None:
        if depth > 64:
            raise OpenLineageError(f"{at}: nested deeper than 64 levels")
        for index, item in enumerate(items):
            if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
                raise OpenLineageError(f"{at}[{index}]: a field needs a name")
            path = f"{prefix}.{item['name']}" if prefix else item["name"]
            paths.append(path)
            nested = item.get("fields")
            if nested is not None:
                if not isinstance(nested, list):
                    raise OpenLineageError(f"{at}[{index}].fields: expected an array")
                walk(nested, path, f"{at}[{index}].fields", depth + 1)

    walk(fields, "", place, 0)
    return paths


def _column_lineage(facet: Any, output: DatasetId, output_fields: list[str], place: str) -> list[tuple[FieldRef, FieldRef]]:
    """(input field, output field) pairs: each output field's ``inputFields``, and each of ``dataset`` (input fields that
    bear on the whole output: a filter, a join, a sort, a grouping) paired with every field of the output (its schema's,
    else those the facet names, else the whole dataset)."""
    fields = facet.get("fields") if isinstance(facet, dict) else None
    if not isinstance(fields, dict):
        raise OpenLineageError(f"{place}.fields: expected an object of output field -> inputFields")
    pairs: list[tuple[FieldRef, FieldRef]] = []
    for name, entry in fields.items():
        inputs = entry.get("inputFields") if isinstance(entry, dict) else None
        if not isinstance(inputs, list):
            raise OpenLineageError(f"{place}.fields[{name!r}].inputFields: expected an array")
        for index, source in enumerate(inputs):
            pairs.append((_input_field(source, f"{place}.fields[{name!r}].inputFields[{index}]"), FieldRef(output, name)))
    whole = facet.get("dataset", [])
    if not isinstance(whole, list):
        raise OpenLineageError(f"{place}.dataset: expected an array of input fields")
    targets = output_fields or list(fields) or [WHOLE]
    for index, source in enumerate(whole):
        read = _input_field(source, f"{place}.dataset[{index}]")
        pairs += [(read, FieldRef(output, target)) for target in targets]
    return pairs


def _input_field(source: Any, at: str) -> FieldRef:
    if not isinstance(source, dict):
        raise OpenLineageError(f"{at}: expected an object")
    return FieldRef(DatasetId(*_identity(source, at)), _string(source, "field", at))


def _kind(ident: DatasetId) -> str:
    scheme = ident.namespace.split("://", 1)[0] if "://" in ident.namespace else "dataset"
    return "topic" if scheme == "kafka" else scheme
