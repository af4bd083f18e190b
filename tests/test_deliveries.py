"""Claims of Slack deliveries in the database: each key once, within a batch and across batches."""

from __future__ import annotations

import asyncio

from bot.services.deliveries import Deliveries
from bot.store.database import Database


async def test_a_key_is_claimed_once_in_a_batch_and_after_it(migrated_url: str) -> None:
    db = Database(migrated_url)
    try:
        deliveries = Deliveries(db)
        keys = [f"trigger:{n}" for n in range(30)]
        first = await asyncio.gather(*(deliveries.claim(k) for k in [*keys, *keys[:5]]))  # one batch, five keys twice
        assert first == [True] * 30 + [False] * 5
        again = await asyncio.gather(*(deliveries.claim(k) for k in [*keys[:3], "trigger:new"]))
        assert again == [False, False, False, True]
        assert await deliveries.claim("trigger:new") is False
    finally:
        await db.close()

