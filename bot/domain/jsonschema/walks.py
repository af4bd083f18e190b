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
from typing import Any, cast

from bot.domain.compat import places
from bot.domain.compat.changes import ROOT_PATH, Difference
from bot.domain.compat.places import PLACES

HERE = "\x00"  # where a pair's paths start, until they are placed

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
        """``found`` as the answer, the root's paths starting at ``root``, each pair written where ``places`` says (when
        only at its shallowest place, ``CHANGES_LISTED_ONCE`` says so). A difference's key is the element it is about,
        the same at each place and whichever way the walk went: the two subschemas compared, the path inside them and
        what it is about."""
        crowded = places.size(found, self._step) > PLACES
        out = [Difference("CHANGES_LISTED_ONCE", ("listed", frozenset(), HERE), root or ROOT_PATH, detail=f"{PLACES:,}")] if crowded else []
        for entry, place, owner in places.placed(found, root, self._step, placed, crowded):
            at = placed(entry.path, place)
            done = self.done.get(cast(Key, owner)) if owner is not None else None
            pair = frozenset((id(done.original), id(done.update))) if done is not None else frozenset()
            out.append(Difference(entry.rule, (entry.key[0], pair, entry.path), at or ROOT_PATH, entry.old, entry.new, entry.detail))
        return out

    def _step(self, entry: Difference | Met) -> tuple[Key, str, list[Difference | Met]] | None:
        """For ``places``: a pair met and its differences (none where recursion met it again: they are written where it
        began; none to walk when it holds none); None for a difference."""
        if not isinstance(entry, Met):
            return None
        done = None if entry.again else self.done[entry.key]
        return entry.key, entry.path, done.found if done is not None and done.shows else []


def placed(path: str, prefix: str) -> str:
    """A path relative to a pair (it starts at ``HERE``) placed under ``prefix``, the path the pair was met at."""
    if path[1:2] == ".":
        return f"{prefix}{path[1:]}" if prefix else path[2:]
    return prefix + path[1:]
