"""What the walks of one JSON Schema comparison share: each pair of subschemas compared once, its findings kept
relative to the pair, and placed at every path it was met only when the answer is written.

A walk's findings are ``Difference``s (their paths start at ``HERE``, the pair being compared) and ``Met`` entries,
which name a pair met at a path. A pair met again while it is being compared (recursion) is a ``Met`` marked
``again``: it counts for the verdicts around it when an earlier round found the pair to fail, and is not written
(its differences are written where the pair began).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from bot.domain.compat.changes import ROOT_PATH, Difference

HERE = "\x00"  # where a pair's paths start, until they are placed
PLACES = 2_000  # pairs met at more places than this (over the whole answer) are written at their first place only

Key = tuple[bool, int, str, int, str]  # direction, the two subschemas (by identity) and their base URIs


@dataclass(slots=True)
class Met:
    """A pair of subschemas met at ``path``; ``again``: met while it was being compared (recursion)."""

    key: Key
    path: str
    again: bool = False


@dataclass(slots=True)
class Done:
    """A pair compared: the two subschemas (held, so their identities stay theirs) and what was found."""

    original: Any
    update: Any
    found: list[Difference | Met]
    fails: bool  # something in it is outside the registry's compatible changes
    shows: bool  # something in it is written


class Walks:
    """Each pair's result (``done``), the pairs being compared (``active``), the pairs an earlier round found to fail
    (``known``), and whether recursion was assumed alike (``assumed``: then another round may find more)."""

    def __init__(self, compatible: frozenset[str], known: dict[Key, Done]) -> None:
        self.compatible = compatible
        self.done: dict[Key, Done] = {}
        self.active: set[tuple[int, int]] = set()  # (original's subschema, update's subschema), whichever the direction
        self.known = known
        self.assumed = False

    def fails(self, found: Iterable[Difference | Met]) -> bool:
        """Whether any of ``found`` is outside the compatible changes (a pair met again fails when it is known to)."""
        for entry in found:
            if isinstance(entry, Met):
                if entry.again or self.done[entry.key].fails:
                    return True
            elif entry.rule not in self.compatible:
                return True
        return False

    def shows(self, found: Iterable[Difference | Met]) -> bool:
        """Whether any of ``found`` is a difference, or leads to one."""
        return any(entry.again or self.done[entry.key].shows if isinstance(entry, Met) else True for entry in found)

    def written(self, found: list[Difference | Met], root: str) -> list[Difference]:
        """``found`` as the answer: every difference at every path it was met by (a path passes a pair once), the
        root's paths starting at ``root``. Past ``PLACES`` differences, a pair already written is not written again.
        A difference's key is the element it is about, the same at each place and whichever way the walk went: the two
        subschemas compared, the path inside them and what it is about."""
        out: list[Difference] = []
        expanded: set[Key] = set()
        on_path: set[Key] = set()

        def write(entries: list[Difference | Met], prefix: str, pair: frozenset[int]) -> None:
            for entry in entries:
                if isinstance(entry, Met):
                    done = self.done.get(entry.key)
                    if entry.again or done is None or not done.shows or entry.key in on_path:
                        continue
                    if entry.key in expanded and len(out) >= PLACES:
                        continue
                    expanded.add(entry.key)
                    on_path.add(entry.key)
                    write(done.found, placed(entry.path, prefix), frozenset((id(done.original), id(done.update))))
                    on_path.discard(entry.key)
                else:
                    at = placed(entry.path, prefix)
                    key = (entry.key[0], pair, entry.path)
                    out.append(Difference(entry.rule, key, at or ROOT_PATH, entry.old, entry.new, entry.detail))

        write(found, root, frozenset())
        return out


def placed(path: str, prefix: str) -> str:
    """A path relative to a pair (it starts at ``HERE``) placed under ``prefix``, the path the pair was met at."""
    if path[1:2] == ".":
        return f"{prefix}{path[1:]}" if prefix else path[2:]
    return prefix + path[1:]
