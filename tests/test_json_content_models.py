"""JSON Schema tuples, partially open objects, dependencies and `unevaluated*`, classified as the registry's rules name them.
Where a change breaks a direction, the test carries a witness document, checked with the draft's own validator: valid under
the schema that wrote it, refused by the reader's, so the expected verdict is the data's, not this project's say-so."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from jsonschema import validators

from bot.domain.avro.paths import lineage_path
from bot.domain.compat.classify import Mode, Verdict
from bot.domain.compat.formats import SchemaType, classify_schemas, parse_schema
from bot.domain.jsonschema.errors import JsonSchemaError
from bot.domain.jsonschema.model import json_field_walk

J = SchemaType.JSON
D7 = "http://json-schema.org/draft-07/schema#"
D2019 = "https://json-schema.org/draft/2019-09/schema"
D2020 = "https://json-schema.org/draft/2020-12/schema"


def doc(draft: str, **properties: Any) -> dict[str, Any]:
    return {"$schema": draft, "title": "Order", "type": "object", "properties": properties}


def verdict(old: dict[str, Any], new: dict[str, Any], *, lenient: bool = False) -> Verdict:
    return classify_schemas(J, [parse_schema(J, json.dumps(old))], parse_schema(J, json.dumps(new)), Mode.FULL, lenient=lenient)


def rules(result: Verdict) -> dict[tuple[str, str], str]:
    return {(f.rule, f.path): str(f.level) for f in result.findings}


def valid(schema: dict[str, Any], document: Any) -> bool:
    return bool(validators.validator_for(schema)(schema).is_valid(document))


def assert_witness(writer: dict[str, Any], reader: dict[str, Any], document: Any) -> None:
    assert valid(writer, document) and not valid(reader, document), "the witness must be written by one and refused by the other"


POINT_07 = doc(D7, point={"type": "array", "items": [{"type": "number"}, {"type": "integer"}], "additionalItems": False})
POINT_2020 = doc(D2020, point={"type": "array", "prefixItems": [{"type": "number"}, {"type": "integer"}], "items": False})


@pytest.mark.parametrize("old", [POINT_07, POINT_2020], ids=["draft-07 items list", "2020-12 prefixItems"])
def test_a_tuple_is_compared_place_by_place_and_its_further_items(old: dict[str, Any]) -> None:
    tuple_word = "prefixItems" if "prefixItems" in old["properties"]["point"] else "items"
    more_word = "items" if tuple_word == "prefixItems" else "additionalItems"

    def point(places: list[Any], more: Any = False) -> dict[str, Any]:
        return {**old, "properties": {"point": {"type": "array", tuple_word: places, more_word: more}}}

    retyped = point([{"type": "number"}, {"type": "string"}])
    assert rules(verdict(old, retyped)) == {("TYPE_CHANGED", "Order.point[1]"): "breaking"}
    assert_witness(old, retyped, {"point": [1.5, 2]})

    longer = point([{"type": "number"}, {"type": "integer"}, {"type": "string"}])
    added = verdict(old, longer)
    assert rules(added) == {("ITEM_ADDED_TO_CLOSED_CONTENT_MODEL", "Order.point[2]"): "breaking"}  # the old reader refuses a third item
    assert added.backward and not added.forward
    assert_witness(longer, old, {"point": [1, 2, "z"]})
    removed = verdict(longer, old)
    assert rules(removed) == {("ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL", "Order.point[2]"): "breaking"} and not removed.backward

    opened = point([{"type": "number"}, {"type": "integer"}], True)
    assert rules(verdict(old, opened)) == {("ADDITIONAL_ITEMS_ADDED", "Order.point[]"): "breaking"} and verdict(old, opened).backward
    onto_open = verdict(opened, point([{"type": "number"}, {"type": "integer"}, {"type": "string"}], True))
    assert rules(onto_open) == {("ITEM_ADDED_TO_OPEN_CONTENT_MODEL", "Order.point[2]"): "breaking"} and not onto_open.backward
    assert_witness(opened, point([{"type": "number"}, {"type": "integer"}, {"type": "string"}], True), {"point": [1, 2, 3]})
    anything = verdict(opened, point([{"type": "number"}, {"type": "integer"}, {}], True))
    assert rules(anything) == {("ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL", "Order.point[2]"): "safe"} and anything.backward

    held = point([{"type": "number"}, {"type": "integer"}], {"type": "string"})
    covered = verdict(held, point([{"type": "number"}, {"type": "integer"}, {"type": "string", "maxLength": 9}], {"type": "string"}))
    assert ("ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", "Order.point[2]") in rules(covered) and not covered.backward
    kept = verdict(held, point([{"type": "number"}, {"type": "integer"}, {"type": "string"}], {"type": "string"}))
    assert rules(kept) == {("ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", "Order.point[2]"): "safe"} and kept.backward


def test_an_object_holding_other_properties_to_a_schema_judges_added_and_removed_properties_by_it() -> None:
    tags = doc(D7, tags={"type": "object", "additionalProperties": {"type": "string"}})
    typed = doc(D7, tags={"type": "object", "additionalProperties": {"type": "string"}, "properties": {"env": {"type": "integer"}}})
    named = doc(D7, tags={"type": "object", "additionalProperties": {"type": "string"}, "properties": {"team": {"type": "string"}}})
    wrong = verdict(tags, typed)
    assert rules(wrong) == {("PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", "Order.tags.env"): "breaking",
                            ("OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", "Order.tags.env"): "breaking",  # as the registry reports it
                            ("TYPE_CHANGED", "Order.tags.env"): "breaking"}
    assert not wrong.backward and not wrong.forward
    assert_witness(tags, typed, {"tags": {"env": "prod"}})
    assert verdict(tags, typed, lenient=True).findings  # lenient allows the added property, not the type it now refuses
    right = verdict(tags, named)
    assert rules(right) == {("PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", "Order.tags.team"): "safe",
                            ("OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", "Order.tags.team"): "safe"}
    assert right.backward and right.forward  # the object held team to a string before, and still does
    back = verdict(named, tags)
    assert rules(back) == {("PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", "Order.tags.team"): "compatible"} and back.backward

    patterned = doc(D2020, meta={"type": "object", "patternProperties": {"^x-": {"type": "string"}}, "additionalProperties": False})
    with_x = doc(D2020, meta={"type": "object", "patternProperties": {"^x-": {"type": "string"}}, "additionalProperties": False,
                              "properties": {"x-id": {"type": "integer"}, "name": {"type": "string"}}})
    found = rules(verdict(patterned, with_x))
    assert found[("PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", "Order.meta.x-id")] == "breaking"  # the pattern held x-id to a string
    assert found[("OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", "Order.meta.name")] == "breaking"  # no pattern: closed before
    assert_witness(patterned, with_x, {"meta": {"x-id": "a"}})


def test_patterns_leave_an_object_not_open_and_a_property_added_by_reference_is_not_an_empty_schema() -> None:
    base = {"$schema": D7, "title": "Order", "type": "object", "properties": {"id": {"type": "string"}},
            "patternProperties": {"^x-": {"type": "string"}}, "additionalProperties": True}
    dropped = verdict(base, {**base, "properties": {}})
    assert rules(dropped) == {("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", "Order.id"): "breaking"}  # the registry counts patterns as not open
    added = verdict({**base, "properties": {}}, base)  # but an older document may have had id, with any value: not the registry's "closed"
    assert rules(added) == {("OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", "Order.id"): "breaking"} and not added.backward
    assert_witness({**base, "properties": {}}, base, {"id": 5})
    anything = {"$schema": D7, "title": "Order", "type": "object", "properties": {}}
    required = {**anything, "properties": {"a": {}}, "required": ["a"]}
    result = verdict(anything, required)  # the registry looks at the empty schema first and calls it compatible
    assert rules(result) == {("REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", "Order.a"): "breaking"} and not result.backward
    assert_witness(anything, required, {})
    defs = {"$schema": D7, "title": "Order", "type": "object", "properties": {"id": {"type": "string"}},
            "definitions": {"Address": {"type": "object", "properties": {"zip": {"type": "string"}}}}}
    referenced = {**defs, "properties": {"id": {"type": "string"}, "ship": {"$ref": "#/definitions/Address"}}}
    result = verdict(defs, referenced)
    assert rules(result) == {("OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", "Order.ship"): "breaking"}, "a $ref is the schema it names"
    assert_witness(defs, referenced, {"ship": 5})


@pytest.mark.parametrize("draft, word", [(D7, "dependencies"), (D2019, "dependentRequired")])
def test_properties_that_require_others_beside_them(draft: str, word: str) -> None:
    old = {**doc(draft, card={"type": "string"}, billing={"type": "string"}, zip={"type": "string"}), word: {"card": ["billing"]}}
    more = {**old, word: {"card": ["billing", "zip"]}}
    result = verdict(old, more)
    assert rules(result) == {("DEPENDENCY_ARRAY_EXTENDED", "Order.card"): "breaking"} and not result.backward and result.forward
    assert_witness(old, more, {"card": "4111", "billing": "home"})
    assert rules(verdict(more, old)) == {("DEPENDENCY_ARRAY_NARROWED", "Order.card"): "breaking"}  # FULL: the old reader fails
    added = verdict({**old, word: {}}, old)
    assert rules(added) == {("DEPENDENCY_ARRAY_ADDED", "Order.card"): "breaking"} and not added.backward
    gone = verdict(old, {**old, word: {}})
    assert rules(gone) == {("DEPENDENCY_ARRAY_REMOVED", "Order.card"): "breaking"} and gone.backward


def test_a_schema_a_property_brings_and_the_limits_on_contains() -> None:
    old = doc(D2020, card={"type": "string"}, cvc={"type": "string"})
    brings = {**old, "dependentSchemas": {"card": {"required": ["cvc"], "properties": {"cvc": {"type": "string"}}}}}
    result = verdict(old, brings)
    assert rules(result) == {("DEPENDENCY_SCHEMA_ADDED", "Order.card"): "breaking"} and not result.backward
    assert_witness(old, brings, {"card": "4111"})
    stricter = {**old, "dependentSchemas": {"card": {"required": ["cvc"], "properties": {"cvc": {"type": "string", "maxLength": 4}}}}}
    assert rules(verdict(brings, stricter)) == {("MAX_LENGTH_ADDED", "Order.cvc"): "breaking"}  # compared where it applies
    assert [f.message.split(". ")[0] for f in verdict(brings, stricter).findings] == ["Order.cvc: `maxLength` was added (4)"]
    assert [f.message.split(". ")[0] for f in verdict(stricter, brings).findings] == ["Order.cvc: `maxLength` was removed (it was 4)"]
    lines = doc(D2020, lines={"type": "array", "contains": {"type": "integer"}, "maxContains": 3})
    fewer = doc(D2020, lines={"type": "array", "contains": {"type": "integer"}, "maxContains": 2})
    assert rules(verdict(lines, fewer)) == {("MAX_CONTAINS_DECREASED", "Order.lines"): "breaking"}
    assert_witness(lines, fewer, {"lines": [1, 2, 3]})


def test_unevaluated_properties_and_items_close_and_open_like_additional_ones() -> None:
    old = doc(D2020, id={"type": "string"})
    closed = {**old, "unevaluatedProperties": False}
    result = verdict(old, closed)
    assert rules(result) == {("UNEVALUATED_PROPERTIES_REMOVED", "Order{}"): "breaking"} and not result.backward
    assert_witness(old, closed, {"id": "1", "extra": True})
    assert verdict(old, closed, lenient=True).backward  # the lenient rules allow closing an object
    assert verdict(closed, old).backward
    items = doc(D2020, tags={"type": "array", "prefixItems": [{"type": "string"}]})
    no_more = doc(D2020, tags={"type": "array", "prefixItems": [{"type": "string"}], "unevaluatedItems": False})
    assert rules(verdict(items, no_more)) == {("UNEVALUATED_ITEMS_REMOVED", "Order.tags[]"): "breaking"}
    assert_witness(items, no_more, {"tags": ["a", "b"]})


def test_tuple_places_reach_lineage_as_their_array() -> None:
    schema = parse_schema(J, json.dumps(doc(D2020, point={"type": "array", "prefixItems": [{"type": "object", "properties": {"x": {}}}]})))
    assert "point.x" in json_field_walk(schema).paths()
    assert lineage_path("Order.point[0].x", "Order") == "point.x" and lineage_path("Order.items[].price", "Order") == "items.price"


def test_the_root_of_an_untitled_schema_reaches_lineage_as_the_whole_record_as_a_titled_one_does() -> None:
    for title in ({"title": "Order"}, {}):
        old = {"$schema": D7, **title, "type": "object", "description": "v1", "properties": {"id": {"type": "string"}}}
        found = verdict(old, {**old, "description": "v2"}).findings
        label = parse_schema(J, json.dumps(old)).label
        assert [(f.rule, lineage_path(f.path, label)) for f in found] == [("DESCRIPTION_CHANGED", "")]  # "": the whole topic


def test_what_the_registry_does_not_compare_is_still_named() -> None:
    old = {"$schema": D7, "title": "Order", "type": "object", "properties": {"id": {"type": "string"}},
           "patternProperties": {"^x-": {"type": "string"}}}
    retyped = {**old, "patternProperties": {"^x-": {"type": "integer"}}}
    result = verdict(old, retyped)
    assert rules(result) == {("PATTERN_PROPERTIES_CHANGED", "Order{}"): "compatible"} and result.backward  # the registry's verdict stands
    assert "^x-" in result.findings[0].message and "does not check" in result.findings[0].message
    assert_witness(old, retyped, {"x-a": "s"})
    described = {**old, "patternProperties": {"^x-": {"type": "string", "description": "vendor fields"}}}
    assert not verdict(old, described).findings  # the same documents either way: nothing to say
    undeclared = {**old, "required": ["tenant"]}
    result = verdict(old, undeclared)
    assert rules(result) == {("REQUIRED_ATTRIBUTE_ADDED", "Order.tenant"): "breaking"} and not result.backward
    assert_witness(old, undeclared, {"id": "1"})


def test_draft_4_exclusive_flags_and_decimal_multiples() -> None:
    d4 = "http://json-schema.org/draft-04/schema#"
    inclusive = {"$schema": d4, "title": "Order", "type": "object", "properties": {"qty": {"type": "number", "minimum": 3}}}
    exclusive = {**inclusive, "properties": {"qty": {"type": "number", "minimum": 3, "exclusiveMinimum": True}}}
    result = verdict(inclusive, exclusive)  # as the registry judges the same change written the draft-6 way
    assert ("EXCLUSIVE_MINIMUM_ADDED", "Order.qty") in rules(result) and not result.backward
    assert_witness(inclusive, exclusive, {"qty": 3})
    unset = {**inclusive, "properties": {"qty": {"type": "number", "minimum": 3, "exclusiveMinimum": False}}}
    assert not verdict(inclusive, unset).findings
    cents = {"title": "Price", "type": "number", "multipleOf": 0.01}
    dimes = {"title": "Price", "type": "number", "multipleOf": 0.1}
    finer = verdict(dimes, cents)  # 0.1 % 0.01 is not 0 in binary floating point; every multiple of 0.1 is one of 0.01
    assert rules(finer) == {("MULTIPLE_OF_REDUCED", "Price"): "breaking"} and finer.backward and not finer.forward
    assert_witness(cents, dimes, 0.05)


def test_all_of_must_match_every_branch_and_constants_keep_their_type() -> None:
    plain = doc(D7, flag={"type": "boolean"})
    both = doc(D7, flag={"allOf": [{"type": "boolean"}, {"const": True}]})
    result = verdict(plain, both)  # one compatible branch of an allOf is not enough: it must match them all
    assert ("SUM_TYPE_EXTENDED", "Order.flag") not in rules(result) and not result.backward
    assert_witness(plain, both, {"flag": False})
    one = doc(D7, n={"const": 1})
    true = doc(D7, n={"const": True})
    assert rules(verdict(one, true)) == {("ENUM_ARRAY_CHANGED", "Order.n"): "breaking"}  # Python's 1 == True is not JSON's
    assert_witness(one, true, {"n": 1})
    assert not verdict(one, doc(D7, n={"const": 1.0})).findings  # 1 and 1.0 are the same number
    assert not verdict(doc(D7, e={"enum": [{"a": 1, "b": 2}]}), doc(D7, e={"enum": [{"b": 2, "a": 1}]})).findings


def test_a_type_dropped_beside_its_keywords_lets_every_other_json_type_through() -> None:
    typed = doc(D7, address={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
                qty={"type": "integer", "minimum": 0}, code={"type": "string", "maxLength": 3})
    untyped = doc(D7, address={"properties": {"city": {"type": "string"}}, "required": ["city"]},
                  qty={"minimum": 0}, code={"maxLength": 3})
    dropped = verdict(typed, untyped)  # the registry reads both as the same object, number and string
    assert rules(dropped) == {("TYPE_NO_LONGER_DECLARED", "Order.address"): "breaking", ("TYPE_NO_LONGER_DECLARED", "Order.qty"): "breaking",
                              ("TYPE_NO_LONGER_DECLARED", "Order.code"): "breaking"}
    assert dropped.backward and not dropped.forward
    for document in ({"address": "Main St 1"}, {"qty": 1.5}, {"code": 12345}):
        assert_witness(untyped, typed, document)
    declared = verdict(untyped, typed)
    assert rules(declared)[("TYPE_DECLARED", "Order.address")] == "breaking" and not declared.backward and declared.forward
    assert not verdict(untyped, untyped).findings
    as_list, as_any_of = doc(D7, v={"type": ["string", "null"]}), doc(D7, v={"anyOf": [{"type": "string"}, {"type": "null"}]})
    assert not verdict(as_list, as_any_of).findings  # a type list is a combination: written as anyOf, it is the same schema


def test_a_one_of_branch_must_not_match_what_another_branch_matches() -> None:
    card = {"type": "object", "properties": {"card": {"type": "string"}}, "required": ["card"]}
    iban = {"type": "object", "properties": {"iban": {"type": "string"}}, "required": ["iban"]}
    one, two = doc(D7, method={"oneOf": [card]}), doc(D7, method={"oneOf": [card, iban]})
    added = verdict(one, two)  # the registry calls this SUM_TYPE_EXTENDED, compatible
    assert rules(added)[("ONEOF_BRANCHES_MAY_OVERLAP", "Order.method")] == "breaking" and not added.backward
    assert_witness(one, two, {"method": {"card": "4242", "iban": "DE00"}})  # one branch before, two now
    told = [{**branch, "properties": {**branch["properties"], "kind": {"const": name}}, "required": [*branch["required"], "kind"]}
            for branch, name in ((card, "card"), (iban, "iban"))]
    discriminated = verdict(doc(D7, method={"oneOf": told[:1]}), doc(D7, method={"oneOf": told}))
    assert rules(discriminated) == {("SUM_TYPE_EXTENDED", "Order.method"): "breaking"} and discriminated.backward  # a required const apart
    closed = [{**branch, "additionalProperties": False} for branch in (card, iban)]
    assert verdict(doc(D7, method={"oneOf": closed[:1]}), doc(D7, method={"oneOf": closed})).backward  # each refuses the other's name
    text = doc(D7, code={"type": "string"})
    short = doc(D7, code={"oneOf": [{"type": "string"}, {"maxLength": 3}]})
    assert ("ONEOF_BRANCHES_MAY_OVERLAP", "Order.code") in rules(verdict(text, short))
    assert_witness(text, short, {"code": "ab"})
    assert verdict(text, doc(D7, code={"oneOf": [{"type": "string"}, {"type": "integer"}]})).backward  # types apart
    small = doc(D7, n={"oneOf": [{"type": "integer", "maximum": 10}]})
    for other, apart in (({"type": "number", "exclusiveMinimum": 10}, True), ({"type": "integer", "minimum": 10}, False)):
        widened = verdict(small, doc(D7, n={"oneOf": [{"type": "integer", "maximum": 10}, other]}))
        assert widened.backward is apart  # ranges that do not meet are apart; 10 meets both of the second pair
    assert_witness(small, doc(D7, n={"oneOf": [{"type": "integer", "maximum": 10}, {"type": "integer", "minimum": 10}]}), {"n": 10})
    short_codes = doc(D7, code={"oneOf": [{"type": "string", "maxLength": 2}]})
    assert verdict(short_codes, doc(D7, code={"oneOf": [{"type": "string", "maxLength": 2}, {"type": "string", "minLength": 3}]})).backward
    nothing = doc(D7, flag={"oneOf": [{}, {}]})  # every value matches both: only a document without the property was valid
    widened = verdict(doc(D7, flag={"oneOf": [{"type": "boolean"}, {}]}), nothing)
    assert not widened.backward  # a branch widened to {} is not unchanged
    assert_witness(doc(D7, flag={"oneOf": [{"type": "boolean"}, {}]}), nothing, {"flag": 1})


def test_combined_branches_pair_by_a_maximum_matching_and_criteria_that_accept_more() -> None:
    def strings(*limits: int) -> list[dict[str, Any]]:
        return [{"type": "string", "maxLength": n} for n in limits]

    # taking the first compatible branch would pair 2 with 5 and leave 4 without one; 2 -> 3 and 4 -> 5 cover both
    paired = verdict(doc(D7, s={"anyOf": strings(2, 4)}), doc(D7, s={"anyOf": strings(5, 3)}))
    assert paired.backward and not paired.forward  # an old reader has no branch for 5 characters
    lost = verdict(doc(D7, s={"anyOf": strings(2, 4)}), doc(D7, s={"anyOf": [*strings(3, 3), {"type": "integer"}]}))
    assert rules(lost)[("COMBINED_TYPE_SUBSCHEMAS_CHANGED", "Order.s")] == "breaking" and not lost.backward  # 4 has none
    assert_witness(doc(D7, s={"anyOf": strings(2, 4)}), doc(D7, s={"anyOf": [*strings(3, 3), {"type": "integer"}]}), {"s": "abcd"})
    relaxed = verdict(doc(D7, n={"oneOf": [{"type": "string"}, {"type": "integer"}]}), doc(D7, n={"anyOf": [{"type": "string"}, {"type": "integer"}]}))
    assert rules(relaxed)[("COMBINED_TYPE_EXTENDED", "Order.n")] and relaxed.backward  # as the registry: anyOf accepts what oneOf did
    base = {"type": "object", "properties": {"id": {"type": "string"}}}
    both = {**doc(D7, v={"allOf": [{"$ref": "#/definitions/Base"}, {"required": ["id"]}]}), "definitions": {"Base": base}}
    one = {**both, "properties": {"v": {"$ref": "#/definitions/Base"}}}
    dropped = verdict(both, one)  # a document that met both constraints meets the one left (the registry's PRODUCT_TYPE_NARROWED)
    assert rules(dropped) == {("PRODUCT_TYPE_NARROWED", "Order.v"): "breaking"} and dropped.backward and not dropped.forward
    assert_witness(one, both, {"v": {}})
    assert not verdict(doc(D7, v={"anyOf": [{"type": "string"}]}), doc(D7, v={"type": "string"})).findings  # a single branch is itself


def test_conditions_property_names_and_contains_are_compared_though_the_registry_does_not() -> None:
    plain = doc(D7, country={"type": "string"})
    us_zip = {**plain, "if": {"properties": {"country": {"const": "US"}}, "required": ["country"]}, "then": {"required": ["zip"]}}
    added = verdict(plain, us_zip)
    assert rules(added) == {("CONDITION_ADDED", "Order"): "breaking"} and not added.backward and added.forward
    assert_witness(plain, us_zip, {"country": "US"})
    typed = verdict(us_zip, {**us_zip, "then": {"properties": {"zip": {"type": "string"}}}})  # zip: 5 met the old `then`
    assert rules(typed) == {("CONDITION_NARROWED", "Order"): "breaking"} and not typed.backward
    assert_witness(us_zip, {**us_zip, "then": {"properties": {"zip": {"type": "string"}}}}, {"country": "US", "zip": 5})
    looser = verdict(us_zip, {**us_zip, "then": {}})
    assert rules(looser) == {("CONDITION_EXTENDED", "Order"): "breaking"} and looser.backward and not looser.forward
    other_if = {**us_zip, "if": {"properties": {"country": {"const": "CA"}}, "required": ["country"]}}
    assert rules(verdict(us_zip, other_if)) == {("CONDITION_CHANGED", "Order"): "breaking"}
    assert_witness(us_zip, other_if, {"country": "CA"})
    short_names = {**plain, "propertyNames": {"maxLength": 4}}
    assert rules(verdict(plain, short_names)) == {("PROPERTY_NAMES_NARROWED", "Order"): "breaking"}
    assert_witness(plain, short_names, {"country": "US"})
    tags = doc(D7, tags={"type": "array", "items": {"type": "string"}})
    urgent = doc(D7, tags={"type": "array", "items": {"type": "string"}, "contains": {"enum": ["urgent"]}})
    assert rules(verdict(tags, urgent)) == {("CONTAINS_ADDED", "Order.tags"): "breaking"}
    assert_witness(tags, urgent, {"tags": ["late"]})
    either = doc(D7, tags={"type": "array", "items": {"type": "string"}, "contains": {"enum": ["urgent", "late"]}})
    widened = verdict(urgent, either)
    assert rules(widened) == {("CONTAINS_EXTENDED", "Order.tags"): "breaking"} and widened.backward and not widened.forward
    assert_witness(either, urgent, {"tags": ["late"]})


def test_a_name_required_without_a_schema_and_then_declared_optional_is_no_longer_required() -> None:
    old = {**doc(D7, a={"type": "string"}), "required": ["zip"]}
    new = doc(D7, a={"type": "string"}, zip={"type": "string"})
    result = verdict(old, new)
    assert rules(result)[("REQUIRED_ATTRIBUTE_REMOVED", "Order.zip")] == "breaking" and not result.forward
    assert_witness(new, old, {"a": "x"})


def test_a_ref_is_followed_beside_any_annotations_and_beside_constraints_as_its_draft_says() -> None:
    def order(draft: str, address: dict[str, Any], zip_type: str) -> dict[str, Any]:
        defs = "$defs" if draft == D2020 else "definitions"
        return {**doc(draft, addr=address), defs: {"A": {"type": "object", "properties": {"zip": {"type": zip_type}}}}}

    noted = {"$ref": "#/definitions/A", "title": "Address", "description": "where it goes", "default": {}}
    retyped = verdict(order(D7, noted, "string"), order(D7, noted, "integer"))  # four annotations beside the $ref hid it
    assert rules(retyped) == {("TYPE_CHANGED", "Order.addr.zip"): "breaking"}
    assert_witness(order(D7, noted, "string"), order(D7, noted, "integer"), {"addr": {"zip": "10115"}})
    ignored = {"$ref": "#/definitions/A", "type": "string"}  # draft 7 ignores what stands beside a $ref
    assert not verdict(order(D7, {"$ref": "#/definitions/A"}, "string"), order(D7, ignored, "string")).findings
    plain, closed = {"$ref": "#/$defs/A"}, {"$ref": "#/$defs/A", "required": ["zip"]}  # 2020-12 applies it beside the $ref
    tightened = verdict(order(D2020, plain, "string"), order(D2020, closed, "string"))
    assert not tightened.backward and tightened.forward
    assert_witness(order(D2020, plain, "string"), order(D2020, closed, "string"), {"addr": {}})
    retyped_2020 = verdict(order(D2020, closed, "string"), order(D2020, closed, "integer"))
    assert ("TYPE_CHANGED", "Order.addr.zip") in rules(retyped_2020) and not retyped_2020.backward


def test_a_ref_beside_a_constraint_inside_another_subjects_2020_12_schema_applies_both() -> None:
    uri = "https://example.com/address.json"
    address = {"$schema": D2020, "$defs": {"A": {"type": "object", "properties": {"zip": {"type": "string"}}}}, "$ref": "#/$defs/A"}
    root = json.dumps(doc(D7, addr={"$ref": uri}))
    closed = {**address, "required": ["zip"]}  # beside the $ref in a 2020-12 document: it applies
    result = classify_schemas(J, [parse_schema(J, root, {uri: json.dumps(address)})], parse_schema(J, root, {uri: json.dumps(closed)}), Mode.FULL)
    assert not result.backward and result.forward


def test_a_tuple_and_a_pattern_inside_another_subjects_schema_reached_by_its_uri(tmp_path: Path) -> None:
    """A schema with imports: the tuple lives in a referenced document, given to `bot classify` as --old-ref/--new-ref."""
    uri = "https://example.com/geo.json"
    geo = {"$schema": D2020, "type": "object", "properties": {"point": {"type": "array", "prefixItems": [{"type": "number"}], "items": False}},
           "patternProperties": {"^x-": {"type": "string"}}}
    moved = json.loads(json.dumps(geo))
    moved["properties"]["point"]["prefixItems"].append({"type": "number"})
    moved["properties"]["x-source"] = {"type": "integer"}
    order = doc(D2020, at={"$ref": uri})
    (tmp_path / "order.json").write_text(json.dumps(order))
    (tmp_path / "geo-1.json").write_text(json.dumps(geo))
    (tmp_path / "geo-2.json").write_text(json.dumps(moved))
    run = subprocess.run([sys.executable, "-m", "bot", "classify", str(tmp_path / "order.json"), str(tmp_path / "order.json"), "--format", "json",
                          "--old-ref", f"{uri}={tmp_path / 'geo-1.json'}", "--new-ref", f"{uri}={tmp_path / 'geo-2.json'}"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    answer = json.loads(run.stdout)
    found = {(c["rule"], c["path"]) for c in answer["changes"]}
    assert ("ITEM_ADDED_TO_CLOSED_CONTENT_MODEL", "Order.at.point[1]") in found
    assert ("PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", "Order.at.x-source") in found and not answer["backward"]
    assert_witness({**geo, "$id": uri}, {**moved, "$id": uri}, {"x-source": "gps"})


@pytest.mark.parametrize("draft", ["http://json-schema.org/draft-04/schema#", D7, D2020])
def test_a_pattern_that_is_not_a_regular_expression_is_refused_with_its_place(draft: str) -> None:
    # draft 4's meta-schema does not ask patternProperties names to be regular expressions; the classifier matches names against them
    old = {"$schema": draft, "title": "Order", "type": "object", "properties": {"tags": {"type": "object", "patternProperties": {"[": {}}}}}
    with pytest.raises(JsonSchemaError, match="at properties/tags/patternProperties: '\\[' is not a"):
        parse_schema(J, json.dumps(old))


def test_keywords_of_several_kinds_in_one_schema_each_bind_as_the_registry_reads_them() -> None:
    colour = doc(D7, colour={"type": "string", "enum": ["red", "blue"]})
    any_colour = doc(D7, colour={"type": "string"})
    dropped = verdict(colour, any_colour)  # the enum beside the type is dropped: more strings are accepted
    assert rules(dropped) == {("PRODUCT_TYPE_NARROWED", "Order.colour"): "breaking"}
    assert dropped.backward and not dropped.forward  # was "TYPE_CHANGED" both ways: older documents are all still valid
    assert "string + enum → string" in dropped.findings[0].message
    assert_witness(any_colour, colour, {"colour": "green"})

    retyped = verdict(colour, doc(D7, colour={"type": "integer", "enum": ["red", "blue"]}))  # no value is both now
    assert rules(retyped) == {("TYPE_CHANGED", "Order.colour"): "breaking"} and not retyped.backward  # was "SAFE, 0 changes"
    assert_witness(colour, doc(D7, colour={"type": "integer", "enum": ["red", "blue"]}), {"colour": "red"})

    extended = verdict(colour, doc(D7, colour={"type": "string", "enum": ["red", "blue", "green"]}))
    assert rules(extended) == {("ENUM_ARRAY_EXTENDED", "Order.colour"): "breaking"}  # no "a branch changed": no one wrote an allOf

    either = {"$schema": D7, "title": "Contact", "type": "object", "properties": {"mail": {"type": "string"}, "phone": {"type": "string"}},
              "anyOf": [{"required": ["mail"]}, {"required": ["phone"]}]}
    phone_number = {**either, "properties": {"mail": {"type": "string"}, "phone": {"type": "integer"}}}
    changed = verdict(either, phone_number)  # a property beside an anyOf: was "SAFE, 0 changes"
    assert rules(changed) == {("TYPE_CHANGED", "Contact.phone"): "breaking"}
    assert not changed.backward and not changed.forward
    assert_witness(either, phone_number, {"phone": "+44 20"})
    loosened = verdict(either, {k: v for k, v in either.items() if k != "anyOf"})
    assert rules(loosened) == {("PRODUCT_TYPE_NARROWED", "Contact"): "breaking"} and loosened.backward and not loosened.forward
    assert_witness({k: v for k, v in either.items() if k != "anyOf"}, either, {})


def test_an_items_schema_added_or_dropped_and_a_changed_const_are_named_as_the_registry_names_them() -> None:
    tags = doc(D7, tags={"type": "array"})
    typed = doc(D7, tags={"type": "array", "items": {"type": "string"}})
    added = verdict(tags, typed)
    assert rules(added) == {("SCHEMA_ADDED", "Order.tags[]"): "breaking"} and not added.backward and added.forward
    assert_witness(tags, typed, {"tags": [1]})
    dropped = verdict(typed, tags)
    assert rules(dropped) == {("SCHEMA_REMOVED", "Order.tags[]"): "breaking"} and dropped.backward and not dropped.forward
    assert not verdict(tags, doc(D7, tags={"type": "array", "items": {}})).findings  # a schema that accepts anything changes nothing

    red, blue = doc(D7, colour={"const": "red"}), doc(D7, colour={"const": "blue"})
    const = verdict(red, blue)
    assert rules(const) == {("ENUM_ARRAY_CHANGED", "Order.colour"): "breaking"}
    assert 'const "red" → "blue"' in const.findings[0].message
