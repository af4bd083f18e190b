"""The field-level lineage graph and the impact query.

Nodes are short tuples that hold the graph's own id objects (cheap to hash, nothing to build when an answer
names them): fields ``("f", DatasetId, path)`` and job ports. A mapped job gets one port per output field it
writes (``("j", JobId, output DatasetId, output path)``): each input field it reads for that output points at the
port, the port at the output field, so a path through a job is exact. A black-box job gets one hub per
output dataset it does not map (``("b", JobId, output DatasetId)``):
every field of every input points at the hub and the hub at every field of that output, the
conservative reading. A dataset whose fields are unknown is one pseudo-field, ``*``.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Collection, Iterable
from datetime import UTC, datetime
from functools import cached_property
from itertools import chain
from operator import itemgetter
from typing import Any, NamedTuple

import networkx as nx

from bot.domain.lineage.field_paths import FIELD_PATHS, FieldWalk
from bot.domain.lineage.model import WHOLE, Dataset, DatasetId, Job, JobId
from bot.domain.lineage.namespaces import Namespaces, outdated

Node = tuple[Any, ...]
_ID = itemgetter(1)  # a field's DatasetId, a port's or hub's JobId


class LineageError(ValueError):
    """An impact query that names an unknown dataset or field."""


class ImpactedField(NamedTuple):
    """A downstream field reached by the change, with the shortest explanation found."""

    dataset: DatasetId
    field: str
    via_job: JobId
    path: tuple[str, ...]
    black_box_only: bool

    def as_json(self) -> dict[str, Any]:
        """``{"dataset","namespace","field","via_job","path","black_box_only"}``."""
        return {"dataset": self.dataset.name, "namespace": self.dataset.namespace, "field": self.field,
                "via_job": self.via_job.name, "path": " -> ".join(self.path), "black_box_only": self.black_box_only}


class ImpactedJob(NamedTuple):
    """A job on the way, with its owners and channel, and how the bot learned of it."""

    id: JobId
    owners: tuple[str, ...]
    channel: str | None
    black_box: bool
    learned: str = "catalog"

    def as_json(self) -> dict[str, Any]:
        """``{"namespace","name","owners","channel","black_box","learned"}``."""
        return {"namespace": self.id.namespace, "name": self.id.name, "owners": list(self.owners),
                "channel": self.channel, "black_box": self.black_box, "learned": self.learned}


class Impact:
    """The downstream closure of a change to some fields of one dataset.

    The query itself is the walk; the lists (impacted fields with their explanation paths, jobs,
    owners) are built from the walk on first use, so a caller that needs only the owners or a count
    does not pay for thousands of explanations.
    """

    def __init__(self, graph: LineageGraph, dataset: DatasetId, fields: tuple[str, ...], walk: _Walk,
                 enclosed: dict[str, str] | None = None) -> None:
        self.graph, self.dataset, self.fields = graph, dataset, fields
        self.enclosed = enclosed or {}  # a path deeper than the lineage lists: the struct holding it, whose readers read it
        self._parents, self._starts, self._hops = walk.parents, walk.starts, walk.hops
        self._fields, self._through, self._whence, self._exact = walk.fields, walk.through, walk.whence, walk.exact

    @cached_property
    def impacted(self) -> tuple[ImpactedField, ...]:
        """Every downstream field, exact paths first, each with its shortest explanation."""
        return self._explained(len(self._fields))

    def first(self, count: int) -> tuple[ImpactedField, ...]:
        """The first ``count`` of ``impacted``, without explaining the others."""
        return self.impacted[:count] if "impacted" in self.__dict__ else self._explained(min(count, len(self._fields)))

    @property
    def total(self) -> int:
        """How many downstream fields the change reaches (``len(impacted)``, without building it)."""
        return len(self._fields)

    @cached_property
    def _job_ids(self) -> list[JobId]:
        """The jobs on the way, in the order the walk met them."""
        return list(dict.fromkeys(map(_ID, self._hops)))

    def _explained(self, count: int) -> tuple[ImpactedField, ...]:
        """The first ``count`` fields reached, explained. Each is one step past a field already explained (a changed one, or
        one reached before it: the walk goes breadth-first) through a job's port, which leads to that field alone, or a black
        box's hub, whose steps are kept for the other fields it leads to. Steps are kept by the node's ``id`` (the walk's own
        objects, alive in the walk's lists): an int hashes at once, a node tuple element by element."""
        fields, through, whence, exact = self._fields, self._through, self._whence, self._exact
        explained: dict[int, tuple[str, ...]] = {id(node): (f"{node[1].name}.{node[2]}",) for node in self._starts}
        steps_to, hub_steps = explained.__getitem__, explained.get
        new = tuple.__new__  # ImpactedField's own __new__, without the Python-level call
        found: list[ImpactedField] = []
        add = found.append
        for number in range(count):
            node, hop = fields[number], through[number]
            dataset, path = node[1], node[2]
            if hop[0] == "j":
                steps = (*steps_to(id(whence[number])), hop[1].name, f"{dataset.name}.{path}")
            else:
                before = hub_steps(id(hop))
                if before is None:
                    before = explained[id(hop)] = (*steps_to(id(whence[number])), f"{hop[1].name} (black box)")
                steps = (*before, f"{dataset.name}.{path}")
            explained[id(node)] = steps
            add(new(ImpactedField, (dataset, path, hop[1], steps, number >= exact)))  # the walk's second part: through black boxes only
        return tuple(found)

    @cached_property
    def jobs(self) -> tuple[ImpactedJob, ...]:
        """The jobs on the way, in the order the walk met them."""
        jobs = self.graph.jobs
        return tuple(ImpactedJob(j, tuple(jobs[j].owners), jobs[j].channel, jobs[j].black_box, jobs[j].learned)
                     for j in self._job_ids)

    def unowned(self, teams: Collection[str]) -> tuple[ImpactedJob, ...]:
        """The jobs on the way that no known team owns (no owner, or owners that are not ``teams``): readers
        nobody can be asked for."""
        return tuple(job for job in self.jobs if not set(job.owners) & set(teams))

    @cached_property
    def datasets(self) -> tuple[DatasetId, ...]:
        """The datasets reached (through at least one job)."""
        return tuple(dict.fromkeys(map(_ID, self._fields)))

    @property
    def dropped(self) -> list[tuple[DatasetId, datetime]]:
        """The datasets reached that were dropped and not named since, with when: their readers are listed still."""
        known = self.graph.datasets
        return [(d, at) for d in self.datasets if d in known and (at := known[d].dropped_at) is not None]

    @cached_property
    def owners(self) -> tuple[str, ...]:
        """The teams to ask: owners of the jobs on the way, then of the datasets reached."""
        ids: Iterable[DatasetId | JobId] = chain(self._job_ids, self.datasets)
        return tuple(dict.fromkeys(chain.from_iterable(map(self.graph._owners.__getitem__, ids))))

    def as_json(self, teams: Collection[str] | None = None, *, limit: int | None = None) -> dict[str, Any]:
        """The JSON of ``bot impact --format json`` (every impacted field) and, with ``limit``, of a proposal
        (the first ``limit`` fields: what its card shows); ``impacted_total`` and ``datasets_total`` count them
        all either way. With the known ``teams``, also the ``unowned`` jobs."""
        shown = self.impacted if limit is None else self.first(limit)
        data = {"dataset": self.dataset.name, "namespace": self.dataset.namespace, "fields": list(self.fields),
                "impacted": [i.as_json() for i in shown], "impacted_total": self.total, "datasets_total": len(self.datasets),
                "jobs": [j.as_json() for j in self.jobs], "owners": list(self.owners)}
        if self.enclosed:
            data["enclosed"] = dict(self.enclosed)
        if dropped := self.dropped:
            data["dropped"] = [{"dataset": d.name, "namespace": d.namespace, "at": at.astimezone(UTC).isoformat()} for d, at in dropped]
        if teams is not None:
            data["owners"] = [o for o in self.owners if o in teams]
            data["unowned"] = [j.as_json() for j in self.unowned(teams)]
        return data


class _Walk(NamedTuple):
    parents: dict[Node, Node]  # every node reached, in the order met, with the node it was met from (a changed field: itself)
    starts: list[Node]  # the changed fields
    fields: list[Node]  # reached, the changed ones left out
    through: list[Node]  # the port or hub each of ``fields`` was reached through
    whence: list[Node]  # the field that port or hub was reached from
    exact: int  # how many of ``fields`` came by exact mappings (the rest only through black boxes)
    hops: list[Node]  # job ports and black-box hubs


class LineageGraph:
    """Datasets, jobs and field edges, ready for impact queries."""

    def __init__(self, datasets: Iterable[Dataset], jobs: Iterable[Job], namespaces: Namespaces | None = None,
                 declared: Collection[DatasetId] = ()) -> None:
        found = list(datasets)  # every dataset is kept under the catalog's name for its place, and one name of its symlinks'
        self.namespaces = (namespaces or Namespaces()).linked(found, declared)  # (two the catalog ``declared`` stay two)
        self.outdated = outdated(found, declared, self.namespaces)  # the catalog's names a rename has given up since
        self.datasets: dict[DatasetId, Dataset] = {d.id: d for d in self.namespaces.datasets(found)}
        self.jobs: dict[JobId, Job] = {}
        self.graph = nx.DiGraph()
        self._next: dict[Node, list[Node] | tuple[()]] = {}  # each node's successors in ``graph``, as the walk reads them
        self._fields: dict[DatasetId, dict[str, Node]] = {}
        self._ids: dict[DatasetId, DatasetId] = {d: d for d in self.datasets}  # one id object per dataset, held by its nodes
        self._teams: dict[tuple[str, ...], tuple[str, ...]] = {(): ()}  # one tuple per set of owners: a card reads few, often
        self._owners: dict[DatasetId | JobId, tuple[str, ...]] = {d.id: self._shared(d.owners) for d in self.datasets.values()}  # what a card asks of each
        self._indexes: dict[DatasetId, _PathIndex] = {}  # built on first query, dropped when a field is added
        for dataset in self.datasets.values():
            for path in dataset.fields or [WHOLE]:
                self._field(dataset.id, path)
        for job in jobs:
            self.add_job(job)

    def _field(self, dataset: DatasetId, path: str) -> Node:
        known = self._fields.setdefault(dataset, {})
        node = known.get(path)
        if node is None:
            node = ("f", self._id(dataset), path)
            known[path] = node
            self._indexes.pop(dataset, None)
            self.graph.add_node(node)
            self._next[node] = ()
            if dataset not in self.datasets:
                self.datasets[dataset] = Dataset(dataset)
                self._owners[dataset] = ()
        return node

    def _shared(self, owners: Iterable[str]) -> tuple[str, ...]:
        teams = tuple(owners)
        return self._teams.setdefault(teams, teams)

    def _id(self, dataset: DatasetId) -> DatasetId:
        return self._ids.setdefault(dataset, dataset)

    def _all_fields(self, dataset: DatasetId) -> list[Node]:
        known = self._fields.get(dataset)
        if not known:
            return [self._field(dataset, WHOLE)]
        declared = self.datasets[dataset].fields
        return [known[p] for p in declared] if declared else list(known.values())

    def _edge(self, start: Node, end: Node) -> None:
        """An edge in ``graph`` and in ``_next``: a plain list per node is what a walk reads fastest (networkx keeps a
        dictionary of attributes per edge, whose memory a walk would bring through the CPU's caches)."""
        if end in self.graph._succ.get(start, ()):
            return
        self.graph.add_edge(start, end)
        after = self._next.get(start)
        if isinstance(after, list):
            after.append(end)
        else:
            self._next[start] = [end]

    def add_job(self, job: Job) -> None:
        """Add one job's nodes and edges."""
        job = self.namespaces.job(job)
        self.jobs[job.id] = job
        self._owners[job.id] = self._shared(job.owners)
        for source, target in job.mappings:
            port = ("j", job.id, self._id(target.dataset), target.path)
            self._edge(self._field(source.dataset, source.path), port)
            self._edge(port, self._field(target.dataset, target.path))
        for output in job.unmapped_outputs:
            hub = ("b", job.id, self._id(output))
            for dataset in job.inputs:
                for node in self._all_fields(dataset):
                    self._edge(node, hub)
            for node in self._all_fields(output):
                self._edge(hub, node)

    # --- queries --------------------------------------------------------------------------------

    def find_dataset(self, name: str, namespace: str | None = None) -> DatasetId:
        """The dataset called ``name`` (narrowed by ``namespace``, by any of its names), the dataset of a subject, or the
        dataset one of whose symlinks that is."""
        namespace = None if namespace is None else self.namespaces.canonical(namespace)
        matches = [d for d in self.datasets if d.name == name and (namespace is None or d.namespace == namespace)]
        if not matches:
            matches = [d.id for d in self.datasets.values() if d.subject == name and (namespace is None or d.id.namespace == namespace)]
        if not matches:
            other = self.namespaces.same.get(DatasetId(namespace, name)) if namespace is not None else None
            matches = self.named(name) if namespace is None else [other] if other is not None else []
        if not matches:
            raise LineageError(f"unknown dataset or subject {name!r}" + (f" in namespace {namespace!r}" if namespace else ""))
        if len(matches) > 1:
            spaces = ", ".join(sorted(d.namespace for d in matches))
            raise LineageError(f"{name!r} exists in several namespaces ({spaces}): give --namespace")
        return matches[0]

    def named(self, name: str) -> list[DatasetId]:
        """The datasets called ``name``: by their own name, else by another of theirs (a symlink)."""
        found = [d for d in self.datasets if d.name == name]
        return found or list(dict.fromkeys(kept for other, kept in self.namespaces.same.items() if other.name == name))

    def known(self, dataset: DatasetId, paths: Iterable[str]) -> list[str]:
        """The paths the lineage knows for ``dataset`` (a new field nobody maps yet is dropped)."""
        if not self.datasets[dataset].fields:
            return list(paths)
        known = self._fields.get(dataset, {})
        return [p for p in paths if any(_relation(k, p) is not None for k in known if k != WHOLE)]

    def impact(self, dataset: DatasetId, fields: Iterable[str] | None = None) -> Impact:
        """Everything downstream of ``fields`` of ``dataset`` (None: the whole dataset)."""
        if dataset not in self.datasets:
            raise LineageError(f"unknown dataset {dataset.name!r}")
        wanted = tuple(fields) if fields is not None else ()
        starts, enclosed = self._starts(dataset, wanted)
        return Impact(self, dataset, wanted, self._walk(starts), enclosed)

    def check_fields(self, dataset: DatasetId, paths: Iterable[str], schema: FieldWalk | None = None) -> None:
        """Refuse (LineageError) a path ``dataset`` does not have. A path the lineage knows (itself, or fields inside it)
        passes; any other must be a path of ``schema``, the walk of the dataset's newest schema, when there is one.
        Without it the fields listed decide where they are whole (below ``FIELD_PATHS`` paths): a subject's topic lists
        its schema's every path; a dataset declared by hand, the members of a struct where it lists any. A path below a
        struct declared without members may be a field (``impact`` answers it through that struct)."""
        listed = self.datasets[dataset]
        declared, whole = listed.fields, 0 < len(listed.fields) < FIELD_PATHS
        index = self._path_index(dataset)
        for path in paths:
            if path in index.position or index.members(path):
                continue
            outer = [p for p in _enclosing(path) if p in index.position]
            inside = sorted({d[len(outer[-1]) + 1:].split(".")[0] for d in declared if d.startswith(outer[-1] + ".")}) if outer else []
            if schema.has(path) if schema is not None else not (whole and (inside or listed.subject is not None)):
                continue
            shown = ", ".join(inside[:5]) + (f" and {len(inside) - 5} more" if len(inside) > 5 else "")
            hint = "" if not (outer and whole) else f" ({outer[-1]} has {shown})" if inside else f" ({outer[-1]} holds no fields)"
            raise LineageError(f"{dataset.name} has no field {path!r}{hint}")

    def _starts(self, dataset: DatasetId, wanted: tuple[str, ...]) -> tuple[list[Node], dict[str, str]]:
        """The changed fields' nodes: exact matches first, then their members, then enclosing structs (each group in the
        order the fields became known), the whole dataset's pseudo-field last; and the paths known only through the struct
        that holds them (deeper than the lineage lists), each with the nearest such struct."""
        known = self._fields.get(dataset, {})
        if not wanted:
            return list(known.values()), {}
        index = self._path_index(dataset)
        if index.flat.issuperset(wanted):  # the common case: top-level fields, none a struct with known members
            return list(dict.fromkeys([known[p] for p in wanted] + ([known[WHOLE]] if WHOLE in known else []))), {}
        exact: list[Node] = []
        members: list[Node] = []
        enclosing: list[Node] = []
        enclosed: dict[str, str] = {}
        for path in wanted:
            inside = index.members(path)
            outer = [p for p in _enclosing(path) if p in known]
            if path in known and path != WHOLE:
                exact.append(known[path])
            elif not inside and outer:
                enclosed[path] = outer[-1]
            elif not inside and self.datasets[dataset].fields:
                raise LineageError(f"{dataset.name} has no field {path!r}")
            members += [known[p] for p in inside]
            enclosing += [known[p] for p in sorted(outer, key=index.position.__getitem__)]
        whole = [known[WHOLE]] if WHOLE in known else []
        return list(dict.fromkeys(exact + members + enclosing + whole)), enclosed

    def _path_index(self, dataset: DatasetId) -> _PathIndex:
        index = self._indexes.get(dataset)
        if index is None:
            index = self._indexes[dataset] = _PathIndex(self._fields.get(dataset, {}))
        return index

    def _walk(self, starts: list[Node]) -> _Walk:
        """Breadth-first from ``starts``: first along exact mappings only, then on through black boxes.

        Returns the parent of every reached node, the fields reached in order with the port or hub each came through and the
        field before that (those reached by exact mappings first), and the job nodes reached, in the same order. A field
        reachable by exact mappings is explained by a shortest exact path; any other by a shortest path that goes on from
        those (explanations nest: no field on the way is explained twice, differently). The second part takes the black-box hubs the first met level by
        level, so a hub met late by exact mappings but early through another black box is explained by the early way.
        """
        succ = self._next
        parents: dict[Node, Node] = {start: start for start in starts}
        fields: list[Node] = []
        through: list[Node] = []
        whence: list[Node] = []
        hops: list[Node] = []
        field, came, came_from, hop = fields.append, through.append, whence.append, hops.append
        pending: list[list[tuple[Node, Node]]] = []  # by level k of exact fields: (hub, the field it was met from), depth 2k+1
        queued: set[Node] = set()  # hubs in ``pending``: the first meeting is the one taken, later ones are not queued again
        level = starts
        while level:  # fields only, a level at a time: a port is opened where it is found (its fields join the next level)
            following: list[Node] = []
            hubs: list[tuple[Node, Node]] = []
            for node in level:
                for nxt in succ[node]:
                    if nxt not in parents:
                        if nxt[0] == "b":  # a black box's hub: left for the second part, which gives it its parent
                            if nxt not in queued:
                                queued.add(nxt)
                                hubs.append((nxt, node))
                            continue
                        parents[nxt] = node
                        hop(nxt)
                        for out in succ[nxt]:
                            if out not in parents:
                                parents[out] = nxt
                                field(out)
                                came(nxt)
                                came_from(node)
                                following.append(out)
            pending.append(hubs)
            level = following
        exact = len(fields)
        frontier: list[Node] = []  # nodes at ``depth`` edges from the starts, met by the second part
        depth = 1
        while frontier or depth // 2 < len(pending):
            if depth % 2 and depth // 2 < len(pending):  # hubs met from exact fields at depth - 1 join those met from the others
                for hub, source in pending[depth // 2]:
                    if hub not in parents:
                        parents[hub] = source
                        hop(hub)
                        frontier.append(hub)
            following = []
            for node in frontier:
                for nxt in succ[node]:
                    if nxt not in parents:
                        parents[nxt] = node
                        if nxt[0] == "f":
                            field(nxt)
                            came(node)
                            came_from(parents[node])
                        else:
                            hop(nxt)
                        following.append(nxt)
            frontier = following
            depth += 1
        return _Walk(parents, starts, fields, through, whence, exact, hops)


class _PathIndex:
    """A dataset's field paths, sorted for prefix search, with the order they became known."""

    def __init__(self, known: dict[str, Node]) -> None:
        self.position = {path: number for number, path in enumerate(known)}
        self.sorted = sorted(p for p in known if p != WHOLE)
        structs = {p[:i] for p in self.sorted for i, c in enumerate(p) if c == "."}
        self.flat = {p for p in self.sorted if "." not in p and p not in structs}  # a path that is itself and nothing more

    def members(self, path: str) -> list[str]:
        """The known paths inside ``path`` (``path.x``, ``path.x.y``), in the order they became known."""
        prefix = path + "."
        start = bisect_left(self.sorted, prefix)
        end = bisect_left(self.sorted, path + "/")  # "/" follows "." in code points: just past every "path.*"
        return sorted(self.sorted[start:end], key=self.position.__getitem__) if end > start else []


def _enclosing(path: str) -> list[str]:
    """The structs that enclose ``path``: ``a`` and ``a.b`` for ``a.b.c``."""
    parts = path.split(".")
    return [".".join(parts[:n]) for n in range(1, len(parts))]


def _relation(field: str, changed: str) -> int | None:
    """How ``field`` relates to a changed path: 0 itself, 1 a member of it, 2 a struct enclosing it, None unrelated."""
    if field == changed:
        return 0
    if field.startswith(changed + "."):
        return 1
    if changed.startswith(field + "."):
        return 2
    return None
