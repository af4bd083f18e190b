"""Parsing a schema alongside another (``parse(..., like=...)``): equal fields are taken over, and the result
is always what a parse on its own gives, down to the errors."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings

from bot.domain.avro.normal import normal_form
from bot.domain.avro.parse import SchemaError, parse
from bot.domain.compat.classify import Mode, classify
from bot.domain.compat.report import as_json
from tests.avro_strategies import related_pairs


def record(fields: list[Any], name: str = "R", **extra: Any) -> dict[str, Any]:
    return {"type": "record", "name": name, "fields": fields, **extra}


def alongside(old: Any, new: Any) -> tuple[Any, Any]:
    first = parse(old, keep_parts=True)
    return first, parse(new, like=first)


def test_equal_fields_are_shared_and_changed_ones_are_not() -> None:
    old = record([{"name": "a", "type": "int"}, {"name": "b", "type": {"type": "array", "items": "long"}},
                  {"name": "c", "type": "string"}])
    new = copy.deepcopy(old)
    new["fields"][2]["doc"] = "changed"
    first, second = alongside(old, new)
    shared = [a is b for a, b in zip(first.root.fields, second.root.fields, strict=True)]
    assert shared == [True, True, False]
    assert normal_form(second) == normal_form(parse(new))


@pytest.mark.parametrize(("old_field", "new_field"), [
    ({"name": "n", "type": "int", "default": 1}, {"name": "n", "type": "int", "default": 1.0}),
    ({"name": "n", "type": "int", "default": 1}, {"name": "n", "type": "int", "default": True}),
    ({"name": "n", "type": ["int", "boolean"], "default": 0}, {"name": "n", "type": ["int", "boolean"], "default": False}),
    ({"name": "n", "type": {"type": "fixed", "name": "F", "size": 4}}, {"name": "n", "type": {"type": "fixed", "name": "F", "size": 4.0}}),
])
def test_json_equality_that_python_allows_is_not_sameness(old_field: Any, new_field: Any) -> None:
    """1 == 1.0 == True in Python: a field holding numbers or booleans is parsed again, so its errors and
    its values stand."""
    assert json.dumps(old_field) != json.dumps(new_field)
    first = parse(record([old_field]), keep_parts=True)
    try:
        alone = json.dumps(normal_form(parse(record([new_field]))))
    except SchemaError as err:
        alone = str(err)
    try:
        taken = json.dumps(normal_form(parse(record([new_field]), like=first)))
    except SchemaError as err:
        taken = str(err)
    assert taken == alone


def test_a_decimal_with_a_float_precision_is_not_taken_for_the_integer_one() -> None:
    valid = {"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 2}}
    ignored = {"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": 4.0, "scale": 2}}
    first, second = alongside(record([valid]), record([ignored]))
    assert first.root.fields[0].type.logical == "decimal"
    assert second.root.fields[0].type.logical is None  # an invalid logical type is ignored, as on its own


def test_a_field_defining_a_type_already_defined_earlier_is_refused_as_on_its_own() -> None:
    inner = {"name": "address", "type": record([{"name": "street", "type": "string"}], name="Address")}
    old = record([inner])
    new = record([{"name": "home", "type": record([{"name": "zip", "type": "string"}], name="Address")}, inner])
    first = parse(old, keep_parts=True)
    with pytest.raises(SchemaError, match="defined twice"):
        parse(new, like=first)


def test_a_lookup_that_would_now_find_another_type_is_parsed_again() -> None:
    """``Foo`` inside namespace ``a`` means ``a.Foo`` when that exists, else ``Foo``: a field whose lookups
    would find something else here is not taken over."""
    foo = record([{"name": "v", "type": "int"}], name="Foo", namespace="")
    own = {"name": "f", "type": record([{"name": "x", "type": foo}, {"name": "y", "type": "Foo"}], name="Holder")}
    old = record([own], name="a.R")
    new = record([{"name": "e", "type": {"type": "enum", "name": "a.Foo", "symbols": ["A"]}}, own], name="a.R")
    first, second = alongside(old, new)
    alone = parse(new)
    assert first.root.fields[0].type.by_name["y"].type.type == "record"
    assert second.root.fields[1].type.by_name["y"].type.type == alone.root.fields[1].type.by_name["y"].type.type == "enum"
    assert normal_form(second) == normal_form(alone)


def test_a_field_that_uses_an_outer_type_is_parsed_again() -> None:
    """A field that names a type defined outside it is not taken: the outer type may differ here."""
    old = record([{"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A"]}},
                  {"name": "again", "type": "Kind"}])
    new = record([{"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}},
                  {"name": "again", "type": "Kind"}])
    first, second = alongside(old, new)
    assert second.root.fields[1].type is second.root.fields[0].type
    assert second.root.fields[1].type.symbols == ["A", "B"]


def test_a_chain_of_versions_shares_nested_types_and_still_checks_names() -> None:
    nested = {"name": "address", "type": record([{"name": "street", "type": "string"}], name="Address")}
    v1 = record([nested, {"name": "n", "type": "int"}])
    v2 = record([nested, {"name": "n", "type": "long"}])
    v3 = record([nested, {"name": "n", "type": "long"}, {"name": "again", "type": "Address"}])
    one = parse(v1, keep_parts=True)
    two = parse(v2, like=one, keep_parts=True)
    three = parse(v3, like=two, keep_parts=True)
    assert one.root.fields[0] is two.root.fields[0] is three.root.fields[0]
    assert three.names["Address"] is three.root.fields[2].type
    assert normal_form(three) == normal_form(parse(v3))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(related_pairs())
def test_parsed_alongside_or_alone_the_verdict_is_the_same(pair: tuple[Any, Any]) -> None:
    old, new = pair
    try:
        alone_old, alone_new = parse(old), parse(new)
    except SchemaError:
        assume(False)
        raise
    first, second = alongside(old, new)
    assert normal_form(second) == normal_form(alone_new)
    for mode in (Mode.FULL, Mode.NONE):
        assert as_json(classify([first], second, mode)) == as_json(classify([alone_old], alone_new, mode))


def test_small_types_are_parsed_once_per_schema_and_named_references_are_not_mistaken_for_them() -> None:
    schema = record([{"name": "a", "type": {"type": "array", "items": "long"}}, {"name": "b", "type": {"type": "array", "items": "long"}},
                     {"name": "u", "type": []}, {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["X"]}},
                     {"name": "f", "type": "E"}])
    parsed = parse(schema)
    fields = parsed.root.by_name
    assert fields["a"].type is fields["b"].type
    assert fields["f"].type is fields["e"].type and fields["f"].type.type == "enum"
