"""Where a walk's findings are written, for every format that keeps a pair's findings once, relative to the pair: at every
place the pair is met, or, where that would be more than ``PLACES`` findings (a type met at a million places), each
pair once, at its shallowest place (fewest pairs on the way, then the first path in text order), which is the same
place whichever walk writes it.

A walk's list holds findings and entries that stand for a pair's list; ``step(entry)`` tells them apart: None for a
finding, else the pair's key, the path it was met at (relative to the list) and the pair's own list.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

PLACES = 2_000  # findings written at every place; beyond, each pair at its shallowest place

Step = Callable[[Any], tuple[Hashable, str, Sequence[Any]] | None]
Join = Callable[[str, str], str]  # a path met at (relative to a list) placed under the place of that list
Placed = tuple[Any, str, Hashable | None]  # a finding, the place of the list that holds it, the pair whose list it is


def size(found: Sequence[Any], step: Step, sizes: dict[Hashable, int] | None = None) -> int:
    """How many findings ``found`` holds once every pair is written at every place (a pair's lists name only pairs whose
    lists were complete before it, so no place passes a pair twice)."""
    sizes = {} if sizes is None else sizes
    total = 0
    for entry in found:
        met = step(entry)
        if met is None:
            total += 1
            continue
        key, _, inner = met
        if key not in sizes:
            sizes[key] = size(inner, step, sizes)
        total += sizes[key]
    return total


def placed(found: Sequence[Any], root: str, step: Step, join: Join, crowded: bool) -> list[Placed]:
    """Every finding of ``found`` with the place of the list it is in: every place of each pair, or, ``crowded``, its
    shallowest only."""
    out: list[Placed] = []
    if not crowded:
        _everywhere(found, root, None, step, join, out)
        return out
    written: set[Hashable] = set()
    level: list[tuple[str, Sequence[Any], Hashable | None]] = [(root, found, None)]
    while level:
        shallowest: dict[Hashable, tuple[str, Sequence[Any]]] = {}
        for place, entries, owner in level:
            for entry in entries:
                met = step(entry)
                if met is None:
                    out.append((entry, place, owner))
                    continue
                key, path, inner = met
                at = join(path, place)
                if key not in written and (key not in shallowest or at < shallowest[key][0]):
                    shallowest[key] = (at, inner)
        written |= shallowest.keys()
        level = [(at, inner, key) for key, (at, inner) in sorted(shallowest.items(), key=lambda item: item[1][0])]
    return out


def _everywhere(found: Sequence[Any], place: str, owner: Hashable | None, step: Step, join: Join, out: list[Placed]) -> None:
    for entry in found:
        met = step(entry)
        if met is None:
            out.append((entry, place, owner))
        else:
            key, path, inner = met
            _everywhere(inner, join(path, place), key, step, join, out)
