"""JSON Schemas whose definitions refer to one another: each pair of subschemas is compared once a round, a change is
reported at the places it can be met, and recursion is judged at its greatest fixed point. Each breaking finding here
carries a witness document, checked with the draft's own validator: written by one side, refused by the other."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from jsonschema import validators

from bot.domain.compat.changes import Direction
from bot.domain.compat.classify import Mode
from bot.domain.compat.formats import SchemaType, classify_schemas, parse_schema
from bot.domain.compat.memo import PLACES
from bot.domain.jsonschema import diff

J = SchemaType.JSON
D7 = "http://json-schema.org/draft-07/schema#"
D2020 = "https://json-schema.org/draft/2020-12/schema"


def mesh(size: int, links: int, *, widened: bool) -> dict[str, Any]:
    """``size`` definitions, each an object whose ``links`` properties may hold another (or null), in a ring that wraps
    round; the last definition's ``v`` an integer, or any number when ``widened``."""
    definitions = {}
    for i in range(size):
        properties: dict[str, Any] = {f"p{j}": {"oneOf": [{"$ref": f"#/definitions/N{(i + j + 1) % size}"}, {"type": "null"}]}
                                      for j in range(links)}
        properties["v"] = {"type": "number" if widened and i == size - 1 else "integer"}
        definitions[f"N{i}"] = {"type": "object", "properties": properties}
    return {"$schema": D7, "definitions": definitions, "$ref": "#/definitions/N0"}


def valid(schema: dict[str, Any], document: Any) -> bool:
    return bool(validators.validator_for(schema)(schema).is_valid(document))


def at(path: str, value: Any) -> Any:
    """A document holding ``value`` at a dotted path of properties."""
    for name in reversed(path.split(".")):
        value = {name: value}
    return value


def test_definitions_that_refer_to_one_another_are_compared_once_a_pair(monkeypatch: pytest.MonkeyPatch) -> None:
    """24 definitions with 8 links each: more paths than could ever be walked one by one (the walk used to take them all)."""
    old, new = mesh(24, 8, widened=False), mesh(24, 8, widened=True)
    compared: Counter[tuple[Any, ...]] = Counter()
    walk = diff._Diff._compare

    def counting(self: Any, o: Any, o_base: str, u: Any, u_base: str, path: str) -> None:
        compared[(self.forward, id(o), o_base, id(u), u_base)] += 1
        walk(self, o, o_base, u, u_base, path)

    monkeypatch.setattr(diff._Diff, "_compare", counting)
    verdict = classify_schemas(J, [parse_schema(J, json.dumps(old))], parse_schema(J, json.dumps(new)), Mode.FULL)
    assert compared and max(compared.values()) <= 2  # once a round: the change is found, then where recursion meets it
    assert len(compared) < 2 * 25 * 25 * 4  # pairs of the same definition's parts, both directions: not paths
    [widened] = [f for f in verdict.findings if f.rule == "TYPE_EXTENDED"]  # met at more than PLACES places: once
    assert widened.path == "p6.p7.p7.v" and widened.breaks == {Direction.FORWARD}  # the fewest links to N23, then the first in text
    document = at(widened.path, 1.5)  # where the new schema writes what the old one refuses
    assert valid(new, document) and not valid(old, document)
    assert len(verdict.findings) < PLACES
    said = next(f for f in verdict.findings if f.rule == "CHANGES_LISTED_ONCE")  # and the report says so
    assert said.path == "(root)" and not said.breaks and "listed once" in said.message


def test_a_change_met_at_fewer_places_than_the_limit_is_reported_at_each() -> None:
    old, new = mesh(6, 2, widened=False), mesh(6, 2, widened=True)
    verdict = classify_schemas(J, [parse_schema(J, json.dumps(old))], parse_schema(J, json.dumps(new)), Mode.FULL)
    widened = [f for f in verdict.findings if f.rule == "TYPE_EXTENDED"]
    assert len(widened) > 1 and all(f.breaks == {Direction.FORWARD} for f in widened)
    assert "CHANGES_LISTED_ONCE" not in {f.rule for f in verdict.findings}
    for finding in widened:
        document = at(finding.path, 1.5)
        assert valid(new, document) and not valid(old, document), finding.path


def test_a_definition_used_at_several_places_is_reported_at_each() -> None:
    def order(zip_type: str) -> dict[str, Any]:
        address = {"type": "object", "properties": {"zip": {"type": zip_type}}}
        return {"$schema": D2020, "title": "Order", "type": "object", "$defs": {"Address": address},
                "properties": {"shipping": {"$ref": "#/$defs/Address"}, "billing": {"$ref": "#/$defs/Address"},
                               "returns": {"type": "array", "items": {"$ref": "#/$defs/Address"}}}}

    verdict = classify_schemas(J, [parse_schema(J, json.dumps(order("string")))], parse_schema(J, json.dumps(order("integer"))), Mode.FULL)
    assert {(f.rule, f.path) for f in verdict.findings} == {
        ("TYPE_CHANGED", "Order.shipping.zip"), ("TYPE_CHANGED", "Order.billing.zip"), ("TYPE_CHANGED", "Order.returns[].zip")}


def catalogue(*, weighed: bool) -> dict[str, Any]:
    """Items that are books or discs, each linking to a reference or to another item (the recursion is through oneOf)."""
    disc = {"kind": {"const": "disc"}, "next": {"$ref": "#/$defs/Link"}, **({"weight": {"type": "number"}} if weighed else {})}
    return {"$schema": D2020, "$ref": "#/$defs/Item", "$defs": {
        "Ref": {"type": "object", "properties": {"sku": {"type": "string"}}, "required": ["sku"]},
        "Link": {"oneOf": [{"$ref": "#/$defs/Ref"}, {"$ref": "#/$defs/Item"}]},
        "Book": {"type": "object", "properties": {"kind": {"const": "book"}, "next": {"$ref": "#/$defs/Link"}}, "required": ["kind"]},
        "Disc": {"type": "object", "properties": disc, "required": ["kind"]},
        "Item": {"oneOf": [{"$ref": "#/$defs/Book"}, {"$ref": "#/$defs/Disc"}]}}}


def test_recursion_is_judged_at_its_fixed_point() -> None:
    """A book whose next item is a disc is met again through the recursion: the disc's new property breaks it there too,
    which taking the recursion as alike (without a second round) does not see."""
    old, new = catalogue(weighed=False), catalogue(weighed=True)
    verdict = classify_schemas(J, [parse_schema(J, json.dumps(old))], parse_schema(J, json.dumps(new)), Mode.FULL)
    found = {(f.rule, f.path): f.breaks for f in verdict.findings}
    assert found == {("COMBINED_TYPE_SUBSCHEMAS_CHANGED", "(root)"): {Direction.BACKWARD},
                     ("COMBINED_TYPE_SUBSCHEMAS_CHANGED", "next"): {Direction.BACKWARD},
                     ("OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", "weight"): {Direction.BACKWARD}}
    witness = {"kind": "book", "next": {"kind": "disc", "weight": "heavy"}}  # the old schema wrote it; at `next`, no branch now
    assert valid(old, witness) and not valid(new, witness)
    assert not valid(new, witness["next"]) and valid(old, witness["next"])


def test_a_oneof_branch_that_accepts_no_more_than_another_did_does_not_overlap() -> None:
    """The old ``oneOf`` kept its branches apart; a branch that now accepts less than one of them cannot take a document
    that matched another, so no overlap is reported (the registry does not check overlaps at all)."""
    old, new = catalogue(weighed=False), catalogue(weighed=True)
    verdict = classify_schemas(J, [parse_schema(J, json.dumps(old))], parse_schema(J, json.dumps(new)), Mode.FULL)
    assert "ONEOF_BRANCHES_MAY_OVERLAP" not in {f.rule for f in verdict.findings}
    kinds = {"type": "object", "required": ["kind"]}
    before = {**old, "$defs": {**old["$defs"], "Link": {"oneOf": [{"$ref": "#/$defs/Ref"}, kinds]}}}
    after = {**old, "$defs": {**old["$defs"], "Link": {"oneOf": [{"$ref": "#/$defs/Ref"}, {"type": "object"}]}}}
    verdict = classify_schemas(J, [parse_schema(J, json.dumps(before))], parse_schema(J, json.dumps(after)), Mode.FULL)
    assert ("ONEOF_BRANCHES_MAY_OVERLAP", "next") in {(f.rule, f.path) for f in verdict.findings}
    witness = {"kind": "book", "next": {"sku": "a1"}}  # a reference: now it matches both branches, and oneOf refuses it
    assert valid(before, witness) and not valid(after, witness)


def test_definitions_in_a_referenced_schema_that_refer_to_one_another() -> None:
    """The mesh in a schema of its own, named by its URI (a reference the registry holds), and used by the subject's."""
    uri = "https://example.com/mesh.json"
    subject = {"$schema": D7, "title": "Graph", "type": "object", "properties": {"start": {"$ref": f"{uri}#/definitions/N0"}}}

    def parsed(widened: bool) -> Any:
        return parse_schema(J, json.dumps(subject), {uri: json.dumps({**mesh(24, 8, widened=widened), "$id": uri})})

    verdict = classify_schemas(J, [parsed(False)], parsed(True), Mode.FULL)
    [widened] = [f for f in verdict.findings if f.rule == "TYPE_EXTENDED"]
    assert widened.path == "Graph.start.p6.p7.p7.v" and widened.breaks == {Direction.FORWARD}
    assert "CHANGES_LISTED_ONCE" in {f.rule for f in verdict.findings}
