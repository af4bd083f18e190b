"""Protobuf parsed alongside the other side of a comparison (``parse_schema(..., like=...)``) and messages defined alike
passed over by the classifier: the result is always what a parse on its own and a full walk give."""

from __future__ import annotations

import copy
import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.domain.compat.analysis import analyse
from bot.domain.compat.classify import Mode
from bot.domain.compat.formats import SchemaType, classify_schemas, parse_schema
from bot.domain.compat.report import as_json
from bot.domain.protobuf.model import ProtoSchema

P = SchemaType.PROTOBUF
MONEY = 'syntax = "proto3";\npackage common;\nmessage Money { int64 units = 1; string currency = 2; }\n'
BASE = """syntax = "proto3";
package shop;
import "common/money.proto";
message Order {
  string id = 1;
  Item first = 2;
  map<string, Item> by_sku = 3;
  repeated Item items = 4;
  Status status = 5;
  common.Money total = 6;
  oneof contact { string email = 7; string phone = 8; }
  enum Status { UNKNOWN = 0; OPEN = 1; }
}
message Item {
  double price = 1;
  int32 count = 2;
  message Note { string text = 1; }
  Note note = 3;
}
message Audit { string who = 1; map<string, int32> tally = 2; }
"""
AUDIT = "message Audit { string who = 1; map<string, int32> tally = 2; }\n"
ITEM = BASE[BASE.index("message Item"):BASE.index(AUDIT)]
EDITS = {
    "identical, but for a comment": (BASE.replace("message Audit", "// who did what\nmessage Audit"), MONEY),
    "a named type changed incompatibly": (BASE.replace("double price = 1;", "string price = 1;"), MONEY),
    "a nested message changed": (BASE.replace("string text = 1;", "int32 text = 1;"), MONEY),
    "a nested enum changed": (BASE.replace("OPEN = 1;", "OPEN = 1; CLOSED = 2;"), MONEY),
    "two messages swapped places": (BASE.replace(ITEM, "").replace(AUDIT, AUDIT + ITEM), MONEY),
    "a field removed": (BASE.replace(" map<string, int32> tally = 2; ", " "), MONEY),
    "a message added": (BASE + "message Refund { string id = 1; }\n", MONEY),
    "an imported type changed": (BASE, MONEY.replace("int64 units", "string units")),
    "an option changed": (BASE.replace("int32 count = 2;", "int32 count = 2 [deprecated = true];"), MONEY),
}


def parsed(text: str, money: str, like: ProtoSchema | None = None) -> ProtoSchema:
    result: ProtoSchema = parse_schema(P, text, {"common/money.proto": money}, like=like)
    return result


def walked_in_full(schema: ProtoSchema) -> ProtoSchema:
    """The same schema with no message's descriptor known: the classifier compares every message field by field."""
    return dataclasses.replace(schema, messages={n: dataclasses.replace(m, digest=b"") for n, m in schema.messages.items()})


@pytest.mark.parametrize("edit", EDITS)
def test_parsed_alongside_or_alone_and_walked_in_full_or_not_the_verdict_is_the_same(edit: str) -> None:
    text, money = EDITS[edit]
    old = parsed(BASE, MONEY)
    alone, alongside = parsed(text, money), parsed(text, money, like=old)
    assert alongside == alone  # every message, enum, field, path and the canonical form
    expected = as_json(classify_schemas(P, [walked_in_full(old)], walked_in_full(alone), Mode.FULL))
    assert as_json(classify_schemas(P, [old], alongside, Mode.FULL)) == expected
    assert as_json(classify_schemas(P, [old], alone, Mode.FULL)) == expected
    assert as_json(classify_schemas(P, [alongside], old, Mode.FULL)) == as_json(classify_schemas(P, [walked_in_full(alone)], walked_in_full(old), Mode.FULL))


SCALAR_TYPES = ["int32", "int64", "uint32", "sint64", "string", "bytes", "bool", "double", "fixed32"]


@st.composite
def proto_pairs(draw: st.DrawFn) -> tuple[str, str]:
    """Two versions of a file of 2-5 messages (scalars, references to the others, maps, a nested enum and message, a
    oneof), the second with a few random edits: a field's type, name, number or label, a field removed or added, an
    enum value added, a message moved, an option."""
    count = draw(st.integers(2, 5))

    def field_type(m: int) -> str:
        return draw(st.one_of(st.sampled_from(SCALAR_TYPES), st.sampled_from([f"M{n}" for n in range(count) if n != m] + ["Inner", "Kind"]),
                              st.sampled_from(["map<string, int32>", f"map<string, M{(m + 1) % count}>"])))

    messages = []
    for m in range(count):
        fields = [[draw(st.sampled_from(["", "repeated "])), field_type(m), f"f{n}", n + 1, ""] for n in range(draw(st.integers(1, 5)))]
        for item in fields:
            if item[1].startswith("map<"):
                item[0] = ""
        messages.append({"name": f"M{m}", "fields": fields, "kinds": ["K_UNSPECIFIED", "K_A"], "oneof": draw(st.booleans())})

    def render(version: list[dict[str, Any]]) -> str:
        parts = ['syntax = "proto3";', "package gen;"]
        for message in version:
            body = [f"  {label}{kind} {name} = {number}{option};" for label, kind, name, number, option in message["fields"]]
            body.append("  enum Kind { " + " ".join(f"{v} = {i};" for i, v in enumerate(message["kinds"])) + " }")
            body.append("  message Inner { string note = 1; }")
            if message["oneof"]:
                body.append(f"  oneof choice {{ string a{message['name']} = 50; int64 b{message['name']} = 51; }}")
            parts.append(f"message {message['name']} {{\n" + "\n".join(body) + "\n}")
        return "\n".join(parts) + "\n"

    old = render(messages)
    new = [copy.deepcopy(m) for m in messages]
    for fresh in range(60, 60 + draw(st.integers(0, 3))):  # a number or name an edit brings in: used nowhere else
        message = new[draw(st.integers(0, count - 1))]
        edit = draw(st.sampled_from(["type", "name", "number", "label", "remove", "add", "enum", "move", "option"]))
        item = message["fields"][draw(st.integers(0, len(message["fields"]) - 1))]
        if edit == "type":
            item[1] = field_type(int(message["name"][1:]))
            item[0] = "" if item[1].startswith("map<") else item[0]
        elif edit == "name":
            item[2] += "_renamed"
        elif edit == "number":
            item[3] = fresh
        elif edit == "label" and not item[1].startswith("map<"):
            item[0] = "" if item[0] else "repeated "
        elif edit == "remove" and len(message["fields"]) > 1:
            message["fields"].remove(item)
        elif edit == "add":
            message["fields"].append(["", draw(st.sampled_from(SCALAR_TYPES)), f"added{fresh}", fresh, ""])
        elif edit == "enum":
            message["kinds"].append(f"K_{fresh}")
        elif edit == "move":
            new.append(new.pop(new.index(message)))
        elif edit == "option":
            item[4] = " [deprecated = true]"
    return old, render(new)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(proto_pairs())
def test_random_pairs_parsed_alongside_and_walked_alike_give_what_parsing_alone_and_walking_in_full_give(pair: tuple[str, str]) -> None:
    old_text, new_text = pair
    old = parse_schema(P, old_text)
    alone, alongside = parse_schema(P, new_text), parse_schema(P, new_text, like=old)
    assert alongside == alone
    for mode in (Mode.BACKWARD, Mode.FULL):
        expected = as_json(classify_schemas(P, [walked_in_full(old)], walked_in_full(alone), mode))
        assert as_json(classify_schemas(P, [old], alongside, mode)) == expected
        assert as_json(classify_schemas(P, [alongside], old, mode)) == as_json(classify_schemas(P, [walked_in_full(alone)], walked_in_full(old), mode))


def test_messages_defined_alike_are_taken_over_and_changed_ones_are_read_again() -> None:
    old = parsed(BASE, MONEY)
    new = parsed(*EDITS["a nested message changed"], like=old)
    assert new.messages["shop.Order"] is old.messages["shop.Order"]
    assert new.messages["shop.Order.BySkuEntry"] is old.messages["shop.Order.BySkuEntry"]  # its map entry comes with it
    assert new.enums["shop.Order.Status"] is old.enums["shop.Order.Status"]
    assert new.messages["shop.Item"] is not old.messages["shop.Item"]
    assert new.messages["shop.Item.Note"] is not old.messages["shop.Item.Note"]
    swapped = parsed(*EDITS["two messages swapped places"], like=old)
    assert swapped.messages["shop.Item"] is not old.messages["shop.Item"]  # the same definition in another place
    assert swapped.messages["shop.Order"] is old.messages["shop.Order"]
    imported = parsed(*EDITS["an imported type changed"], like=old)
    assert imported.messages["common.Money"] is not old.messages["common.Money"]


def test_a_message_defined_alike_still_reports_the_named_types_that_changed_under_it() -> None:
    old = parsed(BASE, MONEY)
    found = {(f.rule, f.path) for f in classify_schemas(P, [old], parsed(*EDITS["a named type changed incompatibly"], like=old)).findings}
    assert found == {("FIELD_SCALAR_KIND_CHANGED", "Item.price"), ("FIELD_NAMED_TYPE_CHANGED", "Order.first"),
                     ("FIELD_NAMED_TYPE_CHANGED", "Order.by_sku{}"), ("FIELD_NAMED_TYPE_CHANGED", "Order.items")}
    imported = {(f.rule, f.path) for f in classify_schemas(P, [old], parsed(*EDITS["an imported type changed"], like=old)).findings}
    assert ("FIELD_NAMED_TYPE_CHANGED", "Order.total") in imported


def test_the_cli_parses_a_history_and_pairs_alongside_with_the_verdict_of_schemas_parsed_alone(tmp_path: Path) -> None:
    texts = [BASE, EDITS["a nested enum changed"][0], EDITS["a named type changed incompatibly"][0]]
    (tmp_path / "common").mkdir()
    (tmp_path / "common" / "money.proto").write_text(MONEY)
    for number, text in enumerate(texts, start=1):
        (tmp_path / f"v{number}.proto").write_text(text)
    versions = [parsed(text, MONEY) for text in texts]
    expected = as_json(classify_schemas(P, versions[:-1], versions[-1], Mode.FULL_TRANSITIVE))
    assert expected["level"] == "breaking" and len(expected["changes"]) >= 4
    answer = subprocess.run([sys.executable, "-m", "bot", "classify", "--history", *(str(tmp_path / f"v{n}.proto") for n in (1, 2, 3)),
                             "--ref", f"common/money.proto={tmp_path / 'common' / 'money.proto'}", "--mode", "FULL_TRANSITIVE", "--format", "json"],
                            capture_output=True, text=True, timeout=120)
    assert json.loads(answer.stdout) == expected, answer.stderr
    line = {"id": 7, "schema_type": "PROTOBUF", "old": BASE, "new": texts[2], "mode": "FULL", "refs": [{"name": "common/money.proto", "schema": MONEY}]}
    pairs = subprocess.run([sys.executable, "-m", "bot", "classify", "--pairs", "-"], input=json.dumps(line) + "\n",
                           capture_output=True, text=True, timeout=120)
    assert json.loads(pairs.stdout) == {"id": 7, **as_json(classify_schemas(P, [versions[0]], versions[2], Mode.FULL))}, pairs.stderr


def test_a_proposals_analysis_parses_the_history_alongside_with_the_verdict_of_each_version_parsed_alone() -> None:
    history = [BASE, EDITS["a nested enum changed"][0]]
    proposed = EDITS["a named type changed incompatibly"][0]
    result = analyse(history, proposed, "FULL_TRANSITIVE", [MONEY], "PROTOBUF", ["common/money.proto"])
    assert result.verdict is not None and result.error is None
    alone = as_json(classify_schemas(P, [parsed(text, MONEY) for text in history], parsed(proposed, MONEY), Mode.FULL_TRANSITIVE))
    assert as_json(result.verdict) == alone and alone["level"] == "breaking"
    broken = analyse([BASE, BASE.replace("int32 count", "int33 count")], proposed, "FULL", [MONEY], "PROTOBUF", ["common/money.proto"])
    assert broken.verdict is None and broken.error is not None and broken.error.startswith("the subject's version 2 does not parse")
