"""Properties of the classifier over generated schemas, and agreement with real reads through fastavro."""

from __future__ import annotations

import io
import json
import random
from typing import Any

import fastavro
from fastavro.utils import generate_many
from hypothesis import HealthCheck, assume, given, settings

from bot.domain.avro.parse import SchemaError, parse
from bot.domain.compat.changes import Direction
from bot.domain.compat.classify import Mode, classify
from bot.domain.compat.resolve import Resolution
from tests.avro_strategies import related_pairs, schemas

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _parse_both(old: Any, new: Any) -> tuple[Any, Any]:
    try:
        return parse(old), parse(new)
    except SchemaError:
        assume(False)
        raise


def _shuffled(value: Any, rng: random.Random) -> Any:
    """The same schema with every object's keys in another order."""
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {k: _shuffled(v, rng) for k, v in items}
    if isinstance(value, list):
        return [_shuffled(v, rng) for v in value]
    return value


@SETTINGS
@given(schemas())
def test_a_schema_against_itself_is_safe_with_no_findings(schema: Any) -> None:
    for mode in Mode:
        verdict = classify([parse(schema)], parse(_shuffled(schema, random.Random(1))), mode)
        assert verdict.identical and verdict.findings == () and str(verdict.level) == "safe"
        assert verdict.backward and verdict.forward


@SETTINGS
@given(related_pairs())
def test_backward_of_a_b_is_forward_of_b_a(pair: tuple[Any, Any]) -> None:
    a, b = _parse_both(*pair)
    ab_backward = not Resolution(Direction.BACKWARD).check(a, b)
    ba_forward = not Resolution(Direction.FORWARD).check(b, a)
    assert ab_backward == ba_forward
    assert classify([a], b, Mode.NONE).backward == classify([b], a, Mode.NONE).forward


@SETTINGS
@given(related_pairs())
def test_findings_are_consistent_with_the_verdict(pair: tuple[Any, Any]) -> None:
    a, b = _parse_both(*pair)
    verdict = classify([a], b, Mode.FULL)
    assert verdict.level == max((f.level for f in verdict.findings), default=verdict.level)
    if not verdict.backward or not verdict.forward:
        assert str(verdict.level) == "breaking"
    if not verdict.identical:
        assert verdict.findings, "a change that is not identical must say what changed"
    for finding in verdict.findings:
        assert finding.path.split(".")[0].split("[")[0].split("{")[0] in (b.label, "(value)")


def _reads(writer: dict[str, Any], reader: dict[str, Any], count: int = 20) -> None:
    """Write generated records with ``writer``, read them back with ``reader``; raise on failure."""
    written, read_as = fastavro.parse_schema(writer), fastavro.parse_schema(reader)
    for record in generate_many(written, count):
        buffer = io.BytesIO()
        fastavro.schemaless_writer(buffer, written, record)
        buffer.seek(0)
        fastavro.schemaless_reader(buffer, written, read_as)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(related_pairs())
def test_verdict_agrees_with_an_empirical_read(pair: tuple[Any, Any]) -> None:
    """Whatever the classifier says resolves does resolve: fastavro reads the writer's records with the reader.

    One data-dependent exception the specification allows: bytes promote to string, and random bytes
    are not UTF-8; the classifier reports that drift as STRING_BYTES_SWAPPED, which must be present. One
    documented exception: a field added beside the field its alias names (a transition's expand step) is
    accepted as registries accept it, and a reader that rewrites the writer's schema by the alias literally
    (fastavro, Java's decoder) cannot fill both; FIELD_ADDED_WITH_ALIAS says so and must be present.
    """
    old_json, new_json = json.loads(json.dumps(pair[0])), json.loads(json.dumps(pair[1]))
    old, new = _parse_both(old_json, new_json)
    verdict = classify([old], new, Mode.NONE)
    for holds, writer, reader in ((verdict.backward, old_json, new_json), (verdict.forward, new_json, old_json)):
        if not holds:
            continue
        try:
            _reads(writer, reader)
        except UnicodeDecodeError:
            assert any(f.rule == "STRING_BYTES_SWAPPED" for f in verdict.findings)
        except fastavro.read.SchemaResolutionError:
            assert any(f.rule == "FIELD_ADDED_WITH_ALIAS" for f in verdict.findings)
