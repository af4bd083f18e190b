"""One place, several names: the namespaces OpenLineage events give a dataset the catalog knows by another.

OpenLineage names a Kafka topic's namespace after one bootstrap server of the job's own configuration (the Flink and
Spark integrations take the first), so two jobs that read one topic of one cluster can name it ``kafka://broker-1:9092``
and ``kafka://broker-2:9092``. The catalog's ``namespace_aliases`` lists a place's other names. A Kafka namespace is also
matched without a listener's protocol (``kafka://SASL_SSL://broker:9093``), past its first server
(``kafka://broker:9092,broker-2:9092``) and with its host in any case, against the namespaces the catalog uses.

One dataset, several names: OpenLineage's ``symlinks`` facet lists a dataset's other names (a Spark job writes a table
by its storage path and names the table in its catalog as a symlink; a Flink or Trino job reads it by that name). The
names of one dataset, linked by any event, are kept under one: the catalog's when it declares one of them. And a
dataset renamed (OpenLineage's ``lifecycleStateChange`` facet, RENAME) is one with the dataset of its old name, kept
under its new name, so jobs last seen reading the old name stay downstream of it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
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
    """The namespace the catalog uses for each name of a place (by ``place_of``); a name it does not know stays as written.
    And ``same``: the dataset kept for each other name of it (symlinks), namespaces already the catalog's."""

    names: Mapping[str, str] = field(default_factory=dict)
    same: Mapping[DatasetId, DatasetId] = field(default_factory=dict)

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
        """The catalog's names (``same`` is learned from the datasets each time, see ``linked``)."""
        return {"names": dict(self.names)}

    def linked(self, datasets: Sequence[Dataset], declared: Collection[DatasetId] = ()) -> Namespaces:
        """These names, and every name of one dataset (its own, its symlinks' and those it was renamed from, linked through
        any of them) kept under one: the name the newest rename gave (renames are taken by their time, whatever order their
        events came in, so a table renamed and renamed back is under its first name again), else the first of them that is a dataset's own name in
        ``datasets`` (list the catalog's first: its name is kept). Two datasets the catalog declares (``declared``) stay two,
        whatever an event says, and a name it declares is kept over a name an event gave: the catalog's word stands."""
        if not any(d.symlinks or d.previous for d in datasets):
            return self
        plain = Namespaces(self.names)
        first: dict[DatasetId, int] = {}
        for position, dataset in enumerate(datasets):
            first.setdefault(plain.dataset(dataset.id), position)
        root: dict[DatasetId, DatasetId] = {}
        catalog = {plain.dataset(name) for name in declared}  # the groups' names that hold a declared dataset

        def find(name: DatasetId) -> DatasetId:
            while name in root:
                name = root[name]
            return name

        def join(own: DatasetId, other: DatasetId, renamed: bool) -> None:
            one, two = find(plain.dataset(own)), find(plain.dataset(other))
            if one == two or (one in catalog and two in catalog):
                return
            if renamed and (one in catalog or two not in catalog):  # the name it has now, unless only the old one is declared
                keep, drop = one, two
            else:  # the name met first among datasets' own names
                keep, drop = sorted((one, two), key=lambda n: first.get(n, len(datasets)))
            root[drop] = keep
            if drop in catalog:
                catalog.add(keep)

        for dataset in datasets:
            for other in dataset.symlinks:
                join(dataset.id, other, False)
        renames = [(at, dataset.id, old) for dataset in datasets for old, at in dataset.previous.items()]
        for _, now, old in sorted(renames, key=lambda rename: rename[0], reverse=True):  # the newest first: its name is kept
            join(now, old, True)
        return Namespaces(self.names, {name: find(name) for name in root})

    def canonical(self, namespace: str) -> str:
        return self.names.get(place_of(namespace), namespace) if self.names else namespace

    def dataset(self, ident: DatasetId) -> DatasetId:
        namespace = self.canonical(ident.namespace)
        ident = ident if namespace == ident.namespace else DatasetId(namespace, ident.name)
        return self.same.get(ident, ident) if self.same else ident

    def job(self, job: Job) -> Job:
        """``job`` with every dataset it names under the catalog's name for its place, and the name kept for it."""
        if not self.names and not self.same:
            return job
        same = self.dataset

        def refs(pair: tuple[FieldRef, FieldRef]) -> tuple[FieldRef, FieldRef]:
            source, target = pair
            return FieldRef(same(source.dataset), source.path), FieldRef(same(target.dataset), target.path)

        return dataclasses.replace(job, inputs=_unique(map(same, job.inputs)), outputs=_unique(map(same, job.outputs)),
                                   mappings=_unique(map(refs, job.mappings)), unmapped_outputs=_unique(map(same, job.unmapped_outputs)))

    def datasets(self, found: Iterable[Dataset]) -> list[Dataset]:
        """One dataset per place and name kept, in the order found: the kept name's own dataset says its kind, owners, fields
        and subject, the others fill what it leaves out (the first of them first); the symlinks are every other name any of
        them went by, and ``previous`` every name they were renamed from."""
        if not self.names and not self.same:
            return list(found)
        merged: dict[DatasetId, Dataset] = {}
        plain = Namespaces(self.names)
        for dataset in found:
            ident = self.dataset(dataset.id)
            others = [n for n in (dataset.id, *dataset.symlinks) if plain.dataset(n) != ident] if self.same else dataset.symlinks
            previous = {n: at for n, at in dataset.previous.items() if plain.dataset(n) != ident}
            kept = merged.get(ident)
            if kept is None:
                merged[ident] = dataclasses.replace(dataset, id=ident, symlinks=_unique(others), previous=previous)
                continue
            if dataset.id == ident:  # the kept name's own dataset (a renamed one, met after its old name) says first
                kept.kind, kept.owners, kept.fields = dataset.kind, dataset.owners or kept.owners, dataset.fields or kept.fields
                kept.subject, kept.dropped_at = dataset.subject or kept.subject, dataset.dropped_at  # (its own name's drop says)
            else:
                kept.owners, kept.fields = kept.owners or dataset.owners, kept.fields or dataset.fields
                kept.subject = kept.subject or dataset.subject
            kept.symlinks = _unique([*kept.symlinks, *others])
            kept.previous = {n: max(at, kept.previous.get(n, at)) for n, at in {**kept.previous, **previous}.items()}
        return list(merged.values())


def outdated(datasets: Iterable[Dataset], declared: Collection[DatasetId], names: Namespaces) -> list[tuple[DatasetId, DatasetId, datetime]]:
    """The catalog's names that a rename has given up since, as ``(declared, now, when)``: the name its renames, followed
    in the order of their time, lead to now (one the catalog does not also declare), and the time of the last of them. A
    table renamed and renamed back is under its declared name again: not listed."""
    plain = Namespaces(names.names)
    renames = sorted((at, plain.dataset(old), plain.dataset(d.id)) for d in datasets for old, at in d.previous.items())
    if not renames:
        return []
    catalog = {plain.dataset(name) for name in declared}
    found: list[tuple[DatasetId, DatasetId, datetime]] = []
    for name in sorted(catalog & {old for _, old, _ in renames}):
        now, since = name, None
        for at, old, new in renames:
            if old == now:
                now, since = new, at
        if since is not None and now != name and now not in catalog:
            found.append((name, now, since))
    return found


def _unique(items: Iterable[Any]) -> list[Any]:
    return list(dict.fromkeys(items))
