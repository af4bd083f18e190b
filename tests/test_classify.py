"""Hand-written corners of schema resolution, modes, identity, and invalid schemas."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.domain.avro.parse import SchemaError, parse, parse_value
from bot.domain.compat.classify import Mode, classify

LINKED = {"type": "record", "name": "LongList", "aliases": ["LinkedLongs"], "fields": [
    {"name": "value", "type": "long"}, {"name": "next", "type": ["null", "LongList"]}]}


def verdict(old: Any, new: Any, mode: str = "FULL", history: list[Any] | None = None) -> Any:
    versions = [parse(s) for s in (history or [])] + [parse(old)]
    return classify(versions, parse(new), Mode(mode))


def found(v: Any) -> set[tuple[str, str]]:
    return {(f.rule, f.path) for f in v.findings}


def record(*fields: dict[str, Any], name: str = "Order", **extra: Any) -> dict[str, Any]:
    return {"type": "record", "name": name, **extra, "fields": list(fields)}


def test_recursive_schema_does_not_loop() -> None:
    grown = json.loads(json.dumps(LINKED))
    grown["fields"].insert(1, {"name": "label", "type": "string", "default": ""})
    v = verdict(LINKED, grown)
    assert str(v.level) == "safe" and found(v) == {("FIELD_ADDED_WITH_DEFAULT", "LongList.label")}
    broken = json.loads(json.dumps(LINKED))
    broken["fields"][0]["type"] = "int"
    assert ("TYPE_NARROWED", "LongList.value") in found(verdict(LINKED, broken))


def test_mutual_recursion() -> None:
    tree = record({"name": "children", "type": {"type": "array", "items": {"type": "record", "name": "Node", "fields": [
        {"name": "value", "type": "int"}, {"name": "parent", "type": ["null", "Node"]}]}}}, name="Tree")
    wider = json.loads(json.dumps(tree).replace('"value", "type": "int"', '"value", "type": "long"'))
    assert found(verdict(tree, wider, "BACKWARD")) == {("TYPE_PROMOTED", "Tree.children[].value")}


def test_union_and_non_union_both_ways() -> None:
    plain, optional = record({"name": "n", "type": "int"}), record({"name": "n", "type": ["null", "int"], "default": None})
    made_optional = verdict(plain, optional)
    assert made_optional.backward and not made_optional.forward
    assert ("UNION_BRANCH_ADDED", "Order.n") in found(made_optional)
    made_required = verdict(optional, plain)
    assert not made_required.backward and made_required.forward
    assert ("UNION_BRANCH_REMOVED", "Order.n") in found(made_required)


def test_promotion_inside_a_union_is_named_as_such() -> None:
    v = verdict(record({"name": "n", "type": ["null", "int"]}), record({"name": "n", "type": ["null", "long"]}), "BACKWARD")
    assert found(v) == {("TYPE_PROMOTED", "Order.n")} and str(v.level) == "compatible"


def test_union_branch_swapped_for_unrelated_type() -> None:
    v = verdict(record({"name": "n", "type": ["null", "int"]}), record({"name": "n", "type": ["null", "string"]}))
    assert found(v) == {("UNION_BRANCH_REMOVED", "Order.n"), ("UNION_BRANCH_ADDED", "Order.n")}


def test_enum_default_lets_old_readers_survive_new_symbols() -> None:
    old = record({"name": "s", "type": {"type": "enum", "name": "S", "symbols": ["A", "B"], "default": "A"}})
    new = record({"name": "s", "type": {"type": "enum", "name": "S", "symbols": ["A", "B", "C"], "default": "A"}})
    v = verdict(old, new)
    assert v.backward and v.forward and str(v.level) == "compatible"
    assert "read them as A" in v.findings[0].message


def test_named_type_aliases() -> None:
    old = record({"name": "a", "type": "int"}, name="Order")
    renamed = record({"name": "a", "type": "int"}, name="Purchase", aliases=["Order"])
    v = verdict(old, renamed, "BACKWARD")
    assert v.backward and not v.forward and found(v) == {("TYPE_RENAMED", "Purchase")}
    assert str(verdict(old, renamed, "FULL").level) == "breaking"
    v = verdict(old, record({"name": "a", "type": "int"}, name="Purchase"))
    assert not v.backward and not v.forward and found(v) == {("NAME_CHANGED", "Purchase")}


def test_namespaced_names_resolve_by_unqualified_name() -> None:
    old = record({"name": "h", "type": {"type": "fixed", "name": "Hash", "size": 4}}, namespace="a")
    new = record({"name": "h", "type": {"type": "fixed", "name": "Hash", "size": 4}}, namespace="b")
    v = verdict(old, new)
    assert v.backward and v.forward
    assert found(v) == {("NAMESPACE_CHANGED", "Order"), ("NAMESPACE_CHANGED", "Order.h")}


def test_references_by_short_name_within_a_namespace() -> None:
    schema = record({"name": "a", "type": {"type": "enum", "name": "S", "symbols": ["X"]}}, {"name": "b", "type": "S"}, namespace="shop")
    parsed = parse(schema)
    assert parsed.root.fields[1].type is parsed.names["shop.S"]
    grown = json.loads(json.dumps(schema).replace('["X"]', '["X", "Y"]'))
    assert found(verdict(schema, grown)) == {("ENUM_SYMBOL_ADDED", "Order.a"), ("ENUM_SYMBOL_ADDED", "Order.b")}


def test_nested_paths() -> None:
    old = record({"name": "items", "type": {"type": "array", "items": record({"name": "price", "type": "float"}, name="Item")}},
                 {"name": "attrs", "type": {"type": "map", "values": "int"}})
    new = record({"name": "items", "type": {"type": "array", "items": record({"name": "price", "type": "double"}, name="Item")}},
                 {"name": "attrs", "type": {"type": "map", "values": "string"}})
    assert found(verdict(old, new)) == {("TYPE_PROMOTED", "Order.items[].price"), ("TYPE_CHANGED", "Order.attrs{}")}


def test_shared_named_type_reported_at_each_use() -> None:
    address = {"type": "record", "name": "Address", "fields": [{"name": "zip", "type": "int"}]}
    old = record({"name": "billing", "type": address}, {"name": "shipping", "type": "Address"})
    new = json.loads(json.dumps(old).replace('"zip", "type": "int"', '"zip", "type": "string"'))
    assert found(verdict(old, new)) == {("TYPE_CHANGED", "Order.billing.zip"), ("TYPE_CHANGED", "Order.shipping.zip")}


def test_modes_decide_the_level_of_one_directional_changes() -> None:
    old, new = record({"name": "a", "type": "int"}), record({"name": "a", "type": "int"}, {"name": "b", "type": "int"})
    assert {m: str(verdict(old, new, m).level) for m in ("FULL", "BACKWARD", "FORWARD", "NONE")} == {
        "FULL": "breaking", "BACKWARD": "breaking", "FORWARD": "compatible", "NONE": "compatible"}
    forward_message = verdict(old, new, "FORWARD").findings[0].message
    assert "FORWARD allows this: upgrade producers first" in forward_message


def test_transitive_modes_check_every_version() -> None:
    v1 = record({"name": "a", "type": "int"})
    v2 = record({"name": "a", "type": "int"}, {"name": "b", "type": "int", "default": 0})
    new = record({"name": "a", "type": "int"}, {"name": "b", "type": "int"})
    assert str(verdict(v2, new, "BACKWARD", history=[v1]).level) == "compatible"
    transitive = verdict(v2, new, "BACKWARD_TRANSITIVE", history=[v1])
    assert str(transitive.level) == "breaking" and not transitive.backward
    [added] = [f for f in transitive.findings if f.rule == "FIELD_ADDED_WITHOUT_DEFAULT"]
    assert "(version 1)" in added.message


def test_identical_means_everything_identical_not_the_parsing_canonical_form() -> None:
    schema = record({"name": "a", "type": "int", "default": 1, "doc": "count"})
    reordered = json.loads(json.dumps({"fields": schema["fields"], "name": "Order", "type": "record"}))
    assert verdict(schema, reordered).identical
    assert found(verdict(schema, record({"name": "a", "type": "int", "default": 2, "doc": "count"}))) == {("DEFAULT_CHANGED", "Order.a")}
    assert found(verdict(schema, record({"name": "a", "type": "int", "default": 1, "doc": "how many"}))) == {("DOC_CHANGED", "Order.a")}
    logical = record({"name": "a", "type": {"type": "int", "logicalType": "date"}, "default": 1, "doc": "count"})
    assert found(verdict(schema, logical)) == {("LOGICAL_TYPE_ADDED", "Order.a")}


def test_first_version_is_safe() -> None:
    v = classify([], parse(LINKED), Mode.FULL)
    assert v.first_version and str(v.level) == "safe" and v.findings == ()


def test_invalid_logical_types_are_ignored() -> None:
    bad = {"type": "bytes", "logicalType": "decimal", "precision": 2, "scale": 5}
    assert parse(bad).root.logical is None
    assert parse({"type": "string", "logicalType": "timestamp-millis"}).root.logical is None
    assert parse({"type": "fixed", "name": "F", "size": 2, "logicalType": "decimal", "precision": 9}).root.logical is None
    assert parse({"type": "fixed", "name": "F", "size": 4, "logicalType": "decimal", "precision": 9}).root.logical == "decimal"


@pytest.mark.parametrize(("schema", "place", "reason"), [
    ("", "", "empty schema"),
    ("{\"type\": ", "line 1 column 10", "malformed JSON"),
    ("42", "", "not a number"),
    ({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}, {"name": "a", "type": "long"}]}, "R.a", "duplicate field name"),
    ({"type": "record", "name": "R", "fields": [{"name": "a", "type": "Missing"}]}, "R.a", "unknown type \"Missing\""),
    ({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int", "default": "one"}]}, "R.a", "default \"one\" is not valid for int"),
    ({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int", "default": 2**40}]}, "R.a", "out of range for int"),
    ({"type": "record", "name": "R", "fields": [{"name": "a", "type": ["null", "int"], "default": "x"}]}, "R.a", "matches no branch"),
    ({"type": "record", "name": "9R", "fields": []}, "", "invalid name \"9R\""),
    ({"type": "record", "name": "R", "fields": [{"name": "my-field", "type": "int"}]}, "R.fields[0]", "invalid field name"),
    ({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}, {"name": "b\nc", "type": "int"}]}, "R.fields[1]", "invalid field name"),
    ({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}, {"name": "b\n", "type": "int"}]}, "R.fields[1]", "invalid field name"),
    ({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}, ["b", "int"]]}, "R.fields[1]", "a field is an object"),
    ({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}, {"name": 7, "type": "int"}]}, "R.fields[1]", "invalid field name 7"),
    ({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}, {"type": "int"}]}, "R.fields[1]", "invalid field name null"),
    ({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}, {"name": "", "type": "int"}]}, "R.fields[1]", "invalid field name"),
    ({"type": "record", "name": "R", "fields": [{"name": "x1", "type": "int"}, {"name": "1x", "type": "int"}, {"name": "x1", "type": "int"}]},
     "R.fields[1]", "invalid field name \"1x\""),
    ({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}, {"name": "b", "type": "int"}, {"name": "a", "type": "int"}]},
     "R.a", "duplicate field name"),
    ({"type": "enum", "name": "E", "symbols": ["ok", "not ok"]}, "E", "invalid enum symbol"),
    ({"type": "enum", "name": "E", "symbols": ["A", "A"]}, "E", "duplicate enum symbol"),
    ({"type": "enum", "name": "E", "symbols": ["A"], "default": "B"}, "E", "enum default"),
    (["null", ["int", "string"]], "", "unions may not contain unions"),
    (["int", "int"], "", "two branches of type int"),
    ({"type": "fixed", "name": "F", "size": -1}, "F", "non-negative integer"),
    ({"type": "record", "name": "R", "fields": [{"name": "a", "type": {"type": "fixed", "name": "F", "size": 1}},
                                                 {"name": "b", "type": {"type": "fixed", "name": "F", "size": 2}}]}, "R.b", "defined twice"),
    ({"type": "record", "name": "int", "fields": []}, "", "cannot be redefined"),
    ({"type": "array"}, "", "needs \"items\""),
    ({"type": "record", "name": "R"}, "R", "needs \"fields\""),
    ({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int", "order": "sideways"}]}, "R.a", "\"order\""),
])
def test_invalid_schemas_say_where_and_why(schema: Any, place: str, reason: str) -> None:
    with pytest.raises(SchemaError) as caught:
        parse(schema if isinstance(schema, str) else json.dumps(schema))
    assert caught.value.place == place
    assert reason in caught.value.reason


def test_absurd_nesting_is_an_error_not_a_crash() -> None:
    deep = '{"type":"array","items":' * 500 + '"int"' + "}" * 500
    with pytest.raises(SchemaError, match="nesting deeper than"):
        parse(deep)
    with pytest.raises(SchemaError, match="nesting deeper than"):
        parse("[" * 200000 + "]" * 200000)


def test_union_default_may_match_any_branch() -> None:
    assert parse(record({"name": "a", "type": ["null", "int"], "default": 3})).root.fields[0].default == 3


def test_schema_values_and_strings() -> None:
    assert parse_value("int").root.type == "int"
    assert parse_value('"long"').root.type == "long"
    assert parse_value('{"type": "map", "values": "int"}').root.type == "map"
    with pytest.raises(SchemaError, match="empty schema"):
        parse_value("  ")


@pytest.mark.parametrize(("old", "new"), [
    ({"type": "array", "items": "boolean"}, {"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 2}),
    ({"type": "int", "logicalType": "time-millis"}, {"type": "record", "name": "T", "fields": []}),
    ({"type": "fixed", "name": "F", "size": 8, "logicalType": "decimal", "precision": 8}, {"type": "string", "logicalType": "uuid"}),
])
def test_a_change_to_another_kind_of_type_is_only_a_type_change_whatever_the_logical_types(old: Any, new: Any) -> None:
    before = parse(json.dumps({"type": "record", "name": "R", "fields": [{"name": "f", "type": old}]}))
    after = parse(json.dumps({"type": "record", "name": "R", "fields": [{"name": "f", "type": new}]}))
    verdict = classify([before], after, Mode.NONE)
    assert [f.rule for f in verdict.findings] == ["TYPE_CHANGED"] and str(verdict.level) == "compatible"
    promoted = classify([parse('{"type": "int", "logicalType": "date"}')], parse('{"type": "long", "logicalType": "timestamp-millis"}'), Mode.NONE)
    assert {f.rule for f in promoted.findings} == {"TYPE_PROMOTED", "LOGICAL_TYPE_CHANGED"}  # the types resolve: meaning still counts
