"""Protobuf and JSON Schema classified as the registry decides (its difference names, BACKWARD as what the new
schema meets in the old one's data, FORWARD the reverse), what neither the registry nor its users' tools see (an
unreserved number, JSON's 64-bit strings, `format` drift), and the CLI: the type by extension or --type, --pairs
lines with schema_type, bad input refused with protoc's or the draft's own words."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bot.domain.compat.classify import Mode, Verdict
from bot.domain.compat.formats import SchemaType, classify_schemas, parse_schema
from bot.domain.jsonschema.errors import JsonSchemaError
from bot.domain.protobuf.compile import ProtoError

P, J = SchemaType.PROTOBUF, SchemaType.JSON


def proto(body: str, package: str = "shop", syntax: str = "proto3") -> str:
    return f'syntax = "{syntax}";\npackage {package};\n{body}\n'


def verdict(kind: SchemaType, old: str, new: str, mode: Mode = Mode.FULL, refs: dict[str, str] | None = None, *, lenient: bool = False) -> Verdict:
    return classify_schemas(kind, [parse_schema(kind, old, refs)], parse_schema(kind, new, refs), mode, lenient=lenient)


def found(result: Verdict) -> dict[tuple[str, str], str]:
    """(rule, path) -> level."""
    return {(f.rule, f.path): str(f.level) for f in result.findings}


ORDER = "message Order {\n  string id = 1;\n  int32 quantity = 2;\n  repeated Item items = 3;\n  message Item { double price = 1; }\n}"


def test_protobuf_fields_by_number_with_the_registrys_verdict_each_way() -> None:
    added = verdict(P, proto(ORDER), proto(ORDER.replace("int32 quantity = 2;", "int32 quantity = 2;\n  string note = 4;")))
    assert found(added) == {("FIELD_ADDED", "Order.note"): "safe"} and added.backward and added.forward
    removed = verdict(P, proto(ORDER), proto(ORDER.replace("int32 quantity = 2;", "reserved 2;\n  reserved \"quantity\";")))
    assert found(removed) == {("FIELD_REMOVED", "Order.quantity"): "compatible"}  # reserved: nothing beyond the registry
    unreserved = verdict(P, proto(ORDER), proto(ORDER.replace("int32 quantity = 2;", "")))
    assert found(unreserved)[("FIELD_NUMBER_NOT_RESERVED", "Order.quantity")] == "compatible"
    kind = verdict(P, proto(ORDER), proto(ORDER.replace("int32 quantity = 2;", "Item quantity = 2;")), Mode.BACKWARD)
    assert found(kind) == {("FIELD_KIND_CHANGED", "Order.quantity"): "breaking"} and not kind.backward and not kind.forward
    scalar = verdict(P, proto(ORDER), proto(ORDER.replace("double price = 1;", "string price = 1;")))
    assert found(scalar)[("FIELD_SCALAR_KIND_CHANGED", "Order.items[].price")] == "breaking"  # a path like Avro's
    assert found(scalar)[("FIELD_NAMED_TYPE_CHANGED", "Order.items")] == "breaking"
    wider = verdict(P, proto(ORDER), proto(ORDER.replace("int32 quantity", "int64 quantity")))
    assert found(wider) == {("FIELD_JSON_CHANGED", "Order.quantity"): "compatible"} and wider.backward and wider.forward
    same_wire = verdict(P, proto(ORDER), proto(ORDER.replace("int32 quantity", "uint32 quantity")))
    assert found(same_wire) == {("FIELD_TYPE_CHANGED_SAME_WIRE", "Order.quantity"): "compatible"} and same_wire.backward  # beyond the registry
    for before, after, forms in (("int32", "bool", "int32 as a number and bool as true or false (and on the wire, values outside bool's "
                                                    "range are cut or change sign)"),
                                 ("int64", "int32", "int64 as a string of digits and int32 as a number (and on the wire, values outside "
                                                    "int32's range are cut or change sign)"),  # a 64-bit value keeps its low 32 bits
                                 ("sint32", "sint64", "sint32 as a number and sint64 as a string of digits"),  # every value kept
                                 ("uint32", "int64", "uint32 as a number and int64 as a string of digits"),
                                 ("string", "bytes", "string as text and bytes as base64 text"),
                                 ("bytes", "string", "bytes as base64 text and string as text (and a reader of string refuses bytes that "
                                                     "are not valid UTF-8)")):
        old_side = ORDER.replace("int32 quantity", f"{before} quantity")
        json_form = verdict(P, proto(old_side), proto(old_side.replace(f"{before} quantity", f"{after} quantity")))
        assert found(json_form) == {("FIELD_JSON_CHANGED", "Order.quantity"): "compatible"} and json_form.backward and json_form.forward
        assert f"Protobuf's JSON writes {forms}, so JSON consumers see another type" in json_form.findings[0].message
    commented = verdict(P, proto(ORDER), proto("// orders\n" + ORDER))
    assert commented.identical and found(commented) == {}
    renamed = verdict(P, proto(ORDER), proto(ORDER.replace("quantity = 2", "count = 2")))
    assert found(renamed) == {("FIELD_NAME_CHANGED", "Order.count"): "compatible"}


def test_a_field_number_taken_again_after_its_field_was_deleted_is_found_across_the_history() -> None:
    """v1 has `int32 quantity = 2`; v2 deletes it without reserving 2; v3 takes 2 for a string. Against v2 alone (what the
    registry's BACKWARD compares) v3 only adds a field; the history says old data reads as the wrong field."""
    v1, v2 = proto(ORDER), proto(ORDER.replace("int32 quantity = 2;", ""))
    v3 = proto(ORDER.replace("int32 quantity = 2;", "string coupon = 2;"))
    history = [parse_schema(P, v1), parse_schema(P, v2)]
    reused = classify_schemas(P, history, parse_schema(P, v3), Mode.BACKWARD)
    assert found(reused) == {("FIELD_ADDED", "Order.coupon"): "safe", ("FIELD_NUMBER_REUSED", "Order.coupon"): "breaking"}
    assert reused.backward and reused.forward  # the registry accepts it: the verdict says so, and the finding why it breaks anyway
    [finding] = [f for f in reused.findings if f.rule == "FIELD_NUMBER_REUSED"]
    assert "takes number 2, which was quantity (int32) in version 1 until it was deleted" in finding.message
    same = classify_schemas(P, history, parse_schema(P, proto(ORDER.replace("int32 quantity = 2;", "int32 quantity = 2;\n  string note = 4;"))),
                            Mode.BACKWARD)
    assert ("FIELD_NUMBER_REUSED", "Order.quantity") not in found(same)  # the same field back: no reuse
    reserved = proto(ORDER.replace("int32 quantity = 2;", "reserved 2;"))
    unreserved = classify_schemas(P, [parse_schema(P, v1), parse_schema(P, reserved)], parse_schema(P, v2), Mode.BACKWARD)
    assert found(unreserved) == {("FIELD_NUMBER_UNRESERVED", "Order"): "compatible"}


def test_protobuf_messages_and_packages_follow_the_registrys_direction() -> None:
    extra = ORDER + "\nmessage Refund { string id = 1; }"
    added = {mode: verdict(P, proto(ORDER), proto(extra), mode) for mode in (Mode.BACKWARD, Mode.FORWARD)}
    assert found(added[Mode.BACKWARD]) == {("MESSAGE_ADDED", "Refund"): "compatible"}  # fails only what BACKWARD does not ask
    assert found(added[Mode.FORWARD]) == {("MESSAGE_ADDED", "Refund"): "breaking"}  # an old reader's check sees it removed
    removed = verdict(P, proto(extra), proto(ORDER), Mode.BACKWARD)
    assert found(removed) == {("MESSAGE_REMOVED", "Refund"): "breaking"}
    moved = verdict(P, proto(ORDER), proto(ORDER, package="store"))
    assert ("PACKAGE_CHANGED", "store") in found(moved) and found(moved)[("PACKAGE_CHANGED", "store")] == "breaking"


def test_protobuf_proto2_required_oneofs_and_enums() -> None:
    old = proto("message Order {\n  required string id = 1;\n  optional int32 a = 2;\n  optional int32 b = 3;\n}", syntax="proto2")
    required = verdict(P, old, old.replace("optional int32 b = 3;", "optional int32 b = 3;\n  required int32 c = 4;"), Mode.BACKWARD)
    assert found(required) == {("REQUIRED_FIELD_ADDED", "Order.c"): "breaking"}
    both = old.replace("optional int32 a = 2;\n  optional int32 b = 3;", "oneof pick {\n    int32 a = 2;\n    int32 b = 3;\n  }")
    merged = verdict(P, old, both, Mode.BACKWARD)
    assert found(merged)[("MULTIPLE_FIELDS_MOVED_TO_ONEOF", "Order.pick")] == "breaking"
    back_out = verdict(P, both, old, Mode.BACKWARD)  # leaving a oneof only relaxes exclusivity
    assert {r for r, _ in found(back_out)} >= {"ONEOF_FIELD_MOVED_TO_TOP_LEVEL", "ONEOF_REMOVED"} and back_out.backward
    status = "enum Status {\n  NEW = 0;\n  PAID = 1;\n}\nmessage Order { Status status = 1; }"
    renamed = verdict(P, proto(status), proto(status.replace("PAID = 1", "SETTLED = 1")))
    assert found(renamed) == {("ENUM_CONST_CHANGED", "Status.SETTLED"): "compatible"}
    as_number = verdict(P, proto(status), proto(status.replace("Status status = 1", "int32 status = 1")))
    # an enum is a number on the wire, as the registry reads it; Protobuf's JSON writes its value's name
    assert found(as_number) == {("FIELD_JSON_CHANGED", "Order.status"): "compatible"} and as_number.backward and as_number.forward
    assert "enum Status as its value's name and int32 as a number" in as_number.findings[0].message
    other = verdict(P, proto(status + "\nenum Stage {\n  OPEN = 0;\n}"),
                    proto(status.replace("Status status = 1", "Stage status = 1") + "\nenum Stage {\n  OPEN = 0;\n}"))
    assert found(other) == {("FIELD_ENUM_CHANGED", "Order.status"): "compatible"} and other.backward and other.forward
    assert other.findings[0].message.startswith("Order.status changed from enum Status to enum Stage: the wire keeps each value's number")


def test_protobuf_imports_count_and_the_registrys_own_imports_need_no_text() -> None:
    address = 'syntax = "proto3";\npackage common;\nmessage Address {\n  string zip = 1;\n}\n'
    order = proto('import "common/address.proto";\nimport "google/protobuf/timestamp.proto";\nimport "confluent/meta.proto";\n'
                  "message Order {\n  common.Address ship = 1;\n  google.protobuf.Timestamp at = 2 [(confluent.field_meta).doc = \"when\"];\n}")
    old = parse_schema(P, order, {"common/address.proto": address})
    new = parse_schema(P, order, {"common/address.proto": address.replace("string zip", "int64 zip")})
    changed = found(classify_schemas(P, [old], new, Mode.BACKWARD))
    assert changed == {("FIELD_SCALAR_KIND_CHANGED", "Order.ship.zip"): "breaking", ("FIELD_NAMED_TYPE_CHANGED", "Order.ship"): "breaking"}
    with pytest.raises(ProtoError, match="common/address.proto: File not found"):
        parse_schema(P, order)
    with pytest.raises(ProtoError, match=r'schema.proto:4:3: "int33" is not defined'):
        parse_schema(P, proto("message Order {\n  int33 x = 1;\n}"))


OPEN = {"title": "Order", "type": "object", "properties": {"id": {"type": "string"}, "amount": {"type": "number"}}, "required": ["id"]}
CLOSED = {**OPEN, "additionalProperties": False}


def js(document: dict[str, object], **changes: object) -> str:
    return json.dumps({**document, **changes})


def test_json_schema_content_models_strict_and_lenient() -> None:
    with_channel = {**OPEN["properties"], "channel": {"type": "string"}}  # type: ignore[dict-item]
    strict = verdict(J, js(OPEN), js(OPEN, properties=with_channel), Mode.BACKWARD)
    [finding] = strict.findings
    assert (finding.rule, finding.path, str(finding.level)) == ("OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", "Order.channel", "breaking")
    assert "additionalProperties: false" in finding.message and "lenient" in finding.message  # the way forward, not just "incompatible"
    assert verdict(J, js(OPEN), js(OPEN, properties=with_channel), Mode.BACKWARD, lenient=True).backward
    closed = verdict(J, js(CLOSED), js(CLOSED, properties=with_channel), Mode.BACKWARD)
    assert found(closed) == {("OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", "Order.channel"): "compatible"} and closed.backward  # an old reader refuses it
    dropped = verdict(J, js(CLOSED), js(CLOSED, properties={"id": {"type": "string"}}), Mode.BACKWARD)
    assert found(dropped) == {("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", "Order.amount"): "breaking"}
    assert verdict(J, js(OPEN), js(OPEN, properties={"id": {"type": "string"}}), Mode.BACKWARD).backward  # an open model keeps it allowed


def test_json_schema_types_required_enums_and_drift() -> None:
    typed = verdict(J, js(OPEN), js(OPEN, properties={"id": {"type": "integer"}, "amount": {"type": "number"}}))
    assert found(typed) == {("TYPE_CHANGED", "Order.id"): "breaking"}
    narrowed = verdict(J, js(OPEN), js(OPEN, properties={"id": {"type": "string"}, "amount": {"type": "integer"}}), Mode.BACKWARD)
    assert found(narrowed) == {("TYPE_NARROWED", "Order.amount"): "breaking"}
    required = verdict(J, js(OPEN), js(OPEN, required=["id", "amount"]), Mode.BACKWARD)
    assert found(required) == {("REQUIRED_ATTRIBUTE_ADDED", "Order.amount"): "breaking"}
    status = {"type": "object", "properties": {"status": {"enum": ["NEW", "PAID"]}}}
    more = verdict(J, json.dumps(status), json.dumps({"type": "object", "properties": {"status": {"enum": ["NEW", "PAID", "VOID"]}}}))
    assert found(more) == {("ENUM_ARRAY_EXTENDED", "status"): "breaking"} and more.backward and not more.forward
    dated = {"type": "object", "properties": {"at": {"type": "string", "format": "date-time"}}}
    drift = verdict(J, json.dumps(dated), json.dumps(dated).replace('"date-time"', '"date"'))
    assert found(drift) == {("FORMAT_CHANGED", "at"): "compatible"} and drift.backward and drift.forward


def test_json_schema_refs_within_and_across_documents_and_bad_documents() -> None:
    address = json.dumps({"type": "object", "properties": {"zip": {"type": "string"}}})
    order = {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "Order", "type": "object",
             "properties": {"ship": {"$ref": "https://example.com/address.json"}, "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}}},
             "$defs": {"Item": {"type": "object", "properties": {"price": {"type": "number"}}}}}
    changed_item = json.loads(json.dumps(order))
    changed_item["$defs"]["Item"]["properties"]["price"] = {"type": "string"}
    refs = {"https://example.com/address.json": address}
    assert found(verdict(J, json.dumps(order), json.dumps(changed_item), refs=refs)) == {("TYPE_CHANGED", "Order.items[].price"): "breaking"}
    other = {"https://example.com/address.json": address.replace('"string"', '"integer"')}
    across = classify_schemas(J, [parse_schema(J, json.dumps(order), refs)], parse_schema(J, json.dumps(order), other))
    assert found(across) == {("TYPE_CHANGED", "Order.ship.zip"): "breaking"}
    for bad, said in (("{", "not JSON"), ("[1, 2]", "not a JSON Schema"), ('{"type": "strin"}', "not a valid Draft7 JSON Schema"),
                      (json.dumps(order), r"resolves nowhere: name the schema it points to as a reference \(https://example.com/address.json\)"),
                      ('{"properties": {"a": {"$ref": "#/definitions/nope"}}}', "resolves nowhere: there is no /definitions/nope in this schema")):
        with pytest.raises(JsonSchemaError, match=said):
            parse_schema(J, bad)


def bot(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bot", *args], input=stdin, capture_output=True, text=True, timeout=120)


def test_the_cli_picks_the_type_by_extension_refuses_a_mix_and_answers_each_pairs_line(tmp_path: Path) -> None:
    (tmp_path / "old.proto").write_text(proto(ORDER))
    (tmp_path / "new.proto").write_text(proto(ORDER.replace("double price", "string price")))
    (tmp_path / "bad.proto").write_text(proto("message Order {\n  int33 x = 1;\n}"))
    (tmp_path / "old.json").write_text(js(OPEN))
    (tmp_path / "new.json").write_text(js(OPEN, required=["id", "amount"]))
    (tmp_path / "avro.json").write_text(json.dumps({"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}]}))
    answer = bot("classify", str(tmp_path / "old.proto"), str(tmp_path / "new.proto"), "--format", "json")
    assert answer.returncode == 0 and json.loads(answer.stdout)["level"] == "breaking"
    assert bot("classify", str(tmp_path / "old.proto"), str(tmp_path / "new.proto"), "--fail-on", "breaking").returncode == 1
    as_json = json.loads(bot("classify", str(tmp_path / "old.json"), str(tmp_path / "new.json"), "--format", "json", "--mode", "BACKWARD").stdout)
    assert [c["rule"] for c in as_json["changes"]] == ["REQUIRED_ATTRIBUTE_ADDED"]
    mixed = bot("classify", str(tmp_path / "old.proto"), str(tmp_path / "avro.json"))
    assert mixed.returncode == 2 and "different types" in mixed.stderr and "avro.json is AVRO" in mixed.stderr  # an Avro .json stays Avro
    broken = bot("classify", str(tmp_path / "old.proto"), str(tmp_path / "bad.proto"))
    assert broken.returncode == 2 and f'{tmp_path / "bad.proto"}:4:3: "int33" is not defined' in broken.stderr, broken.stderr
    forced = bot("classify", str(tmp_path / "old.proto"), str(tmp_path / "new.proto"), "--type", "json")
    assert forced.returncode == 2 and "invalid JSON schema" in forced.stderr and "not JSON" in forced.stderr

    lines = [{"id": 1, "schema_type": "PROTOBUF", "old": proto(ORDER), "new": proto(ORDER + "\nmessage Refund { string id = 1; }"), "mode": "BACKWARD"},
             {"id": 2, "schema_type": "JSON", "old": OPEN, "new": {**OPEN, "properties": {"id": {"type": "string"}}}, "mode": "FULL"},
             {"id": 3, "schema_type": "XML", "old": "a", "new": "b"},
             {"id": 4, "schema_type": "PROTOBUF", "old": proto('import "common/a.proto";\nmessage A { common.A a = 1; }'),
              "new": proto(ORDER), "refs": [{"name": "common/a.proto", "schema": 'syntax = "proto3"; package common; message A {}'}]},
             {"id": 5, "schema_type": "PROTOBUF", "old": proto('import "google/protobuf/any.proto";\nmessage A { google.protobuf.Any a = 1; }'),
              "new": proto(ORDER), "refs": [{"name": "google/protobuf/any.proto"}]},
             {"id": 6, "schema_type": "PROTOBUF", "old": proto(ORDER), "new": "message {"}]
    out = bot("classify", "--pairs", "-", stdin="\n".join(json.dumps(line) for line in lines) + "\n")
    answers = {a["id"]: a for a in map(json.loads, out.stdout.splitlines())}
    assert out.returncode == 0 and answers[1]["level"] == "compatible" and answers[2]["changes"][0]["rule"] == "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL"
    assert "unknown schema_type 'XML'" in answers[3]["error"] and answers[4]["level"] == "breaking" and answers[5]["level"] == "breaking"
    assert answers[6]["error"].startswith("new: invalid PROTOBUF schema")
