"""Avro named types used at many places: a change is reported at every place it is met, and, where that would be more
than ``PLACES`` findings, at its shallowest place, the same for every walk, so its directions agree there."""

from __future__ import annotations

from typing import Any

from bot.domain.avro.parse import parse
from bot.domain.compat.changes import Direction
from bot.domain.compat.classify import Mode, classify
from bot.domain.compat.memo import PLACES


def ladder(levels: int, bottom: Any, *, swapped_at: int | None = None) -> dict[str, Any]:
    """Records L0..L{levels}: each level's fields ``a`` and ``b`` are both the next level's record (2^levels places for the
    bottom one, whose field ``v`` is of type ``bottom``); at level ``swapped_at`` the two fields are written b first."""
    record: dict[str, Any] = {"type": "record", "name": f"L{levels}", "fields": [{"name": "v", "type": bottom}]}
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
