"""Who still reads a transition's old fields, and what says each reader moved: the lineage (a job's newest OpenLineage
run, its last passed Flink release, the catalog's mappings), the reader census (consumer groups no job declares) and
what teams said. A reader is moved only on evidence, and the evidence is shown with it."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bot.domain.lineage.graph import LineageError, LineageGraph
from bot.domain.lineage.model import DatasetId, Job
from bot.domain.readers import Activity, Census
from bot.domain.transitions.model import Rename, listed

JOB, GROUP = "job", "group"


@dataclass(frozen=True)
class ReaderRef:
    """A reader of the old fields as first found: a job (by its lineage identity) or a consumer group."""

    kind: str  # JOB or GROUP
    name: str
    namespace: str = ""  # a job's OpenLineage namespace
    team: str | None = None

    @property
    def key(self) -> str:
        """Its stable name in a transition (``job:ns/name``, ``group:name``)."""
        return f"{self.kind}:{self.namespace}/{self.name}" if self.kind == JOB else f"{self.kind}:{self.name}"

    def as_json(self) -> dict[str, Any]:
        """As stored."""
        return {"kind": self.kind, "name": self.name, "namespace": self.namespace, "team": self.team}

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> ReaderRef:
        """As stored."""
        return cls(str(raw["kind"]), str(raw["name"]), str(raw.get("namespace") or ""), raw.get("team"))


@dataclass(frozen=True)
class Said:
    """A team's word that a reader moved."""

    reader: str  # ReaderRef.key
    team: str
    user: str
    at: datetime


@dataclass(frozen=True)
class ReaderState:
    """A reader, whether it moved, and why the bot says so."""

    ref: ReaderRef
    moved: bool
    evidence: str
    team: str | None

    def as_json(self) -> dict[str, Any]:
        """The contract's ``{"job" | "group", "team", "moved", "evidence"}``."""
        return {self.ref.kind: self.ref.name, "team": self.team, "moved": self.moved, "evidence": self.evidence}


def dataset_of(graph: LineageGraph, subject: str) -> DatasetId | None:
    """The lineage dataset of a subject, if lineage knows it."""
    try:
        return graph.find_dataset(subject)
    except LineageError:
        return None


def read_paths(graph: LineageGraph, subject: str) -> list[str]:
    """The paths of the subject's topic that jobs are known to read."""
    dataset = dataset_of(graph, subject)
    return sorted({source.path for job in graph.jobs.values() for source, _ in job.mappings if source.dataset == dataset}) if dataset else []


def reads(job: Job, dataset: DatasetId, paths: Collection[str]) -> list[str]:
    """The ``paths`` (or their parents or children) the job reads from ``dataset``; ``["*"]`` for a black box that reads it."""
    if dataset not in job.inputs:
        return []
    if job.black_box:
        return ["*"]
    found = {source.path for source, _ in job.mappings if source.dataset == dataset
             and any(source.path == p or source.path.startswith(p + ".") or p.startswith(source.path + ".") for p in paths)}
    return sorted(found)


def find_readers(graph: LineageGraph, subject: str, mapping: Sequence[Rename], census: Census | None) -> list[ReaderRef]:
    """Everyone who reads the old fields now: the jobs lineage shows reading them (a black box reads them all), and the
    consumer groups of the topic that no job declares (nobody can say which fields those read)."""
    found: list[ReaderRef] = []
    dataset = dataset_of(graph, subject)
    olds = [r.old for r in mapping]
    if dataset is not None:
        for job in sorted(graph.jobs.values(), key=lambda j: (j.id.namespace, j.id.name)):
            if reads(job, dataset, olds):
                found.append(ReaderRef(JOB, job.id.name, job.id.namespace, job.owners[0] if job.owners else None))
    if census is not None:
        for reader in census.reading:
            declared = reader.declared
            if declared is None or (declared.source == "attributed" and declared.job is None):
                found.append(ReaderRef(GROUP, reader.reading.group, team=declared.team if declared else None))
    return found


def merged(known: Iterable[ReaderRef], found: Iterable[ReaderRef]) -> list[ReaderRef]:
    """The readers a transition follows: every one it knew (a reader never drops off the list) and any new one, each once;
    a group's team is the newest known (someone said who answers for it)."""
    out: dict[str, ReaderRef] = {}
    for ref in [*known, *found]:
        earlier = out.get(ref.key)
        out[ref.key] = ref if earlier is None or (ref.team and ref.team != earlier.team) else earlier
    return list(out.values())


def judge(refs: Sequence[ReaderRef], graph: LineageGraph, subject: str, mapping: Sequence[Rename], census: Census | None,
          said: Sequence[Said]) -> list[ReaderState]:
    """Each reader with whether it moved and the evidence: what its lineage reads now, what the census sees, who said so."""
    dataset = dataset_of(graph, subject)
    olds, news = [r.old for r in mapping], [r.new for r in mapping]
    words = {s.reader: s for s in said}
    groups = {r.reading.group: r for r in census.readers} if census is not None else {}
    jobs = {(j.id.namespace, j.id.name): j for j in graph.jobs.values()}
    states = []
    for ref in refs:
        word = words.get(ref.key)
        told = f"{word.user} of {word.team} said it moved, at {word.at:%Y-%m-%d %H:%M} UTC" if word else ""
        if ref.kind == JOB:
            job = jobs.get((ref.namespace, ref.name))
            team = (job.owners[0] if job is not None and job.owners else None) or ref.team
            if job is None or dataset is None:
                states.append(ReaderState(ref, bool(word), told or "no longer in the lineage: only its team can say it moved", team))
                continue
            old = reads(job, dataset, olds)
            if not old:
                new = reads(job, dataset, news)
                what = f"reads {', '.join(new)}" if new else f"reads none of {listed(olds)}"
                states.append(ReaderState(ref, True, f"{_source(job)} {what}", team))
                continue
            still = "reads the whole topic (no field lineage)" if old == ["*"] else f"still reads {', '.join(old)}"
            states.append(ReaderState(ref, bool(word), f"{told}; {_source(job)} {still}" if word else f"{_source(job)} {still}", team))
            continue
        reader = groups.get(ref.name)
        team = (reader.declared.team if reader is not None and reader.declared is not None else None) or ref.team
        if word:
            states.append(ReaderState(ref, True, told, team))
        elif reader is not None and reader.activity in (Activity.RETIRED, Activity.STALE):
            states.append(ReaderState(ref, True, f"the reader census says it is {reader.activity.value}: it reads the topic no more", team))
        else:
            who = f"{team} has not said it moved" if team else "nobody answers for it yet: say who does on the reader census"
            states.append(ReaderState(ref, False, f"a consumer group the reader census sees on the topic; {who}", team))
    return states


def _source(job: Job) -> str:
    """Where the job's lineage comes from, as a sentence's start: ``its OpenLineage event of ...``."""
    learned = job.learned
    if "Flink release #" in learned:
        return "its last passed " + learned.rsplit("from ", 1)[-1]
    return "the catalog" if learned == "catalog" else f"its {learned}"
