"""One place, several names: the namespaces OpenLineage events give a dataset the catalog knows by another.

OpenLineage names a Kafka topic's namespace after one bootstrap server of the job's own configuration (the Flink and
Spark integrations take the first), so two jobs that read one topic of one cluster can name it ``kafka://broker-1:9092``
and ``kafka://broker-2:9092``. The catalog's ``namespace_aliases`` lists a place's other names. A Kafka namespace is also
matched without a listener's protocol (``kafka://SASL_SSL://broker:9093``), past its first server
(``kafka://broker:9092,broker-2:9092``) and with its host in any case, against the namespaces the catalog uses.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bot.domain.lineage.model import Dataset, DatasetId, FieldRef, Job


def place_of(namespace: str) -> str:
    """What two names of one place have in common: a Kafka namespace's first server, without a listener's protocol,
    its host in lower case; any other namespace as written."""
    scheme, _, rest = namespace.partition("://")
    if scheme.lower() != "kafka" or not rest:
        return namespace
    server = rest.replace(";", ",").split(",", 1)[0].strip().rstrip("/")
    server = server.rpartition("://")[2]
    return f"kafka://{server.lower()}"


@dataclass(frozen=True)
class Namespaces:
    """The namespace the catalog uses for each name of a place (by ``place_of``); a name it does not know stays as written."""

    names: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, used: Iterable[str], aliases: Mapping[str, str]) -> Namespaces:
        """The catalog's own namespaces (``used``) and its aliases (alias -> the namespace it names)."""
        names = {place_of(namespace): namespace for namespace in used}
        names.update({place_of(alias): namespace for alias, namespace in aliases.items()})
        return cls(names)

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Namespaces:
        names = value.get("names", {})
        return cls({str(k): str(v) for k, v in names.items()} if isinstance(names, dict) else {})

    def as_json(self) -> dict[str, Any]:
        return {"names": dict(self.names)}

    def canonical(self, namespace: str) -> str:
        return self.names.get(place_of(namespace), namespace) if self.names else namespace

    def dataset(self, ident: DatasetId) -> DatasetId:
        namespace = self.canonical(ident.namespace)
        return ident if namespace == ident.namespace else DatasetId(namespace, ident.name)

    def job(self, job: Job) -> Job:
        """``job`` with every dataset it names under the catalog's name for its place."""
        if not self.names:
            return job
        same = self.dataset

        def refs(pair: tuple[FieldRef, FieldRef]) -> tuple[FieldRef, FieldRef]:
            source, target = pair
            return FieldRef(same(source.dataset), source.path), FieldRef(same(target.dataset), target.path)

        return dataclasses.replace(job, inputs=_unique(map(same, job.inputs)), outputs=_unique(map(same, job.outputs)),
                                   mappings=_unique(map(refs, job.mappings)), unmapped_outputs=_unique(map(same, job.unmapped_outputs)))

    def datasets(self, found: Iterable[Dataset]) -> list[Dataset]:
        """One dataset per place, in the order found: the first to say its kind, owners, fields and subject is kept."""
        if not self.names:
            return list(found)
        merged: dict[DatasetId, Dataset] = {}
        for dataset in found:
            ident = self.dataset(dataset.id)
            kept = merged.get(ident)
            if kept is None:
                merged[ident] = dataclasses.replace(dataset, id=ident)
                continue
            kept.owners, kept.fields = kept.owners or dataset.owners, kept.fields or dataset.fields
            kept.subject = kept.subject or dataset.subject
        return list(merged.values())


def _unique(items: Iterable[Any]) -> list[Any]:
    return list(dict.fromkeys(items))
