"""Protobuf changes the registry lets through and the wire does not forgive: a field made required (proto2's label,
Editions' LEGACY_REQUIRED) and a message field moved between length-prefixed and delimited (group) encoding, by a
field's own features or its file's. Each verdict is checked against data: a message written with one side's
descriptors (protoc's) and read with the other's by the Protobuf runtime. Buf's rules see the same encodings. A field
that leaves a oneof is named where it left, and fails the reader that keeps the oneof."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from google.protobuf import descriptor_pool, message_factory

from bot.domain.buf.breaking import breaking
from bot.domain.buf.config import default_modules
from bot.domain.compat.classify import Mode, Verdict
from bot.domain.compat.formats import SchemaType, classify_schemas, parse_schema
from bot.domain.protobuf.compile import compile_proto

P = SchemaType.PROTOBUF


def verdict(old: str, new: str, mode: Mode = Mode.FULL, old_refs: dict[str, str] | None = None, new_refs: dict[str, str] | None = None) -> Verdict:
    earlier = parse_schema(P, old, old_refs)
    return classify_schemas(P, [earlier], parse_schema(P, new, new_refs, like=earlier), mode)


def found(result: Verdict) -> dict[tuple[str, str], str]:
    return {(f.rule, f.path): str(f.level) for f in result.findings}


def order_class(text: str) -> Any:
    pool = descriptor_pool.DescriptorPool()
    for file in compile_proto(text).file:
        pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order"))


def read_as(reader: str, writer: str, fill: dict[str, Any]) -> Any:
    """A message written with ``writer`` (``fill``: field -> value, a dict for a message field), read with ``reader``."""
    written = order_class(writer)()
    for name, value in fill.items():
        if isinstance(value, dict):
            for inner, item in value.items():
                setattr(getattr(written, name), inner, item)
        else:
            setattr(written, name, value)
    return order_class(reader).FromString(written.SerializeToString())


PROTO2 = 'syntax = "proto2";\npackage shop;\nmessage Order {\n  optional string id = 1;\n  optional Item item = 2;\n  optional int32 n = 3;\n}\n' \
         'message Item { optional string sku = 1; }\n'


def test_a_field_made_required_fails_the_reader_that_requires_it_whatever_its_type() -> None:
    required = PROTO2.replace("optional string id", "required string id").replace("optional Item item", "required Item item")
    made = verdict(PROTO2, required)
    assert found(made) == {("FIELD_MADE_REQUIRED", "Order.id"): "breaking", ("FIELD_MADE_REQUIRED", "Order.item"): "breaking",
                           ("FIELD_STRING_OR_BYTES_LABEL_CHANGED", "Order.id"): "compatible"}  # the registry's own, beside ours
    assert not made.backward and made.forward
    assert not read_as(required, PROTO2, {"n": 3}).IsInitialized()  # old data, new reader: missing required fields
    assert read_as(PROTO2, required, {"id": "a", "item": {"sku": "s"}}).IsInitialized()
    relaxed = verdict(required, PROTO2, Mode.BACKWARD)
    assert found(relaxed)[("FIELD_NO_LONGER_REQUIRED", "Order.id")] == "compatible" and relaxed.backward and not relaxed.forward
    assert relaxed.findings[0].message.startswith("Order.id (number 1) changed from required to optional")
    message = next(f.message for f in made.findings if f.rule == "FIELD_MADE_REQUIRED")
    assert message.startswith("Order.id (number 1) changed from optional to required")


def test_editions_legacy_required_is_required_by_the_field_s_own_feature() -> None:
    old = 'edition = "2023";\npackage shop;\nmessage Order {\n  string id = 1;\n  int32 n = 2;\n}\n'
    new = old.replace("string id = 1;", "string id = 1 [features.field_presence = LEGACY_REQUIRED];")
    assert found(verdict(old, new)) == {("FIELD_MADE_REQUIRED", "Order.id"): "breaking", ("FIELD_STRING_OR_BYTES_LABEL_CHANGED", "Order.id"): "compatible"}
    assert not read_as(new, old, {"n": 1}).IsInitialized()
    added = old.replace("int32 n = 2;", "int32 n = 2;\n  string code = 3 [features.field_presence = LEGACY_REQUIRED];")
    assert found(verdict(old, added, Mode.BACKWARD)) == {("REQUIRED_FIELD_ADDED", "Order.code"): "breaking"}


def test_a_group_and_a_message_do_not_read_each_other() -> None:
    group = PROTO2.replace("  optional int32 n = 3;\n", "  optional int32 n = 3;\n  optional group Extra = 4 { optional int32 x = 1; }\n")
    message = PROTO2.replace("  optional int32 n = 3;\n", "  optional int32 n = 3;\n  optional Extra extra = 4;\n  message Extra { optional int32 x = 1; }\n")
    changed = verdict(group, message)
    assert found(changed) == {("FIELD_ENCODING_CHANGED", "Order.extra"): "breaking"} and not changed.backward and not changed.forward
    assert "from delimited (group) encoding to length-prefixed encoding" in changed.findings[0].message
    assert not read_as(message, group, {"extra": {"x": 7}}).HasField("extra")  # dropped as an unknown field
    assert read_as(group, group, {"extra": {"x": 7}}).extra.x == 7
    editions = 'edition = "2023";\npackage shop;\nmessage Order {\n  string id = 1;\n  Item item = 2;\n  int32 n = 3;\n' \
               '  Extra extra = 4 [features.message_encoding = DELIMITED];\n  message Extra { int32 x = 1; }\n}\nmessage Item { string sku = 1; }\n'
    assert found(verdict(group, editions)) == {}  # proto2's group is Editions' delimited message: the same wire
    assert read_as(editions, group, {"extra": {"x": 7}}).extra.x == 7


def test_delimited_encoding_set_for_a_whole_file_reaches_its_messages_but_not_its_maps() -> None:
    old = 'edition = "2023";\npackage shop;\nmessage Order {\n  Item item = 1;\n  map<string, Item> by_sku = 2;\n}\nmessage Item { string sku = 1; }\n'
    new = old.replace("package shop;\n", "package shop;\noption features.message_encoding = DELIMITED;\n")
    changed = verdict(old, new)  # every message is written the same: only the file's features differ
    assert found(changed) == {("FIELD_ENCODING_CHANGED", "Order.item"): "breaking"}
    assert not read_as(new, old, {"item": {"sku": "s"}}).HasField("item")
    maps_only = old.replace("  Item item = 1;\n", "")
    assert found(verdict(maps_only, maps_only.replace("package shop;\n", "package shop;\noption features.message_encoding = DELIMITED;\n"))) == {}


def test_buf_reads_a_delimited_message_as_a_group_and_inherits_features_through_enclosing_messages(tmp_path: Path) -> None:
    old = 'edition = "2023";\npackage shop;\nmessage Order {\n  Item item = 1;\n  message Inner { Item x = 1; }\n}\nmessage Item { string sku = 1; }\n'
    new = old.replace("Item item = 1;", "Item item = 1 [features.message_encoding = DELIMITED];")
    found_buf = breaking({"order.proto": old}, {"order.proto": new}, default_modules())
    assert [(f.rule, f.message) for f in found_buf] == [
        ("FIELD_SAME_TYPE", 'Field "1" with name "item" on message "Order" changed type from "message" to "message (delimited encoding)".')]
    legacy = old.replace("message Order {\n", "message Order {\n  option features.json_format = LEGACY_BEST_EFFORT;\n")
    json_found = [f.message for f in breaking({"order.proto": old}, {"order.proto": legacy}, default_modules())]
    assert json_found == ['Message "Order" JSON format support changed from ALLOW to LEGACY_BEST_EFFORT.',
                          'Message "Inner" JSON format support changed from ALLOW to LEGACY_BEST_EFFORT.']  # Inner inherits it


def test_an_imported_editions_file_is_judged_by_its_own_features() -> None:
    root = 'syntax = "proto3";\npackage shop;\nimport "common/parts.proto";\nmessage Order {\n  common.Box box = 1;\n}\n'
    parts = 'edition = "2023";\npackage common;\nmessage Box {\n  Tag tag = 1;\n}\nmessage Tag { string name = 1; }\n'
    delimited_parts = parts.replace("package common;\n", "package common;\noption features.message_encoding = DELIMITED;\n")
    changed = verdict(root, root, old_refs={"common/parts.proto": parts}, new_refs={"common/parts.proto": delimited_parts})
    assert found(changed) == {("FIELD_ENCODING_CHANGED", "Order.box.tag"): "breaking", ("FIELD_NAMED_TYPE_CHANGED", "Order.box"): "breaking"}
    assert found(verdict(root, root, old_refs={"common/parts.proto": parts}, new_refs={"common/parts.proto": parts})) == {}


def test_a_field_that_leaves_its_oneof_is_named_where_it_left_and_fails_the_reader_that_keeps_the_oneof() -> None:
    oneof = 'syntax = "proto3";\npackage shop;\nmessage Order {\n  oneof pay {\n    string card = 1;\n    string iban = 2;\n  }\n}\n'
    left = 'syntax = "proto3";\npackage shop;\nmessage Order {\n  oneof pay {\n    string card = 1;\n  }\n  string iban = 2;\n}\n'
    moved = verdict(oneof, left)
    assert found(moved) == {("ONEOF_FIELD_MOVED_TO_TOP_LEVEL", "Order.iban"): "breaking"}  # not "a field was moved into oneof Order.pay"
    assert moved.backward and not moved.forward
    assert "left oneof pay" in moved.findings[0].message
    both = read_as(oneof, left, {"card": "4111", "iban": "DE89"})  # new data sets both; the old reader keeps the last
    assert [both.HasField("card"), both.HasField("iban")] == [False, True]

    alone = 'syntax = "proto3";\npackage shop;\nmessage Order {\n  oneof pay {\n    string card = 1;\n  }\n}\n'
    freed = verdict(alone, alone.replace("  oneof pay {\n    string card = 1;\n  }\n", "  string card = 1;\n"))
    assert found(freed) == {("ONEOF_FIELD_MOVED_TO_TOP_LEVEL", "Order.card"): "safe", ("ONEOF_REMOVED", "Order.pay"): "compatible"}
    assert freed.backward and freed.forward  # alone in its oneof, it was set alone
