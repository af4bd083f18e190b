"""Classification the registry's way for Protobuf and JSON Schema: a format's differences walked in both directions.
Its BACKWARD check is what a reader on the new schema meets in the old one's data (``differences(old, new)``), its
FORWARD check the reverse; a difference outside the format's compatible set fails the check it appears in. The
findings are the forward walk's, each with the directions it breaks (matched by the element they are about), and the
reverse walk's that fail, or that say what the registry does not check (``noted``), at elements the forward walk
says nothing of."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import TypeVar

from bot.domain.compat.changes import Change, Difference, Direction
from bot.domain.compat.classify import Mode, Verdict, verdict_of
from bot.domain.compat.rules import Level

S = TypeVar("S")


def classify_both_ways(history: Sequence[S], new: S, mode: Mode, differences: Callable[[S, S], Sequence[Difference]],
                       compatible: Collection[str], schema_type: str, across: Callable[[Sequence[S], S], list[Change]] | None = None,
                       noted: Collection[str] = ()) -> Verdict:
    """Classify ``new`` against ``history`` (oldest first; the last is the current version). ``across``: what the format
    finds only across the whole history (the registry never sees it: it breaks no direction the registry checks).
    ``noted``: compatible rules that name what the registry does not check, shown whichever walk meets them."""
    if not history:
        return Verdict(Level.SAFE, True, True, (), mode, first_version=True)
    changes = _changes(differences(history[-1], new), differences(new, history[-1]), compatible, noted, None, schema_type)
    changes += across(history, new) if across is not None else []
    if not changes:  # nothing either way: the same schema, or one written differently (comments, options, order)
        return Verdict(Level.SAFE, True, True, (), mode, identical=getattr(history[-1], "canonical", None) == getattr(new, "canonical", ""))
    if mode.transitive:
        for number, older in enumerate(history[:-1], start=1):
            changes += [c for c in _changes(differences(older, new), differences(new, older), compatible, noted, number, schema_type) if c.breaks]
    return verdict_of(changes, mode)


def _changes(forward: Sequence[Difference], reverse: Sequence[Difference], compatible: Collection[str], noted: Collection[str],
             version: int | None, schema_type: str) -> list[Change]:
    backward_broken = {d.key for d in forward if d.rule not in compatible}
    forward_broken = {d.key for d in reverse if d.rule not in compatible}
    changes = []
    for d in forward:
        breaks = frozenset(([Direction.BACKWARD] if d.key in backward_broken else []) + ([Direction.FORWARD] if d.key in forward_broken else []))
        changes.append(Change(d.rule, d.path, d.old, d.new, d.detail, breaks, version, schema_type))
    seen = {d.key for d in forward}
    for d in reverse:  # what fails only an old reader (or is noted), at an element the forward walk says nothing of
        if (d.rule not in compatible or d.rule in noted) and d.key not in seen:
            breaks = frozenset({Direction.FORWARD}) if d.rule not in compatible else frozenset()
            changes.append(Change(d.rule, d.path, d.new, d.old, d.detail, breaks, version, schema_type))
    return changes
