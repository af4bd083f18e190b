"""Classify a proposed schema against a subject's versions: safe, compatible or breaking, and why."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from bot.domain.avro.model import Schema
from bot.domain.avro.normal import normal_form
from bot.domain.compat.changes import Change, Direction
from bot.domain.compat.memo import Walked, crowded
from bot.domain.compat.pairs import semantic_walk
from bot.domain.compat.places import PLACES
from bot.domain.compat.resolve import Resolution
from bot.domain.compat.rules import RULES, Level, rule_of

BACKWARD, FORWARD = Direction.BACKWARD, Direction.FORWARD
LEVEL_NAMES = {level: str(level) for level in Level}
REQUIRED = {"BACKWARD": frozenset({BACKWARD}), "FORWARD": frozenset({FORWARD}),
            "FULL": frozenset({BACKWARD, FORWARD}), "NONE": frozenset[Direction]()}


class Mode(enum.StrEnum):
    """Compatibility modes, with Confluent Schema Registry's names."""

    BACKWARD = "BACKWARD"
    BACKWARD_TRANSITIVE = "BACKWARD_TRANSITIVE"
    FORWARD = "FORWARD"
    FORWARD_TRANSITIVE = "FORWARD_TRANSITIVE"
    FULL = "FULL"
    FULL_TRANSITIVE = "FULL_TRANSITIVE"
    NONE = "NONE"

    @property
    def required(self) -> frozenset[Direction]:
        """The directions this mode requires to hold."""
        return REQUIRED[self.value.removesuffix("_TRANSITIVE")]

    @property
    def transitive(self) -> bool:
        """Whether every prior version is checked, not only the latest."""
        return self.value.endswith("_TRANSITIVE")

    def fails(self, backward: bool, forward: bool) -> bool:
        """Whether a change with these directions holding fails this mode."""
        return (BACKWARD in self.required and not backward) or (FORWARD in self.required and not forward)

    @classmethod
    def parse(cls, text: str) -> Mode:
        """A mode name, any case; ValueError names the valid ones."""
        try:
            return cls(text.strip().upper())
        except ValueError:
            raise ValueError(f"unknown mode {text!r}: use one of {', '.join(m.value for m in cls)}") from None


@dataclass(slots=True)  # built by the hundred per classification: not frozen, which costs four times more
class Finding:
    """One reported change: its rule, level, path and the plain message for consumers."""

    rule: str
    level: Level
    path: str
    message: str
    breaks: frozenset[Direction]

    def as_json(self) -> dict[str, str]:
        """The JSON form of the CLI and the API."""
        return {"path": self.path, "rule": self.rule, "level": LEVEL_NAMES[self.level], "message": self.message}


@dataclass(frozen=True)
class Verdict:
    """The classification of one proposal."""

    level: Level
    backward: bool
    forward: bool
    findings: tuple[Finding, ...]
    mode: Mode
    identical: bool = False
    first_version: bool = False


ADVICE = {
    BACKWARD: "upgrade producers first; consumers may follow",
    FORWARD: "upgrade every consumer before any producer writes with the new schema",
}


def classify(history: Sequence[Schema], new: Schema, mode: Mode = Mode.FULL) -> Verdict:
    """Classify ``new`` against ``history`` (oldest first; the last is the current version)."""
    if not history:
        return Verdict(Level.SAFE, True, True, (), mode, first_version=True)
    latest = history[-1]
    changes = _written([semantic_walk(latest, new), Resolution(BACKWARD).walk(latest, new), Resolution(FORWARD).walk(latest, new)])
    if not changes and normal_form(latest) == normal_form(new):  # only when the walks find nothing
        return Verdict(Level.SAFE, True, True, (), mode, identical=True)
    if mode.transitive:
        for number, older in enumerate(history[:-1], start=1):
            changes += _written([Resolution(BACKWARD).walk(older, new, version=number), Resolution(FORWARD).walk(older, new, version=number)])
    return verdict_of(changes, mode)


def _written(walks: list[Walked]) -> list[Change]:
    """The walks of one comparison, written alike: each pair at every place, or all at their shallowest (``crowded``)."""
    alike = crowded(walks)
    changes = [change for walk in walks for change in walk.changes(alike)]
    if alike:
        changes.append(Change("CHANGES_LISTED_ONCE", walks[0].label, detail=f"{PLACES:,}"))
    return changes


def verdict_of(changes: list[Change], mode: Mode) -> Verdict:
    """The verdict of a format's changes under ``mode``: each a finding whose level its rule and its broken
    directions decide."""
    merged = _merge(changes)
    required = mode.required
    findings = sorted([_finding(change, mode, required) for change in merged],
                      key=lambda f: (-f.level, f.path, f.rule))
    broken = frozenset().union(*(c.breaks for c in merged))
    level = max((f.level for f in findings), default=Level.SAFE)
    return Verdict(level, BACKWARD not in broken, FORWARD not in broken, tuple(findings), mode)


def _merge(changes: list[Change]) -> list[Change]:
    """One change per (rule, path): directions united, the first non-empty description kept."""
    merged: dict[tuple[str, str], Change] = {}
    for change in changes:
        key = (change.rule, change.path)
        seen = merged.get(key)
        if seen is None:
            merged[key] = change
            continue
        merged[key] = Change(
            seen.rule, seen.path, seen.old or change.old, seen.new or change.new, seen.detail or change.detail,
            seen.breaks | change.breaks, seen.version if seen.version is None or change.version is None else min(seen.version, change.version),
            seen.schema_type,
        )
    return list(merged.values())


def _finding(change: Change, mode: Mode, required: frozenset[Direction]) -> Finding:
    rule = RULES[change.rule] if change.schema_type == "AVRO" else rule_of(change.schema_type, change.rule)
    level = rule.level
    if change.breaks:
        level = max(level, Level.COMPATIBLE)
    if change.breaks & required:
        level = Level.BREAKING
    text = rule.template.format(path=change.path, old=change.old, new=change.new, detail=change.detail)
    against = f" (version {change.version})" if change.version is not None else ""
    if BACKWARD in change.breaks:
        text += f" Consumers on the new schema cannot read data written with the old one{against}."
    if FORWARD in change.breaks:
        text += f" Consumers still on the old schema{against} cannot read data written with the new one."
    allowed = change.breaks - required
    if allowed and not change.breaks & required and mode is not Mode.NONE:
        direction = next(iter(allowed))
        text += f" {mode.value} allows this: {ADVICE[direction]}."
    return Finding(change.rule, level, change.path, text, change.breaks)
