"""Acknowledgements first: the work after an ack waits while Slack's requests are being answered or keep arriving,
then goes in the order it came, one a turn of the event loop (a request arriving meanwhile stops the rest); it never
waits longer than WORK_WAIT; with nothing being answered and no request just arrived it does not wait at all."""

from __future__ import annotations

import asyncio

import pytest

from bot.slack import inflight as inflight_module
from bot.slack.inflight import QUIET, Inflight


async def turns(count: int) -> None:
    for _ in range(count):
        await asyncio.sleep(0)


async def test_work_waits_while_a_request_is_answered_then_goes_in_order_one_a_turn() -> None:
    inflight = Inflight()
    went: list[int] = []

    async def work(number: int) -> None:
        await inflight.acks_first()
        went.append(number)

    with inflight.answering():
        tasks = [asyncio.create_task(work(n)) for n in range(3)]
        await asyncio.sleep(QUIET * 5)
        assert went == []  # the request is still being answered
    await asyncio.sleep(QUIET * 2)
    assert went == [0, 1, 2]  # in the order they came, once no request arrived for QUIET
    await asyncio.gather(*tasks)


async def test_a_request_arriving_between_two_pieces_of_work_stops_the_rest() -> None:
    inflight = Inflight()
    went: list[int] = []
    answered = asyncio.Event()

    async def work(number: int) -> None:
        await inflight.acks_first()
        went.append(number)
        if number == 0:
            with inflight.answering():  # a request arrives as the first piece goes
                await answered.wait()

    with inflight.answering():
        tasks = [asyncio.create_task(work(n)) for n in range(3)]
        await turns(3)
    while not went:
        await asyncio.sleep(QUIET / 4)
    await asyncio.sleep(QUIET * 5)
    assert went == [0]  # the others wait for the request
    answered.set()
    await asyncio.gather(*tasks)
    assert went == [0, 1, 2]


async def test_work_never_waits_longer_than_work_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inflight_module, "WORK_WAIT", 0.05)
    inflight = Inflight()
    with inflight.answering():  # a request that is never done answering
        await asyncio.wait_for(inflight.acks_first(), 5)  # gone after WORK_WAIT, not held
    assert not inflight._waiting or all(turn.done() for turn in inflight._waiting)


async def test_with_nothing_answered_work_goes_at_once() -> None:
    inflight = Inflight()
    task = asyncio.create_task(inflight.acks_first())
    await turns(1)
    assert task.done()
