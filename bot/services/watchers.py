"""Changes others follow: a service tells each watcher, in the transaction that makes a change, so that what they owe
because of it (a Home tab to publish again) is committed with it or not at all."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from sqlmodel.ext.asyncio.session import AsyncSession

Watcher = Callable[[AsyncSession], Awaitable[None]]


class Watchers:
    """The watchers of one service's changes."""

    def __init__(self) -> None:
        self._watchers: list[Watcher] = []

    def add(self, watcher: Watcher) -> None:
        """Tell ``watcher`` of every change from now on."""
        self._watchers.append(watcher)

    async def changed(self, session: AsyncSession) -> None:
        """A change is being made in ``session``'s transaction."""
        for watcher in self._watchers:
            await watcher(session)
