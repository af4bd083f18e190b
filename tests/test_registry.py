"""The bot's registry of versions, and classification against a subject's stored history."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from bot.cli import main
from bot.domain.avro.parse import parse
from bot.services.registry import Registry
from bot.store import migrate
from bot.store.database import Database

V1 = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}]}
V2 = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}, {"name": "qty", "type": "int", "default": 0}]}
V3 = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}, {"name": "qty", "type": "int"}]}


async def test_versions_are_numbered_and_identical_ones_not_repeated(migrated_url: str) -> None:
    db = Database(migrated_url)
    try:
        registry = Registry(db)
        assert await registry.record("orders-value", parse(V1)) == 1
        assert await registry.record("orders-value", parse(V2)) == 2
        assert await registry.record("orders-value", parse(json.dumps(V2, indent=4))) == 2
        assert [v.number for v in await registry.history("orders-value")] == [1, 2]
        assert await registry.history("nobody") == []
        assert (await registry.subject("orders-value")) is not None
    finally:
        await db.close()


async def test_concurrent_writers_on_postgresql_get_distinct_numbers(postgres_url: str) -> None:
    migrate.upgrade(postgres_url)
    db = Database(postgres_url)
    try:
        registry = Registry(db)
        await registry.record("s", parse(V1))
        variants = [{**V1, "doc": f"variant {i}"} for i in range(6)]
        numbers = await asyncio.gather(*(registry.record("s", parse(v)) for v in variants))
        assert sorted(numbers) == list(range(2, 8))
    finally:
        await db.close()


def test_classify_against_the_stored_history_in_the_subjects_mode(migrated_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("DATABASE_URL", migrated_url)
    files = []
    for name, schema in (("v1", V1), ("v2", V2), ("v3", V3)):
        files.append(tmp_path / f"{name}.avsc")
        files[-1].write_text(json.dumps(schema))
    assert main(["subject", "import", "o" * 256, str(files[0])]) == 2  # PostgreSQL would refuse it: said before, nothing stored
    assert "a subject's name holds at most 255 characters (256 given); nothing was stored" in capsys.readouterr().err
    assert main(["subject", "import", "orders-value", str(files[0]), str(files[1])]) == 0
    assert "now at version 2 (1, 2)" in capsys.readouterr().out
    assert main(["classify", "--subject", "orders-value", str(files[2]), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["level"] == "compatible"
    assert main(["classify", "--subject", "orders-value", str(files[2]), "--mode", "BACKWARD_TRANSITIVE", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["level"] == "breaking"
    assert main(["classify", "--subject", "nobody", str(files[2])]) == 2
    assert "unknown subject 'nobody'" in capsys.readouterr().err
    assert main(["subject", "versions", "orders-value"]) == 0
    assert capsys.readouterr().out.count("version ") == 2
