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
        assert "`/schema propose [subject] [--transition]`" in help_text
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


async def test_the_demo_calendar_is_booked_once_on_a_catalog(tmp_path: Path) -> None:
    from bot.cli.lineage import read_catalog_file
    from bot.services.lineage import LineageService
    from bot.store import migrate
    from bot.store.database import Database

    url = f"sqlite:///{tmp_path / 'playground.db'}"
    migrate.upgrade(url)
    db = Database(url)
    try:
        catalog, problems = read_catalog_file(str(Path(__file__).resolve().parents[1] / "examples" / "catalog.yaml"))
        assert not problems
        await LineageService(db).load_catalog(catalog)
    finally:
        await db.close()
    for _ in range(2):  # a restart keeps what is there
        playground = Playground(Config.from_env({"DATABASE_URL": url}, require_slack=False))
        await playground.start(0, 0)
        try:
            assert playground.bot is not None
            freezes = await playground.bot.calendar.freezes()
            assert [f.name for f in freezes] == ["quarter-end close"]
            agenda = " ".join(await playground.send("/calendar week"))
            assert "Flink 1.20 upgrade of enrich-orders" in agenda or "quarter-end close" in agenda
            status = " ".join(await playground.send("/sli status enrich-orders"))  # the demo pipeline reports healthy samples
            assert "*Commit success rate* — 100%" in status and "*End-to-end freshness* — 45 s" in status
        finally:
            await playground.stop()


def test_the_kafka_demo_leaves_a_lagging_group_and_dead_letters_once(kafka_bootstrap: str) -> None:
    import uuid

    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    from bot.playground import kafka_demo

    topic, dlq, group = f"orders-{uuid.uuid4().hex[:8]}", f"orders.dlq-{uuid.uuid4().hex[:8]}", f"enrich-{uuid.uuid4().hex[:8]}"
    seeded = kafka_demo.seed(kafka_bootstrap, topic=topic, dlq=dlq, group=group)
    assert (seeded.events, seeded.lag, seeded.dead_letters) == (3_000, 600, 300)
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    asked = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(3)])
    offsets = admin.list_consumer_group_offsets([asked])[group].result(timeout=10).topic_partitions
    assert sum(tp.offset for tp in offsets) == 3_000 - 600
    assert kafka_demo.seed(kafka_bootstrap, topic=topic, dlq=dlq, group=group).events == 0  # a second start writes nothing
