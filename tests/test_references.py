"""Schema references in the classifier: named types from other subjects' schemas, paths through the referencing field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main
from bot.domain.avro.parse import SchemaError, parse, parse_references
from bot.domain.avro.paths import lineage_path
from bot.domain.compat.analysis import analyse, fingerprint
from bot.domain.compat.classify import Mode, classify

GEO = {"type": "record", "name": "Geo", "namespace": "com.acme", "fields": [{"name": "lat", "type": "double"}, {"name": "lon", "type": "double"}]}
ADDRESS = {"type": "record", "name": "Address", "namespace": "com.acme",
           "fields": [{"name": "zip", "type": "string"}, {"name": "geo", "type": ["null", "com.acme.Geo"], "default": None}]}
ORDER = {"type": "record", "name": "Order", "namespace": "com.acme",
         "fields": [{"name": "id", "type": "long"}, {"name": "shipping", "type": "Address"},
                    {"name": "stops", "type": {"type": "array", "items": "com.acme.Address"}}]}


def changed(schema: dict[str, Any], field: str, new_type: Any) -> dict[str, Any]:
    return {**schema, "fields": [{**f, "type": new_type} if f["name"] == field else f for f in schema["fields"]]}


def test_a_change_inside_a_referenced_type_is_found_through_every_field_that_uses_it() -> None:
    old = parse(ORDER, refs=parse_references([GEO, ADDRESS]))
    new = parse(ORDER, refs=parse_references([GEO, changed(ADDRESS, "zip", "int")]))
    verdict = classify([old], new, Mode.FULL)
    assert [(f.path, f.rule) for f in verdict.findings] == [("Order.shipping<Address>.zip", "TYPE_CHANGED"),
                                                            ("Order.stops[]<Address>.zip", "TYPE_CHANGED")]
    assert lineage_path("Order.stops[]<Address>.zip", "Order") == "stops.zip"  # lineage addresses the field, not the type


def test_references_of_references_enter_each_type_once_and_nested_types_do_not_repeat_it() -> None:
    geo2 = changed(GEO, "lat", "float")
    old = parse(ORDER, refs=parse_references([GEO, ADDRESS]))
    new = parse(ORDER, refs=parse_references([geo2, ADDRESS]))
    paths = {f.path for f in classify([old], new, Mode.FULL).findings}
    assert paths == {"Order.shipping<Address>.geo<Geo>.lat", "Order.stops[]<Address>.geo<Geo>.lat"}
    inline = {**ADDRESS, "fields": [ADDRESS["fields"][0], {"name": "geo", "type": ["null", GEO], "default": None}]}
    nested = {f.path for f in classify([parse(ORDER, refs=parse_references([inline]))],
                                       parse(ORDER, refs=parse_references([changed(inline, "geo", ["null", geo2])])), Mode.FULL).findings}
    assert nested == {"Order.shipping<Address>.geo.lat", "Order.stops[]<Address>.geo.lat"}  # Geo is Address's own here


def test_the_same_references_on_both_sides_change_nothing_and_the_shared_type_itself_has_plain_paths() -> None:
    refs = parse_references([GEO, ADDRESS])
    assert classify([parse(ORDER, refs=refs)], parse(ORDER, refs=refs), Mode.FULL).identical
    [address] = parse_references([changed(ADDRESS, "zip", "int")], before=refs[:1])
    assert [f.path for f in classify([refs[1]], address, Mode.FULL).findings] == ["Address.zip"]


def test_a_referencing_schema_without_its_references_or_redefining_them_is_invalid() -> None:
    with pytest.raises(SchemaError, match='unknown type "Address".*referenced schema'):
        parse(ORDER)
    with pytest.raises(SchemaError, match='"com.acme.Address" is defined twice'):
        parse({**ORDER, "fields": [{"name": "shipping", "type": ADDRESS}]}, refs=parse_references([GEO, ADDRESS]))
    with pytest.raises(SchemaError, match="^reference 1 Address.geo: unknown type"):
        parse_references([ADDRESS])  # its own reference (Geo) must come first


def test_the_fingerprint_and_stored_form_include_the_resolved_references() -> None:
    one = parse(ORDER, refs=parse_references([GEO, ADDRESS]))
    other = parse(ORDER, refs=parse_references([GEO, changed(ADDRESS, "zip", "int")]))
    assert fingerprint(one) != fingerprint(other)  # the same text, other referenced types: not the same schema
    analysis = analyse([], json.dumps(ORDER), "FULL", refs=[json.dumps(GEO), json.dumps(ADDRESS)])
    assert analysis.fingerprint == fingerprint(one) and json.loads(analysis.canonical)["fields"][1]["type"]["name"] == "com.acme.Address"
    assert analyse([], json.dumps(ORDER), "FULL").error is not None


@pytest.fixture
def refs(tmp_path: Path) -> dict[str, str]:
    files = {"geo": GEO, "address": ADDRESS, "address2": changed(ADDRESS, "zip", "int"), "order": ORDER, "bad": "{nope"}
    for name, schema in files.items():
        (tmp_path / f"{name}.avsc").write_text(schema if isinstance(schema, str) else json.dumps(schema))
    return {name: str(tmp_path / f"{name}.avsc") for name in files}


def test_classify_takes_ref_old_ref_and_new_ref_files(refs: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["classify", refs["order"], refs["order"], "--ref", refs["geo"], "--old-ref", refs["address"],
                 "--new-ref", refs["address2"], "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["level"] == "breaking" and [c["path"] for c in result["changes"]] == ["Order.shipping<Address>.zip", "Order.stops[]<Address>.zip"]
    assert main(["classify", refs["order"], refs["order"], "--ref", refs["geo"], "--ref", refs["address"]]) == 0
    assert capsys.readouterr().out.startswith("SAFE")
    assert main(["classify", "--history", refs["order"], refs["order"], refs["order"], "--ref", refs["geo"], "--old-ref", refs["address"],
                 "--new-ref", refs["address2"], "--fail-on", "breaking"]) == 1


def test_classify_refuses_bad_reference_files_by_name(refs: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["classify", refs["order"], refs["order"], "--ref", refs["bad"]]) == 2
    assert f"{refs['bad']}: invalid referenced schema: line 1 column 2: malformed JSON" in capsys.readouterr().err
    assert main(["classify", refs["order"], refs["order"], "--ref", refs["address"], "--ref", refs["geo"]]) == 2  # Geo must come first
    assert f"{refs['address']}: invalid referenced schema: Address.geo: unknown type" in capsys.readouterr().err
    assert main(["classify", refs["order"], refs["order"]]) == 2
    assert 'unknown type "Address"' in capsys.readouterr().err
    assert main(["classify", "--pairs", refs["order"], "--ref", refs["geo"]]) == 2
    assert "--ref does not apply" in capsys.readouterr().err


def test_pairs_carry_old_refs_and_new_refs_as_json_or_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = [{"id": "json", "old": ORDER, "new": ORDER, "old_refs": [GEO, ADDRESS], "new_refs": [GEO, changed(ADDRESS, "zip", "int")]},
             {"id": "text", "old": json.dumps(ORDER), "new": json.dumps(ORDER), "old_refs": [json.dumps(GEO), json.dumps(ADDRESS)],
              "new_refs": [json.dumps(GEO), json.dumps(ADDRESS)]},
             {"id": "missing", "old": ORDER, "new": ORDER, "old_refs": [GEO, ADDRESS]},
             {"id": "not-a-list", "old": ORDER, "new": ORDER, "old_refs": ADDRESS},
             {"id": "bad-ref", "old": ORDER, "new": ORDER, "new_refs": [GEO, "{nope"]},
             {"id": "primitive", "old": "null", "new": "null", "old_refs": ["null"]}]
    (tmp_path / "pairs.jsonl").write_text("\n".join(json.dumps(line) for line in lines))
    assert main(["classify", "--pairs", str(tmp_path / "pairs.jsonl")]) == 0
    out = {r["id"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    assert [c["path"] for c in out["json"]["changes"]] == ["Order.shipping<Address>.zip", "Order.stops[]<Address>.zip"]
    assert out["text"]["level"] == "safe" and out["text"]["changes"] == []
    assert out["missing"]["error"].startswith('new: Order.shipping: unknown type "Address"')
    assert out["not-a-list"]["error"] == "line 4: old_refs must be an array of schemas"
    assert out["bad-ref"]["error"].startswith("new_refs: reference 2 line 1 column 2: malformed JSON")
    assert out["primitive"]["level"] == "safe"


def test_the_references_a_schema_does_not_reach_are_named() -> None:
    refs = [json.dumps(GEO), json.dumps(ADDRESS)]
    assert analyse([], json.dumps(ORDER), "FULL", refs=refs).unused == ()  # Geo is reached through Address
    alone = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]}
    assert analyse([], json.dumps(alone), "FULL", refs=refs).unused == (0, 1)
    geo_only = {**alone, "fields": [{"name": "at", "type": "com.acme.Geo"}]}
    assert analyse([], json.dumps(geo_only), "FULL", refs=refs).unused == (1,)
