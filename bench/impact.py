"""Impact-query speed on a large lineage graph, against a plain breadth-first search in the same run.

The graph: 10,000 datasets of 10 fields (100,000 field nodes) and 10,000 jobs (one in twenty a black
box), wired in layers so that a change travels several hops, popular datasets read by many jobs. Each query changes 5 fields of a
first-layer dataset. The baseline walks a dict adjacency list of the very same graph from the same
fields; the two take turns going first. Also prints the memory the loaded graph takes.

Run: .venv/bin/python bench/impact.py
"""

from __future__ import annotations

import random
import statistics
import sys
import time
import tracemalloc
from collections import deque
from typing import Any

from bot.domain.lineage.graph import LineageGraph
from bot.domain.lineage.model import Dataset, DatasetId, FieldRef, Job, JobId

DATASETS, FIELDS, JOBS, LAYERS, QUERIES = 10_000, 10, 10_000, 8, 300
CARD = 40  # impacted fields a proposal's card lists


def build() -> tuple[list[Dataset], list[Job]]:
    rng = random.Random(11)
    ids = [DatasetId("iceberg://lake", f"d{i}") for i in range(DATASETS)]
    datasets = [Dataset(d, "table", ["t"], [f"f{j}" for j in range(FIELDS)]) for d in ids]
    per_layer = DATASETS // LAYERS
    jobs = []
    for number in range(JOBS):
        layer = rng.randrange(LAYERS - 1)
        source = ids[layer * per_layer + int(per_layer * rng.random() ** 2)]  # popular topics have many readers
        target = ids[(layer + 1) * per_layer + int(per_layer * rng.random() ** 2)]
        job_id = JobId("flink://prod", f"j{number}")
        if number % 20 == 0:
            jobs.append(Job(job_id, [f"team{number % 50}"], None, [source], [target], [], [target]))
            continue
        mappings = [(FieldRef(source, f"f{rng.randrange(FIELDS)}"), FieldRef(target, f"f{rng.randrange(FIELDS)}")) for _ in range(4)]
        jobs.append(Job(job_id, [f"team{number % 50}"], None, [source], [target], mappings, []))
    return datasets, jobs


def plain_bfs(adjacency: dict[Any, list[Any]], starts: list[Any]) -> int:
    seen = set(starts)
    queue = deque(starts)
    while queue:
        for nxt in adjacency.get(queue.popleft(), ()):
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return len(seen)


def percentile(samples: list[float], share: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> None:
    datasets, jobs = build()
    tracemalloc.start()
    graph = LineageGraph(datasets, jobs)
    size, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    fields = sum(1 for n in graph.graph if n[0] == "f")
    print(f"graph: {fields:,} field nodes, {len(graph.jobs):,} jobs, {graph.graph.number_of_edges():,} edges, "
          f"{size / 2**20:.0f} MiB loaded")
    adjacency = {node: list(graph.graph.successors(node)) for node in graph.graph}
    field_nodes = {(n[1], n[2]): n for n in graph.graph if n[0] == "f"}  # (DatasetId, path): the graph's own node
    rng = random.Random(5)
    first_layer = [d.id for d in datasets[: DATASETS // LAYERS // 10]]
    ours, card, full, baseline, reached = [], [], [], [], []
    for number in range(QUERIES):
        source = rng.choice(first_layer)
        changed = [f"f{i}" for i in rng.sample(range(FIELDS), 5)]
        starts = [field_nodes[source, f] for f in changed]

        def query(source: DatasetId = source, changed: list[str] = changed) -> Any:
            started = time.perf_counter()
            impact = graph.impact(source, changed)
            ours.append(time.perf_counter() - started)
            impact.owners, impact.first(CARD), impact.total, impact.datasets  # noqa: B018 (what a proposal's card shows)
            card.append(time.perf_counter() - started)
            return impact

        def bfs(starts: list[Any] = starts) -> None:
            started = time.perf_counter()
            plain_bfs(adjacency, starts)
            baseline.append(time.perf_counter() - started)

        if number % 2:  # in turn first: the first to run pays for bringing the shared nodes into the CPU's caches
            bfs()
            impact = query()
        else:
            impact = query()
            bfs()
        started = time.perf_counter()
        graph.impact(source, changed).as_json()
        full.append(time.perf_counter() - started)
        reached.append(impact.total)
    rows = (("impact query (walk)", ours), (f"  + the card's answer (owners, first {CARD} fields explained, totals)", card),
            ("walk + every explanation, as JSON", full), ("plain BFS", baseline))
    for name, samples in rows:
        print(f"{name}: median {statistics.median(samples) * 1000:.2f} ms, p99 {percentile(samples, 0.99) * 1000:.2f} ms, "
              f"ratio to plain BFS: median {statistics.median(samples) / statistics.median(baseline):.2f}x, "
              f"p99 {percentile(samples, 0.99) / percentile(baseline, 0.99):.2f}x")
    print(f"median {statistics.median(reached):.0f} impacted fields per query (p99 {percentile(reached, 0.99):.0f})")


if __name__ == "__main__":
    if "--smoke" in sys.argv[1:]:  # tiny sizes, to check that it runs
        DATASETS, JOBS, QUERIES = 400, 400, 5
    main()
