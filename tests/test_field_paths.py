"""Field paths as lineage names them, in each format: the schema's order, each once, and, where types used at many places
make more paths than can be listed, the shallowest ones up to the limit (not a walk that never ends)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.domain.compat.formats import SchemaType, field_paths_of, field_walk_of, parse_schema
from bot.domain.lineage.catalog import read_catalog
from bot.domain.lineage.field_paths import FIELD_PATHS, FieldWalk
from bot.domain.transitions.model import Rename, TransitionError
from bot.domain.transitions.plan import plan


def avro_ladder(levels: int) -> dict[str, Any]:
    """A record whose fields ``a`` and ``b`` are both the next level's record: 2^levels paths to the bottom."""
    ladder: dict[str, Any] = {"type": "record", "name": f"L{levels}", "fields": [{"name": "v", "type": "int"}]}
    for level in range(levels - 1, -1, -1):
        ladder = {"type": "record", "name": f"L{level}", "fields": [{"name": "a", "type": ladder}, {"name": "b", "type": f"L{level + 1}"}]}
    return ladder


def test_paths_are_listed_in_the_schema_order_parents_first_each_once() -> None:
    schema = {"type": "record", "name": "Order", "fields": [
        {"name": "id", "type": "string"},
        {"name": "lines", "type": {"type": "array", "items": {"type": "record", "name": "Line", "fields": [
            {"name": "sku", "type": "string"}, {"name": "next", "type": ["null", "Line"]}]}}},
        {"name": "payment", "type": ["null", {"type": "record", "name": "Card", "fields": [{"name": "last4", "type": "string"}]},
                                     {"type": "record", "name": "Wire", "fields": [{"name": "iban", "type": "string"}, {"name": "last4", "type": "int"}]}]},
        {"name": "tags", "type": {"type": "map", "values": "Line"}}]}
    assert field_paths_of(SchemaType.AVRO, parse_schema(SchemaType.AVRO, json.dumps(schema))) == [
        "id", "lines", "lines.sku", "lines.next", "payment", "payment.last4", "payment.iban", "tags", "tags.sku", "tags.next"]
    # a path does not pass a record twice: lines.next is a Line, listed, not walked again


def test_a_type_used_twice_at_each_of_thirty_levels_lists_the_shallowest_paths() -> None:
    paths = field_paths_of(SchemaType.AVRO, parse_schema(SchemaType.AVRO, json.dumps(avro_ladder(30))))
    assert len(paths) == FIELD_PATHS == len(set(paths))
    depths = [path.count(".") + 1 for path in paths]
    complete = max(d for d in range(1, 31) if 2 ** (d + 1) - 2 <= FIELD_PATHS)  # every path this deep fits
    assert sum(1 for d in depths if d <= complete) == 2 ** (complete + 1) - 2
    assert max(depths) == complete + 1  # then as many of the next level as fit, and nothing deeper
    listed = set(paths)
    assert all(path.rpartition(".")[0] in listed for path in paths if "." in path)  # every parent is listed
    assert paths.index("a") < paths.index("a.a") < paths.index("b")  # in the schema's order


def test_definitions_that_refer_to_one_another_list_a_bounded_set_of_paths() -> None:
    definitions = {f"N{i}": {"type": "object", "properties": {
        **{f"p{j}": {"anyOf": [{"$ref": f"#/$defs/N{(i + j + 1) % 24}"}, {"type": "null"}]} for j in range(8)}, "v": {"type": "integer"}}}
        for i in range(24)}
    schema = parse_schema(SchemaType.JSON, json.dumps({"$schema": "https://json-schema.org/draft/2020-12/schema", "$defs": definitions,
                                                       "$ref": "#/$defs/N0"}))
    paths = field_paths_of(SchemaType.JSON, schema)
    assert len(paths) == FIELD_PATHS and paths[:2] == ["p0", "p0.p0"] and {f"p{j}" for j in range(8)} <= set(paths)
    assert "v" in paths and "p7.v" in paths


def test_protobuf_messages_used_at_many_places_list_the_shallowest_paths() -> None:
    messages = "\n".join(f"message M{i} {{ M{i + 1} left = 1; M{i + 1} right = 2; }}" for i in range(30))
    schema = parse_schema(SchemaType.PROTOBUF, f'syntax = "proto3";\n{messages}\nmessage M30 {{ int32 v = 1; }}\n')
    paths = field_paths_of(SchemaType.PROTOBUF, schema)
    assert len(paths) == FIELD_PATHS and paths[:3] == ["left", "left.left", "left.left.left"]


def test_messages_of_an_imported_file_used_at_many_places_list_the_shallowest_paths() -> None:
    messages = "\n".join(f"message M{i} {{ M{i + 1} left = 1; M{i + 1} right = 2; }}" for i in range(30))
    imported = f'syntax = "proto3";\npackage lib;\n{messages}\nmessage M30 {{ int32 v = 1; }}\n'
    schema = parse_schema(SchemaType.PROTOBUF, 'syntax = "proto3";\nimport "lib/ladder.proto";\nmessage Top { lib.M0 start = 1; string id = 2; }\n',
                          {"lib/ladder.proto": imported})
    paths = field_paths_of(SchemaType.PROTOBUF, schema)
    assert len(paths) == FIELD_PATHS and paths[:3] == ["start", "start.left", "start.left.left"] and "id" in paths


def walk(kind: SchemaType, schema: Any, refs: dict[str, str] | None = None) -> FieldWalk:
    found = field_walk_of(kind, parse_schema(kind, schema if isinstance(schema, str) else json.dumps(schema), refs))
    assert found is not None
    return found


def test_whether_a_path_is_there_agrees_with_the_listing_and_goes_past_its_limit() -> None:
    schema = {"type": "record", "name": "Order", "fields": [
        {"name": "lines", "type": {"type": "array", "items": {"type": "record", "name": "Line", "fields": [
            {"name": "sku", "type": "string"}, {"name": "next", "type": ["null", "Line"]}]}}},
        {"name": "tags", "type": {"type": "map", "values": "Line"}}]}
    small = walk(SchemaType.AVRO, schema)
    assert all(small.has(path) for path in small.paths())
    assert not any(small.has(path) for path in ("lines.next.sku", "sku", "lines.sk", "lines.sku.x", "tags.lines"))  # next.sku passes Line twice

    ladder = walk(SchemaType.AVRO, avro_ladder(30))
    bottom = ".".join(["a"] * 15 + ["b"] * 15)
    assert f"{bottom}.v" not in ladder.paths() and ladder.has(f"{bottom}.v") and ladder.has(bottom)
    assert not ladder.has(f"{bottom}.a") and not ladder.has(f"{bottom}.v.v") and not ladder.has(f"{bottom}.c")

    messages = "\n".join(f"message M{i} {{ M{i + 1} left = 1; M{i + 1} right = 2; }}" for i in range(30))
    proto = walk(SchemaType.PROTOBUF, f'syntax = "proto3";\n{messages}\nmessage M30 {{ int32 v = 1; }}\n')
    assert proto.has(".".join(["right"] * 30) + ".v") and not proto.has(".".join(["right"] * 31))

    dotted = walk(SchemaType.JSON, {"type": "object", "properties": {"a.b": {"type": "object", "properties": {"c": {"type": "string"}}},
                                                                     "a": {"type": "object", "properties": {"x": {"type": "string"}}}}})
    assert dotted.has("a.b.c") and dotted.has("a.x") and dotted.has("a.b") and not dotted.has("a.c")


def test_a_mapping_deeper_than_the_listing_is_planned_and_a_wrong_one_refused() -> None:
    ladder = avro_ladder(30)
    target = json.loads(json.dumps(ladder).replace('[{"name": "v", "type": "int"}]', '[{"name": "w", "type": "int", "aliases": ["v"]}]'))
    deep = ".".join(["a"] * 15 + ["b"] * 15)
    planned = plan("AVRO", json.dumps(ladder), json.dumps(target), [Rename(f"{deep}.v", f"{deep}.w")])
    bottom = json.loads(planned.expand)
    while bottom["fields"][0]["name"] == "a":
        bottom = bottom["fields"][0]["type"]
    assert [f["name"] for f in bottom["fields"]] == ["v", "w"]
    with pytest.raises(TransitionError, match=f"mapping: {deep}.c is not a field of the current version"):
        plan("AVRO", json.dumps(ladder), json.dumps(target), [Rename(f"{deep}.c", f"{deep}.w")])
    # Without a mapping, the alias says it: at the places lineage lists, then at its record's shallowest place (never at
    # each of a billion)
    said = plan("AVRO", json.dumps(ladder), json.dumps(target), None)
    assert said.mapping == (Rename(".".join(["a"] * 30) + ".v", ".".join(["a"] * 30) + ".w"),) and said.expand == planned.expand


def test_a_catalog_job_may_read_a_field_deeper_than_the_listing() -> None:
    deep = ".".join(["a"] * 15 + ["b"] * 15)

    def catalog(path: str) -> dict[str, Any]:
        return {"teams": {"t": {"members": ["U0ALICE"]}}, "subjects": {"ladder-value": {"owner": "t", "schema": "ladder.avsc"}},
                "datasets": [{"name": "out", "namespace": "iceberg://lake", "owner": "t", "fields": ["v"]}],
                "jobs": [{"name": "j", "owner": "t", "inputs": ["ladder-value"], "outputs": ["out"], "mappings": {"out.v": [f"ladder-value.{path}"]}}]}

    text = json.dumps(avro_ladder(30))
    parsed, problems = read_catalog(catalog(f"{deep}.v"), lambda _: text)
    assert problems == [] and len(parsed.datasets[parsed.subjects["ladder-value"].dataset].fields) == FIELD_PATHS
    _, problems = read_catalog(catalog(f"{deep}.x"), lambda _: text)
    assert [p.message for p in problems] == [f"ladder has no field '{deep}.x'"]
