"""A transition's versions and readers, pure: each format's expand and contract versions, the refusals, and who moved
on what evidence."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from bot.domain.compat.analysis import analyse
from bot.domain.lineage.graph import LineageGraph
from bot.domain.lineage.model import Dataset, DatasetId, FieldRef, Job, JobId
from bot.domain.readers import Activity, Census, Declared, Reader, Reading
from bot.domain.transitions.model import Rename, TransitionError, listed, parse_mapping_text, read_mapping
from bot.domain.transitions.plan import plan
from bot.domain.transitions.readers import GROUP, JOB, ReaderRef, Said, find_readers, judge, merged

ADDR = {"type": "record", "name": "Addr", "fields": [{"name": "zip", "type": "string"}]}
V1: dict[str, Any] = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"}, {"name": "userid", "type": "string"}, {"name": "ship", "type": ["null", ADDR], "default": None},
    {"name": "bill", "type": ["null", "Addr"], "default": None}]}


def avro(fields: list[dict[str, Any]]) -> str:
    return json.dumps({**V1, "fields": fields})


def test_avro_renames_come_from_aliases_at_any_depth_and_the_expand_reads_every_version_both_ways() -> None:
    postcode = {"type": "record", "name": "Addr", "fields": [{"name": "postcode", "type": "string", "aliases": ["zip"]}]}
    target = avro([V1["fields"][0], {"name": "userId", "type": "string", "aliases": ["userid"]},
                   {"name": "ship", "type": ["null", postcode], "default": None}, V1["fields"][3]])
    planned = plan("AVRO", json.dumps(V1), target, None)
    assert planned.mapping == (Rename("userid", "userId"), Rename("ship.zip", "ship.postcode"), Rename("bill.zip", "bill.postcode"))  # one type
    expand = json.loads(planned.expand)
    assert [f["name"] for f in expand["fields"]] == ["id", "userid", "userId", "ship", "bill"]
    assert [f["name"] for f in expand["fields"][3]["type"][1]["fields"]] == ["zip", "postcode"]
    verdict = analyse([json.dumps(V1)], planned.expand, "FULL_TRANSITIVE").verdict
    assert verdict is not None and verdict.backward and verdict.forward
    contract = json.loads(planned.contract)
    assert "aliases" not in contract["fields"][1] and "aliases" not in contract["fields"][2]["type"][1]["fields"][0]


def test_avro_a_type_the_old_and_new_field_share_is_defined_once_and_two_definitions_are_refused() -> None:
    v1 = avro([{"name": "home", "type": ADDR}])
    planned = plan("AVRO", v1, avro([{"name": "address", "type": ADDR, "aliases": ["home"]}]), None)
    fields = json.loads(planned.expand)["fields"]
    assert fields[0]["type"]["name"] == "Addr" and fields[1]["type"] == "shop.Addr"
    assert analyse([v1], planned.expand, "BACKWARD_TRANSITIVE").error is None
    other = {**ADDR, "fields": [{"name": "zip", "type": "long"}]}
    with pytest.raises(TransitionError, match="the type shop.Addr would be defined twice, differently"):
        plan("AVRO", v1, avro([{"name": "address", "type": other, "aliases": ["home"]}]), None)


@pytest.mark.parametrize(("mapping", "words"), [
    (None, "nothing to map: no field of the target replaces"),
    ([Rename("nope", "userId")], "nope is not a field of the current version"),
    ([Rename("id", "userId")], "id is still in the target"),
    ([Rename("userid", "zzz")], "zzz is not a field of the target"),
    ([Rename("userid", "ship.zip")], "ship.zip is already a field of the current version"),
    ([Rename("userid", "userId"), Rename("ship", "userId")], "the same new field is named twice"),
])
def test_avro_mappings_that_name_the_wrong_fields_are_refused(mapping: list[Rename] | None, words: str) -> None:
    target = avro([V1["fields"][0], {"name": "userId", "type": "string"}, V1["fields"][2], V1["fields"][3]])
    with pytest.raises(TransitionError, match=words):
        plan("AVRO", json.dumps(V1), target, mapping)


def test_mappings_are_read_from_json_and_from_text() -> None:
    assert read_mapping([{"old": "a", "new": "b"}]) == [Rename("a", "b")]
    assert parse_mapping_text("a=b, c.d=c.e") == [Rename("a", "b"), Rename("c.d", "c.e")]
    for bad in ([], [{"old": "a"}], "a=b", [{"old": 1, "new": "b"}]):
        with pytest.raises(TransitionError):
            read_mapping(bad)
    with pytest.raises(TransitionError, match="OLD=NEW"):
        parse_mapping_text("a:b")


def test_json_schema_the_old_property_stays_required_the_new_one_waits_for_the_contract_through_local_refs() -> None:
    current = {"type": "object", "additionalProperties": False, "required": ["user"], "properties": {"user": {"$ref": "#/$defs/User"}},
               "$defs": {"User": {"type": "object", "additionalProperties": False, "required": ["id"], "properties": {"id": {"type": "string"}}}}}
    target = json.loads(json.dumps(current))
    target["$defs"]["User"]["properties"] = {"key": {"type": "string"}}
    target["$defs"]["User"]["required"] = ["key"]
    planned = plan("JSON", json.dumps(current), json.dumps(target), [Rename("user.id", "user.key")])
    user = json.loads(planned.expand)["$defs"]["User"]
    assert list(user["properties"]) == ["id", "key"] and user["required"] == ["id"]
    assert json.loads(planned.contract) == target
    with pytest.raises(TransitionError, match="nothing to map"):
        plan("JSON", json.dumps(current), json.dumps(target), None)


PROTO = 'syntax = "proto3";\npackage shop;\n\nmessage Order {\n  string id = 1;\n  string userid = 2;\n  Line line = 3;\n\n  message Line {\n    int32 qty = 1;\n  }\n}\n'


def test_protobuf_keeps_the_old_number_beside_the_new_one_and_the_contract_reserves_it() -> None:
    target = PROTO.replace("string userid = 2;", "string user_id = 4;").replace("int32 qty = 1;", "int64 quantity = 2;")
    planned = plan("PROTOBUF", PROTO, target, [Rename("userid", "user_id"), Rename("line.qty", "line.quantity")])
    assert "  string userid = 2;\n  string user_id = 4;" in planned.expand and "    int32 qty = 1;\n    int64 quantity = 2;" in planned.expand
    assert planned.contract.endswith('    int64 quantity = 2;\n    reserved 1;\n    reserved "qty";\n  }\n  reserved 2;\n  reserved "userid";\n}\n')
    verdict = analyse([PROTO], planned.expand, "FULL_TRANSITIVE", schema_type="PROTOBUF").verdict
    assert verdict is not None and verdict.backward and verdict.forward
    with pytest.raises(TransitionError, match="user_id takes number 2, userid's"):
        plan("PROTOBUF", PROTO, PROTO.replace("string userid = 2;", "string user_id = 2;"), [Rename("userid", "user_id")])
    reserving = target.replace("  string id = 1;", "  reserved 2;\n  string id = 1;")
    with pytest.raises(TransitionError, match="the target reserves userid"):
        plan("PROTOBUF", PROTO, reserving, [Rename("userid", "user_id")])


TOPIC, LAKE = DatasetId("kafka://k:9092", "orders"), DatasetId("iceberg://lake", "dwd")


def graph(*jobs: Job) -> LineageGraph:
    return LineageGraph([Dataset(TOPIC, "topic", ["orders-team"], ["userid", "userId", "amount"], "orders-value"),
                         Dataset(LAKE, "table", ["analytics-team"], ["user", "amount"])], jobs)


def reading(source: str, name: str = "report", learned: str = "catalog") -> Job:
    return Job(JobId("spark://x", name), ["analytics-team"], None, [TOPIC], [LAKE], [(FieldRef(TOPIC, source), FieldRef(LAKE, "user"))],
               learned=learned)


def test_readers_move_only_on_evidence_and_the_evidence_is_said() -> None:
    mapping = [Rename("userid", "userId")]
    black_box = Job(JobId("flink://x", "enrich"), ["analytics-team"], None, [TOPIC], [LAKE], [], [LAKE])
    amounts = reading("amount", "fraud")
    at = datetime(2026, 12, 1, tzinfo=UTC)
    census = Census("orders", [Reader(Reading("adhoc", "orders", "EMPTY"), Activity.IDLE, None),
                               Reader(Reading("gone", "orders", "EMPTY"), Activity.IDLE, Declared(None, "billing-team", "attributed"))], at)
    found = find_readers(graph(reading("userid"), black_box, amounts), "orders-value", mapping, census)
    assert [(r.kind, r.name, r.team) for r in found] == [(JOB, "enrich", "analytics-team"), (JOB, "report", "analytics-team"),
                                                         (GROUP, "adhoc", None), (GROUP, "gone", "billing-team")]
    states = {s.ref.name: s for s in judge(found, graph(reading("userid"), black_box, amounts), "orders-value", mapping, census, [])}
    assert not any(s.moved for s in states.values())
    assert states["report"].evidence == "the catalog still reads userid" and "whole topic" in states["enrich"].evidence
    assert "nobody answers for it yet" in states["adhoc"].evidence and "billing-team has not said it moved" in states["gone"].evidence
    retired = Census("orders", [Reader(Reading("gone", "orders", "EMPTY"), Activity.RETIRED, None)], at)
    moved = {s.ref.name: s for s in judge(found, graph(reading("userId", learned="OpenLineage event of 2026-12-02 08:00 UTC")), "orders-value",
                                          mapping, retired, [Said("group:adhoc", "billing-team", "U0000CAROL", at)])}
    assert moved["report"].moved and moved["report"].evidence == "its OpenLineage event of 2026-12-02 08:00 UTC reads userId"
    assert not moved["enrich"].moved and "no longer in the lineage" in moved["enrich"].evidence  # gone from the lineage is no evidence
    assert moved["adhoc"].moved and "U0000CAROL of billing-team said it moved" in moved["adhoc"].evidence
    assert moved["gone"].moved and "retired" in moved["gone"].evidence
    assert [r.name for r in merged(found[:1], [ReaderRef(JOB, "new", "spark://x"), found[0]])] == ["enrich", "new"]


MONEY = 'syntax = "proto3";\npackage acme.common;\n\nmessage Money {\n  string currency = 1;\n  int64 units = 2;\n}\n'


def reads_both_ways(current: str, expand: str) -> bool:
    """Whether the expand version of a Protobuf schema importing ``MONEY`` reads both ways with the current one."""
    verdict = analyse([current], expand, "FULL_TRANSITIVE", [MONEY], "PROTOBUF", ["common/money.proto"]).verdict
    return verdict is not None and verdict.backward and verdict.forward


def test_protobuf_a_schema_with_imports_is_edited_with_them() -> None:
    current = ('syntax = "proto3";\npackage shop;\n\nimport "common/money.proto";\n\nmessage Order {\n  string id = 1;\n'
               '  acme.common.Money price = 2;\n}\n')
    target = current.replace("acme.common.Money price = 2;", "acme.common.Money amount = 3;")
    refs = {"common/money.proto": MONEY}
    planned = plan("PROTOBUF", current, target, [Rename("price", "amount")], refs)
    assert "  acme.common.Money price = 2;\n  acme.common.Money amount = 3;" in planned.expand
    assert reads_both_ways(current, planned.expand)
    with pytest.raises(TransitionError, match="price.currency is still in the target"):  # the import is read: its fields are in both
        plan("PROTOBUF", current, current.replace("price = 2;", "price = 2;\n  string note = 4;"), [Rename("price.currency", "price.code")], refs)


def test_a_rename_in_a_type_used_at_several_places_is_followed_at_each_in_every_format() -> None:
    """One edit renames the field wherever its type is used, so each place is in the mapping and its readers are found:
    given at ship.zip, the rename is at bill.zip too (not at another type's field of the same name)."""
    other = {"type": "record", "name": "Pickup", "fields": [{"name": "zip", "type": "string"}]}
    current = {**V1, "fields": [*V1["fields"], {"name": "pickup", "type": other}]}
    postcode = {"type": "record", "name": "Addr", "fields": [{"name": "postcode", "type": "string"}]}
    target = {**V1, "fields": [V1["fields"][0], V1["fields"][1], {"name": "ship", "type": ["null", postcode], "default": None}, V1["fields"][3],
                               {"name": "pickup", "type": other}]}
    planned = plan("AVRO", json.dumps(current), json.dumps(target), [Rename("ship.zip", "ship.postcode")])
    assert planned.mapping == (Rename("ship.zip", "ship.postcode"), Rename("bill.zip", "bill.postcode"))
    assert [f["name"] for f in json.loads(planned.expand)["fields"][2]["type"][1]["fields"]] == ["zip", "postcode"]  # edited once
    job = reading("bill.zip")
    assert find_readers(graph(job), "orders-value", planned.mapping, None) == [ReaderRef(JOB, "report", "spark://x", "analytics-team")]

    money = "message Money {\n    int64 units = 1;\n  }"
    proto = f'syntax = "proto3";\npackage shop;\n\nmessage Order {{\n  Money total = 1;\n  Money tax = 2;\n\n  {money}\n}}\n'
    renamed = proto.replace("int64 units = 1;", "int64 amount = 2;")
    planned = plan("PROTOBUF", proto, renamed, [Rename("total.units", "total.amount")])
    assert planned.mapping == (Rename("total.units", "total.amount"), Rename("tax.units", "tax.amount"))
    assert planned.expand.count("int64 units = 1;") == 1  # the message is edited once, and still compiles both ways
    verdict = analyse([proto], planned.expand, "FULL_TRANSITIVE", schema_type="PROTOBUF").verdict
    assert verdict is not None and verdict.backward and verdict.forward

    address = {"type": "object", "properties": {"zip": {"type": "string"}}}
    document = {"type": "object", "properties": {"ship": {"$ref": "#/$defs/Address"}, "bill": {"$ref": "#/$defs/Address"},
                                                 "pickup": {"type": "object", "properties": {"zip": {"type": "string"}}}},
                "$defs": {"Address": address}}
    changed = json.loads(json.dumps(document))
    changed["$defs"]["Address"]["properties"] = {"postcode": {"type": "string"}}
    planned = plan("JSON", json.dumps(document), json.dumps(changed), [Rename("bill.zip", "bill.postcode")])
    assert planned.mapping == (Rename("bill.zip", "bill.postcode"), Rename("ship.zip", "ship.postcode"))


def test_the_places_jobs_read_count_however_deep_under_a_type_used_everywhere() -> None:
    """A record used twice at each of 30 levels: the bottom field is at a billion places, none of them listed; a job
    reading it at one place, or reading a whole struct holding it, is a reader of the rename wherever it was given."""
    ladder: dict[str, Any] = {"type": "record", "name": "L30", "fields": [{"name": "v", "type": "int"}]}
    for level in range(29, -1, -1):
        ladder = {"type": "record", "name": f"L{level}", "fields": [{"name": "a", "type": ladder}, {"name": "b", "type": f"L{level + 1}"}]}
    target = json.dumps(ladder).replace('[{"name": "v", "type": "int"}]', '[{"name": "w", "type": "int"}]')
    given, deep, whole = "a." * 30 + "v", "b." * 30 + "v", ".".join(["a", "b"] * 14)
    planned = plan("AVRO", json.dumps(ladder), target, [Rename(given, given[:-1] + "w")], reading=[deep, whole, "a.a.nothing"])
    below = whole + ".a.a.v"  # the shallowest place of the field inside the struct that job reads
    assert planned.mapping == (Rename(given, given[:-1] + "w"), Rename(deep, deep[:-1] + "w"), Rename(below, below[:-1] + "w"))
    many = plan("AVRO", json.dumps(ladder), target, [Rename(given, given[:-1] + "w")], reading=[f"{'b.' * i}{'a.' * (30 - i)}v" for i in range(30)])
    assert len(many.mapping) == 30  # the given place is one of them; the cards show five: "a.a.….v → a.a.….w, … and 25 more"
    assert listed([m.old for m in many.mapping]).endswith(" and 25 more") and listed(["x", "y"]) == "x, y"


def test_a_shared_message_in_a_file_with_imports_is_followed_at_each_place() -> None:
    """Line is used at line and extra, beside fields of an imported Money: the rename given at line.sku is at extra.sku
    too, and the expand still compiles with the import and reads both ways."""
    current = ('syntax = "proto3";\npackage shop;\n\nimport "common/money.proto";\n\nmessage Order {\n  acme.common.Money total = 1;\n'
               '  Line line = 2;\n  Line extra = 3;\n\n  message Line {\n    string sku = 1;\n    acme.common.Money price = 2;\n  }\n}\n')
    target = current.replace("string sku = 1;", "string code = 3;")
    refs = {"common/money.proto": MONEY}
    planned = plan("PROTOBUF", current, target, [Rename("line.sku", "line.code")], refs)
    assert planned.mapping == (Rename("line.sku", "line.code"), Rename("extra.sku", "extra.code"))
    assert planned.expand.count("string sku = 1;") == 1
    assert reads_both_ways(current, planned.expand)
