"""Avro named types used at many places: a change is reported at every place it is met, and, where that would be more
than ``PLACES`` findings, at its shallowest place, the same for every walk, so its directions agree there."""

from __future__ import annotations

from typing import Any

import aiohttp

from bot.domain.avro.parse import parse, parse_references
from bot.domain.compat.changes import Direction
from bot.domain.compat.classify import Mode, classify
from bot.domain.compat.memo import PLACES
from bot.domain.lineage.catalog import read_catalog
from bot.emulator.render import as_text
from tests.conftest import API_TOKEN, SlackHarness
from tests.test_proposals_slack import ALICE, BOB, card_message


def ladder(levels: int, bottom: Any, *, swapped_at: int | None = None, **extra: Any) -> dict[str, Any]:
    """Records L0..L{levels}: each level's fields ``a`` and ``b`` are both the next level's record (2^levels places for the
    bottom one, whose field ``v`` is of type ``bottom``, with ``extra`` attributes); at level ``swapped_at`` the two fields
    are written b first."""
    record: dict[str, Any] = {"type": "record", "name": f"L{levels}", "fields": [{"name": "v", "type": bottom, **extra}]}
    for level in range(levels - 1, -1, -1):
        fields = [{"name": "a", "type": record}, {"name": "b", "type": f"L{level + 1}"}]
        if level == swapped_at:
            fields = [{"name": "b", "type": record}, {"name": "a", "type": f"L{level + 1}"}]
        record = {"type": "record", "name": f"L{level}", "fields": fields}
    return record


def test_a_type_used_at_a_few_places_is_reported_at_each() -> None:
    verdict = classify([parse(ladder(3, "int"))], parse(ladder(3, "string")), Mode.FULL)
    places = {f.path for f in verdict.findings if f.rule == "TYPE_CHANGED"}
    assert len(places) == 2 ** 3 and "L0.a.b.a.v" in places and "L0.b.b.b.v" in places
    assert "CHANGES_LISTED_ONCE" not in {f.rule for f in verdict.findings}
    assert all(f.breaks == {Direction.BACKWARD, Direction.FORWARD} for f in verdict.findings)


def test_a_type_used_at_a_million_places_is_reported_once_at_its_shallowest_place() -> None:
    assert 2 ** 20 > PLACES
    verdict = classify([parse(ladder(20, "int"))], parse(ladder(20, "string")), Mode.FULL)
    finding, said = verdict.findings  # the worst first
    assert (finding.rule, finding.path) == ("TYPE_CHANGED", "L0" + ".a" * 20 + ".v")
    assert finding.breaks == {Direction.BACKWARD, Direction.FORWARD}  # both directions wrote it at the same place
    assert (said.rule, said.path) == ("CHANGES_LISTED_ONCE", "L0") and "listed once" in said.message  # and the report says so


def test_the_shallowest_place_is_the_same_for_every_walk_when_the_versions_write_fields_in_another_order() -> None:
    old, new = ladder(20, "int", swapped_at=None), ladder(20, "long", swapped_at=5)  # new writes b before a at level 5
    verdict = classify([parse(old)], parse(new), Mode.FULL)
    promoted = [f for f in verdict.findings if f.rule == "TYPE_PROMOTED"]
    assert len(promoted) == 1 and promoted[0].path == "L0" + ".a" * 20 + ".v"
    assert promoted[0].breaks == {Direction.FORWARD}  # old readers cannot read a long: found by the forward walk, at the same place
    assert {f.rule for f in verdict.findings} == {"TYPE_PROMOTED", "FIELDS_REORDERED", "CHANGES_LISTED_ONCE"}


async def test_a_proposal_that_lists_a_change_once_asks_every_reader_of_the_topic(slack: SlackHarness) -> None:
    """Through the API, the database and the emulated Slack: a default changed at the bottom of a ladder is met at 4,096
    places and listed at one (a.a...v). The job that reads another place (b.b...v) is still asked, as every reader of the
    topic is, and the card says why."""
    groups = {g["handle"]: g["id"] for g in slack.ws.usergroups.values()}
    deep = "ladder-value." + "b." * 12 + "v"
    catalog: dict[str, Any] = {
        "teams": {"orders-team": {"usergroup": groups["orders-team"], "members": [ALICE], "oncall": [ALICE], "self_approval": True},
                  "analytics-team": {"usergroup": groups["analytics-team"], "members": [BOB], "oncall": [BOB]}},
        "subjects": {"ladder-value": {"owner": "orders-team", "channel": "#orders-pipeline"}},
        "datasets": [{"name": "dwd_deep", "namespace": "iceberg://lake", "owner": "analytics-team", "fields": ["v"]}],
        "jobs": [{"name": "deep", "owner": "analytics-team", "inputs": ["ladder-value"], "outputs": ["dwd_deep"], "mappings": {"dwd_deep.v": [deep]}}]}
    parsed, problems = read_catalog(catalog, lambda _: None)  # type: ignore[arg-type, return-value]
    assert problems == []
    await slack.bot.lineage.load_catalog(parsed)
    await slack.bot.registry.record("ladder-value", parse(ladder(12, {"type": "int"}, default=0)))

    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {API_TOKEN}"}) as http, \
            http.post(f"{slack.bot.url}/api/v1/proposals",
                      json={"subject": "ladder-value", "schema": ladder(12, {"type": "int"}, default=1), "proposer": ALICE}) as response:
        status, created = response.status, await response.json()
    assert status == 201, created
    assert [(c["rule"], c["path"]) for c in created["changes"]] == [("DEFAULT_CHANGED", "L0" + ".a" * 12 + ".v"), ("CHANGES_LISTED_ONCE", "L0")]
    assert created["level"] == "compatible" and created["teams"] == ["analytics-team"] and created["state"] == "pending", created
    card = await card_message(slack)
    shown = as_text(card.text, card.blocks)
    assert "listed once, at its shallowest place" in shown and "analytics-team" in shown, shown


def test_a_ladder_from_a_referenced_schema_is_listed_once_through_the_referencing_field() -> None:
    """The ladder is another subject's type (a schema reference), changed between the two sides."""
    top = {"type": "record", "name": "Top", "fields": [{"name": "start", "type": "L0"}]}
    old_refs, new_refs = parse_references([ladder(14, "int")]), parse_references([ladder(14, "string")])
    verdict = classify([parse(top, refs=old_refs)], parse(top, refs=new_refs), Mode.FULL)
    assert [(f.rule, f.path) for f in verdict.findings] == [("TYPE_CHANGED", "Top.start<L0>" + ".a" * 14 + ".v"), ("CHANGES_LISTED_ONCE", "Top")]
    assert verdict.findings[0].breaks == {Direction.BACKWARD, Direction.FORWARD}
