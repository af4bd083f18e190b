"""The local playground that `make run` starts: the bot and the emulator in one process."""

from __future__ import annotations

from pathlib import Path

import aiohttp

from bot.config import Config
from bot.playground import DEMO_USER, PEOPLE, Playground, who


async def test_commands_from_the_prompt_and_over_http(tmp_path: Path) -> None:
    playground = Playground(Config.from_env({"DATABASE_URL": f"sqlite:///{tmp_path / 'playground.db'}"}, require_slack=False))
    await playground.start(0, 0)
    try:
        [help_text] = await playground.send("/schema help")
        assert "`/schema propose [subject]`" in help_text
        assert "Type a slash command" in (await playground.send("hello"))[0]
        assert "There are no subjects yet" in (await playground.send("/schema propose", PEOPLE["bob"]))[0]
        async with aiohttp.ClientSession() as http:
            async with http.post(f"{playground.emulator.base_url}/_emulator/command", json={"text": "/schema list", "user": "bob"}) as response:
                assert (await response.json())["replies"] == ["Recent proposals: none."]
    finally:
        await playground.stop()


def test_acting_as_someone_else() -> None:
    assert who("@bob /schema list waiting") == (PEOPLE["bob"], "/schema list waiting")
    assert who("/schema help") == (DEMO_USER, "/schema help")
    assert who("@nobody /schema help") == (DEMO_USER, "@nobody /schema help")
