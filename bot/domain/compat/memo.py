"""Results memoised per pair of schema nodes, so shared named types cost once and recursion ends."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from bot.domain.avro.model import Node

T = TypeVar("T")


class PairMemo(Generic[T]):
    """One result list per (a, b) pair; a pair met again while it is being computed yields nothing new."""

    def __init__(self) -> None:
        self._done: dict[tuple[int, int], list[T]] = {}
        self._active: set[tuple[int, int]] = set()

    def get(self, a: Node, b: Node, compute: Callable[[], list[T]]) -> list[T]:
        """The memoised result for (a, b), computing it once."""
        key = (id(a), id(b))
        done = self._done.get(key)
        if done is not None:
            return done
        if key in self._active:
            return []
        self._active.add(key)
        try:
            result = compute()
        finally:
            self._active.discard(key)
        self._done[key] = result
        return result
