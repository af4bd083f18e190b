"""Lineage coverage, for the monthly metadata health report (seed 000, section 6.4)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bot.domain.lineage.graph import LineageGraph
from bot.domain.lineage.model import DatasetId


@dataclass(frozen=True)
class Coverage:
    """How much of the lineage is field-level, and what nobody reads."""

    jobs: int
    black_box_jobs: tuple[str, ...]
    subjects: int
    subjects_with_field_lineage: tuple[str, ...]
    datasets_without_consumer: tuple[DatasetId, ...]

    @property
    def black_box_share(self) -> float:
        """Share of jobs that are black boxes (0 when there are no jobs)."""
        return len(self.black_box_jobs) / self.jobs if self.jobs else 0.0

    @property
    def field_lineage_share(self) -> float:
        """Share of subjects read only by jobs with field mappings."""
        return len(self.subjects_with_field_lineage) / self.subjects if self.subjects else 0.0

    def as_json(self) -> dict[str, Any]:
        """Figures and lists, as JSON."""
        return {
            "jobs": self.jobs, "black_box_jobs": list(self.black_box_jobs), "black_box_share": round(self.black_box_share, 4),
            "subjects": self.subjects, "subjects_with_field_lineage": list(self.subjects_with_field_lineage),
            "field_lineage_share": round(self.field_lineage_share, 4),
            "datasets_without_consumer": [{"namespace": d.namespace, "name": d.name} for d in self.datasets_without_consumer],
        }


def coverage(graph: LineageGraph) -> Coverage:
    """Black-box share, field-level share of subjects, and datasets no job reads."""
    readers: dict[DatasetId, list[bool]] = {}
    for job in graph.jobs.values():
        for dataset in job.inputs:
            mapped_from_here = any(source.dataset == dataset for source, _ in job.mappings) and not job.black_box
            readers.setdefault(dataset, []).append(mapped_from_here)
    subjects = [d for d in graph.datasets.values() if d.subject]
    field_level = tuple(sorted(d.subject for d in subjects if d.subject and readers.get(d.id) and all(readers[d.id])))
    unread = tuple(sorted((d for d in graph.datasets if d not in readers), key=lambda d: (d.namespace, d.name)))
    black = tuple(sorted(job.id.name for job in graph.jobs.values() if job.black_box))
    return Coverage(len(graph.jobs), black, len(subjects), field_level, unread)
