"""The rules catalogue: every finding the classifier can report, with a stable id.

A rule's ``level`` is its level on its own. A finding can be worse: a change that makes schema
resolution fail in a direction the compatibility mode requires is breaking whatever its rule says
(see ``classify``). Ids never change meaning; a retired id would stay here and name its successor.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Level(enum.IntEnum):
    """How bad a change is; the level of a change is the worst of its findings."""

    SAFE = 0
    COMPATIBLE = 1
    BREAKING = 2

    def __str__(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Level:
        """``safe`` / ``compatible`` / ``breaking`` (any case)."""
        try:
            return cls[text.strip().upper()]
        except KeyError:
            raise ValueError(f"unknown level {text!r}: use safe, compatible or breaking") from None


@dataclass(frozen=True)
class Rule:
    """One kind of finding: id, level on its own, one-line purpose, the message template, and the schema formats
    (the registry's ``schemaType`` names) it is reported for."""

    id: str
    level: Level
    purpose: str
    template: str
    formats: tuple[str, ...] = ("AVRO",)


SAFE, COMPATIBLE, BREAKING = Level.SAFE, Level.COMPATIBLE, Level.BREAKING
PROTOBUF = ("PROTOBUF",)

CATALOGUE: tuple[Rule, ...] = (
    # --- records and fields ---------------------------------------------------------------------
    Rule("FIELD_ADDED_WITH_DEFAULT", SAFE, "a field was added with a default",
         "Field {path} ({new}) was added with default {detail}: old consumers ignore it, new consumers reading older data get {detail}."),
    Rule("FIELD_ADDED_WITHOUT_DEFAULT", COMPATIBLE, "a field was added without a default",
         "Field {path} ({new}) was added without a default."),
    Rule("FIELD_REMOVED_WITH_DEFAULT", COMPATIBLE, "a field that had a default was removed",
         "Field {path} ({old}) was removed: consumers still on the old schema silently get its default {detail} instead of real values."),
    Rule("FIELD_REMOVED_WITHOUT_DEFAULT", COMPATIBLE, "a field without a default was removed",
         "Field {path} ({old}) was removed and had no default."),
    Rule("FIELD_RENAMED", COMPATIBLE, "a field was renamed, keeping the old name as an alias",
         "Field {path} was renamed from {detail} (the new schema keeps the old name as an alias)."),
    Rule("FIELD_ADDED_WITH_ALIAS", COMPATIBLE, "a field was added beside the one its alias names (a transition's expand step)",
         "Field {path} ({new}) was added beside {detail}, which it names as an alias: readers on the new schema read {detail}'s value "
         "from older data. Avro resolves aliases by rewriting the writer's schema, so an implementation that does so literally (Java) "
         "finds {detail} missing in data written before this version: give {detail} a default, or read older data with its own schema."),
    Rule("FIELD_ALIAS_SHADOWED", COMPATIBLE, "a field kept by its name names another field of the schema it reads as an alias",
         "Field {path} is read by its own name and also names {detail}, another field of the data it reads, as an alias. Avro "
         "resolves aliases by rewriting the writer's schema, which then holds two fields called {path}: readers that do so "
         "(fastavro) cannot read that data, though checkers that match names first (Confluent's) accept it. Drop the alias."),
    Rule("FIELD_ALIAS_TAKEN", COMPATIBLE, "a field without a default names a field of the schema it reads as an alias that a later field also names",
         "Field {path} names {detail} as an alias, and so does a later field of the same record, which takes it: Avro resolves "
         "aliases by rewriting the writer's schema, renaming {detail} once, to the last field that names it. {path} has no "
         "default, so readers that rewrite (fastavro, Java's decoder) cannot read that data, though checkers that look each "
         "field up alone (Confluent's) accept it. Give {path} a default, or drop the alias from one of the two."),
    Rule("FIELDS_REORDERED", SAFE, "the fields of a record changed order",
         "Fields of {path} changed order: readers resolve by name and are unaffected, but the schema fingerprint changes."),
    Rule("FIELD_ORDER_CHANGED", COMPATIBLE, "a field's sort order attribute changed",
         "Sort order of {path} changed from {detail}: sorted data and comparisons change."),
    Rule("DEFAULT_ADDED", SAFE, "a field gained a default",
         "Field {path} now has default {detail}."),
    Rule("DEFAULT_CHANGED", COMPATIBLE, "a field's default changed",
         "Default of {path} changed from {detail}: consumers that fill in missing values now get a different value."),
    Rule("DEFAULT_REMOVED", COMPATIBLE, "a field lost its default",
         "Field {path} lost its default {detail}: data written without this field can no longer be read by the new schema, and removing the field later will break old consumers."),
    # --- types ----------------------------------------------------------------------------------
    Rule("TYPE_CHANGED", COMPATIBLE, "a type changed to one Avro cannot convert",
         "{path} changed from {old} to {new}, which Avro cannot convert."),
    Rule("TYPE_PROMOTED", COMPATIBLE, "a numeric type was widened without loss (int to long or double, float to double)",
         "{path} was widened from {old} to {new}."),
    Rule("TYPE_PROMOTED_LOSSY", COMPATIBLE, "a numeric type was promoted with a loss of precision (int or long to float, long to double)",
         "{path} changed from {old} to {new}: Avro promotes the values, but integers above 2^24 (float) or 2^53 (double) are rounded."),
    Rule("TYPE_NARROWED", COMPATIBLE, "a numeric type was narrowed (the reverse of a promotion)",
         "{path} was narrowed from {old} to {new}."),
    Rule("STRING_BYTES_SWAPPED", COMPATIBLE, "a field changed between string and bytes",
         "{path} changed from {old} to {new}: the data resolves, but consumers now get {detail}."),
    Rule("UNION_BRANCH_ADDED", COMPATIBLE, "a union (or a plain type made into one) accepts a new type",
         "{path} now also accepts {detail}."),
    Rule("UNION_BRANCH_REMOVED", COMPATIBLE, "a union no longer accepts one of its types",
         "{path} no longer accepts {detail}."),
    Rule("UNION_REORDERED", SAFE, "the branches of a union changed order",
         "Branches of the union at {path} changed order: readers resolve by type, but the schema fingerprint changes."),
    Rule("FIXED_SIZE_CHANGED", COMPATIBLE, "a fixed type changed size",
         "{path} changed size from {detail} bytes."),
    Rule("NAME_CHANGED", COMPATIBLE, "a named type was renamed without an alias",
         "{path}: type {detail} without an alias; schema resolution matches records, enums and fixed by name."),
    Rule("TYPE_RENAMED", COMPATIBLE, "a named type was renamed, keeping the old name as an alias",
         "{path}: type renamed {detail} (the new schema keeps the old name as an alias)."),
    Rule("NAMESPACE_CHANGED", COMPATIBLE, "a named type moved to another namespace",
         "{path}: type moved from namespace {detail}: resolution ignores namespaces, but generated classes change package and consumers that compile against them must be rebuilt."),
    # --- logical types --------------------------------------------------------------------------
    Rule("LOGICAL_TYPE_CHANGED", BREAKING, "a logical type changed (e.g. timestamp-millis to timestamp-micros)",
         "{path} changed logical type from {detail}: the bytes still decode, but every value changes meaning."),
    Rule("LOGICAL_TYPE_ADDED", BREAKING, "a logical type was added to a plain type",
         "{path} gained logical type {detail}: consumers that read plain values now get converted ones (and the reverse), so values change meaning."),
    Rule("LOGICAL_TYPE_REMOVED", BREAKING, "a logical type was removed",
         "{path} lost logical type {detail}: consumers that expected converted values now get raw numbers or bytes."),
    Rule("DECIMAL_PRECISION_CHANGED", BREAKING, "a decimal's precision changed",
         "{path} changed decimal precision from {detail}: the specification says decimals resolve only with equal precision and scale."),
    Rule("DECIMAL_SCALE_CHANGED", BREAKING, "a decimal's scale changed",
         "{path} changed decimal scale from {detail}: the same bytes now mean a value 10^n times larger or smaller."),
    # --- enums ----------------------------------------------------------------------------------
    Rule("ENUM_SYMBOL_ADDED", COMPATIBLE, "an enum gained symbols",
         "Enum {path} gained {detail}."),
    Rule("ENUM_SYMBOL_REMOVED", COMPATIBLE, "an enum lost symbols",
         "Enum {path} lost {detail}."),
    Rule("ENUM_DEFAULT_CHANGED", COMPATIBLE, "an enum's default (used for unknown symbols) changed",
         "Enum {path} default changed from {detail}: consumers meeting unknown symbols now see a different value."),
    Rule("ENUM_SYMBOLS_REORDERED", COMPATIBLE, "an enum's symbols changed order",
         "Symbols of enum {path} changed order: values resolve by name, but sort order and ordinals in generated code change."),
    # --- metadata -------------------------------------------------------------------------------
    Rule("DOC_CHANGED", SAFE, "only documentation changed",
         "Documentation of {path} changed."),
    Rule("ALIAS_ADDED", SAFE, "aliases were added",
         "{path} gained alias(es) {detail}."),
    Rule("ALIAS_REMOVED", COMPATIBLE, "aliases were removed",
         "{path} lost alias(es) {detail}: data written under those old names can no longer be matched."),
    Rule("PROPERTY_CHANGED", SAFE, "custom attributes changed",
         "Custom attribute(s) {detail} of {path} changed: Avro ignores them, tools that read them (code generators, connectors) may not."),
)

# --- Protobuf: the registry's difference names, and ours where it sees nothing ----------------------------------
CATALOGUE += (
    Rule("PACKAGE_CHANGED", COMPATIBLE, "the file's package changed", "The package changed from {old} to {new}: every type's full name changes.",
         PROTOBUF),
    Rule("MESSAGE_ADDED", SAFE, "a message was added", "Message {detail} was added.", PROTOBUF),
    Rule("MESSAGE_REMOVED", COMPATIBLE, "a message was removed", "Message {detail} was removed.", PROTOBUF),
    Rule("MESSAGE_MOVED", SAFE, "a message moved among its siblings",
         "Message {detail} moved: its index changes, which serialized message indexes follow by schema id.", PROTOBUF),
    Rule("ENUM_ADDED", SAFE, "an enum was added", "Enum {detail} was added.", PROTOBUF),
    Rule("ENUM_REMOVED", COMPATIBLE, "an enum was removed", "Enum {detail} was removed.", PROTOBUF),
    Rule("ENUM_CONST_ADDED", COMPATIBLE, "an enum value was added",
         "Enum value {detail} was added: consumers on the old schema see an unknown value.", PROTOBUF),
    Rule("ENUM_CONST_REMOVED", COMPATIBLE, "an enum value was removed",
         "Enum value {detail} was removed: data that has it reads as an unknown value.", PROTOBUF),
    Rule("ENUM_CONST_CHANGED", COMPATIBLE, "an enum value was renamed at the same number",
         "Enum value {detail} was renamed from {old} to {new}: the wire is the same, JSON and generated code change.", PROTOBUF),
    Rule("FIELD_ADDED", SAFE, "a field was added", "Field {path} ({new}, number {detail}) was added: old consumers skip it.", PROTOBUF),
    Rule("FIELD_REMOVED", COMPATIBLE, "a field was removed",
         "Field {path} ({old}, number {detail}) was removed: consumers still on the old schema read its default.", PROTOBUF),
    Rule("REQUIRED_FIELD_ADDED", COMPATIBLE, "a proto2 required field was added",
         "Required field {path} ({new}, number {detail}) was added: data written without it fails to parse.", PROTOBUF),
    Rule("REQUIRED_FIELD_REMOVED", COMPATIBLE, "a proto2 required field was removed",
         "Required field {path} ({old}, number {detail}) was removed: consumers on the old schema fail on data without it.", PROTOBUF),
    Rule("FIELD_NAME_CHANGED", COMPATIBLE, "a field was renamed at the same number",
         "Field number {detail} was renamed from {old} to {new}: the wire is the same, but its JSON name and generated accessors change.",
         PROTOBUF),
    Rule("FIELD_KIND_CHANGED", COMPATIBLE, "a field changed between scalar, message and map",
         "{path} changed from {old} to {new}: the wire encodings differ.", PROTOBUF),
    Rule("FIELD_SCALAR_KIND_CHANGED", COMPATIBLE, "a scalar field changed to a type with another wire encoding",
         "{path} changed from {old} to {new}, which the wire does not convert.", PROTOBUF),
    Rule("FIELD_NAMED_TYPE_CHANGED", COMPATIBLE, "a field's message type changed",
         "{path}: {detail}.", PROTOBUF),
    Rule("FIELD_NUMERIC_LABEL_CHANGED", COMPATIBLE, "a numeric field's label changed (optional, required, repeated)",
         "{path} changed from {old} to {new}: the registry refuses any label change of a numeric field "
         "(repeated numbers are packed, which a singular reader does not read).", PROTOBUF),
    Rule("FIELD_STRING_OR_BYTES_LABEL_CHANGED", COMPATIBLE, "a string or bytes field's label changed (optional, required, repeated)",
         "{path} changed from {old} to {new}: the wire reads either (a singular reader keeps the last of several values).", PROTOBUF),
    Rule("FIELD_MADE_REQUIRED", COMPATIBLE, "an existing field became required (proto2 `required`, Editions' `LEGACY_REQUIRED`)",
         "{path} (number {detail}) changed from {old} to required: a reader that requires it fails on data written without it. "
         "The registry does not check this for a string, bytes or message field.", PROTOBUF),
    Rule("FIELD_NO_LONGER_REQUIRED", COMPATIBLE, "a required field became optional or repeated",
         "{path} (number {detail}) changed from required to {new}: a reader that requires it fails on data written without it. "
         "The registry does not check this for a string, bytes or message field.", PROTOBUF),
    Rule("FIELD_ENCODING_CHANGED", COMPATIBLE, "a message field changed between length-prefixed and delimited (group) encoding",
         "{path} changed from {old} to {new}: a reader meets another wire type and drops the field as unknown. "
         "The registry does not check this.", PROTOBUF),
    Rule("ONEOF_ADDED", SAFE, "a oneof was added", "Oneof {path} was added.", PROTOBUF),
    Rule("ONEOF_REMOVED", COMPATIBLE, "a oneof was removed", "Oneof {path} was removed.", PROTOBUF),
    Rule("ONEOF_FIELD_ADDED", SAFE, "a field was added to a oneof", "Field {path} ({new}) was added to oneof {detail}.", PROTOBUF),
    Rule("ONEOF_FIELD_REMOVED", COMPATIBLE, "a field of a oneof was removed",
         "Field {detail} was removed: data that set it reads as none of the oneof set.", PROTOBUF),
    Rule("ONEOF_FIELD_MOVED_TO_TOP_LEVEL", SAFE, "a field left its oneof",
         "Field {path} left oneof {detail}: it is no longer exclusive with the others, and a reader that still has the oneof keeps "
         "only the last of those set together.", PROTOBUF),
    Rule("MULTIPLE_FIELDS_MOVED_TO_ONEOF", COMPATIBLE, "several existing fields were moved into one oneof",
         "Fields were moved into oneof {path}: data that set several of them keeps only the last.", PROTOBUF),
    Rule("FIELD_MOVED_TO_EXISTING_ONEOF", COMPATIBLE, "an existing field was moved into an existing oneof",
         "A field was moved into oneof {path}, beside fields it could be set with before: data that set both keeps only the last.",
         PROTOBUF),
    Rule("FIELD_NUMBER_NOT_RESERVED", COMPATIBLE, "a deleted field's number or name is not reserved",
         "Field {path} was deleted without reserving its {detail}: a later field may take it and misread old data "
         "(add `reserved`). The registry does not check this.", PROTOBUF),
    Rule("FIELD_NUMBER_REUSED", BREAKING, "a field number that meant another field in an earlier version is taken again",
         "{path} takes number {detail}, which was {old} until it was deleted: data still in the topic from then reads as {new} "
         "(reserve deleted numbers; use a new one). Neither the registry nor Buf sees this: it takes the subject's whole history.", PROTOBUF),
    Rule("FIELD_NUMBER_UNRESERVED", COMPATIBLE, "a reserved field number is no longer reserved",
         "{path} no longer reserves {detail}: a later field may take a number whose old data is still in the topic. "
         "The registry does not check this.", PROTOBUF),
    Rule("FIELD_TYPE_CHANGED_SAME_WIRE", COMPATIBLE, "a scalar type changed within one wire encoding",
         "{path} changed from {old} to {new}: the wire reads it, but values outside the new type's range are truncated or change sign "
         "(the language guide's compatible groups). The registry does not check this.", PROTOBUF),
    Rule("FIELD_JSON_CHANGED", COMPATIBLE, "a wire-compatible type change that changes the JSON encoding",
         "{path} changed from {old} to {new}: the wire reads it, but Protobuf's JSON writes {detail}, so JSON consumers "
         "see another type. The registry does not check this.", PROTOBUF),
    Rule("FIELD_ENUM_CHANGED", COMPATIBLE, "an enum field now has another enum type",
         "{path} changed from enum {old} to enum {new}: the wire keeps each value's number, which now means {new}'s value "
         "of that number (or none: an unknown value), and JSON writes {new}'s names. The registry does not check this.", PROTOBUF),
)

# --- JSON Schema: the registry's difference names (its strict and lenient sets decide), and ours for `format` ---
JSON = ("JSON",)
_LIMITS = (("MAX_LENGTH", "maxLength", "longest string"), ("MIN_LENGTH", "minLength", "shortest string"), ("MAXIMUM", "maximum", "largest value"),
           ("MINIMUM", "minimum", "smallest value"), ("EXCLUSIVE_MAXIMUM", "exclusiveMaximum", "exclusive upper bound"),
           ("EXCLUSIVE_MINIMUM", "exclusiveMinimum", "exclusive lower bound"), ("MAX_ITEMS", "maxItems", "most items"),
           ("MIN_ITEMS", "minItems", "fewest items"), ("MAX_PROPERTIES", "maxProperties", "most properties"),
           ("MIN_PROPERTIES", "minProperties", "fewest properties"), ("MAX_CONTAINS", "maxContains", "most items matching `contains`"),
           ("MIN_CONTAINS", "minContains", "fewest items matching `contains`"))
CATALOGUE += tuple(
    Rule(f"{name}_{change}", COMPATIBLE, f"`{word}` ({what}) {verb}", f"{{path}}: `{word}` {verb} ({values}).", JSON)
    for name, word, what in _LIMITS
    for change, verb, values in (("ADDED", "was added", "{new}"), ("REMOVED", "was removed", "it was {old}"),
                                 ("INCREASED", "was raised", "{old} → {new}"), ("DECREASED", "was lowered", "{old} → {new}"))
) + (
    Rule("TYPE_CHANGED", COMPATIBLE, "a JSON type changed", "{path} changed from {old} to {new}: documents of one are not valid under the other.",
         JSON),
    Rule("TYPE_EXTENDED", COMPATIBLE, "integer became number", "{path} now accepts any number, not only integers ({old} → {new}).", JSON),
    Rule("TYPE_DECLARED", COMPATIBLE, "a `type` was declared beside keywords that bound only values of that type",
         "{path} now declares `type` {new}: documents where it held another JSON type were valid, and fail now. The registry does not "
         "check this.", JSON),
    Rule("TYPE_NO_LONGER_DECLARED", COMPATIBLE, "a `type` was dropped, leaving keywords that bind only values of that type",
         "{path} no longer declares `type` {old}: any JSON type is valid there now, as keywords such as `properties`, `maxLength` or "
         "`minimum` bind only values of their own type. The registry does not check this.", JSON),
    Rule("ONEOF_BRANCHES_MAY_OVERLAP", COMPATIBLE, "a new or changed `oneOf` branch is not provably exclusive of another",
         "{path}: `oneOf` branches {detail} may both match a document the other schema accepted, and `oneOf` refuses a document "
         "that matches two. Make them exclusive (for objects, a required property with a different `const` in each). "
         "The registry does not check this.", JSON),
    Rule("PROPERTY_NAMES_NARROWED", COMPATIBLE, "`propertyNames` refuses names it accepted",
         "{path}: `propertyNames` now refuses names it accepted, so documents with such a property fail. The registry does not check this.",
         JSON),
    Rule("PROPERTY_NAMES_EXTENDED", COMPATIBLE, "`propertyNames` changed and accepts every name it did",
         "{path}: `propertyNames` changed and accepts every name it accepted. The registry does not check this.", JSON),
    Rule("CONTAINS_ADDED", COMPATIBLE, "`contains` was added", "{path} must now hold an item that matches `contains`: arrays without "
         "one fail. The registry does not check this.", JSON),
    Rule("CONTAINS_REMOVED", COMPATIBLE, "`contains` was removed", "{path} no longer needs an item that matches `contains`. "
         "The registry does not check this.", JSON),
    Rule("CONTAINS_NARROWED", COMPATIBLE, "`contains` matches fewer items", "{path}: `contains` now matches fewer items, so arrays "
         "whose only match it no longer matches fail. The registry does not check this.", JSON),
    Rule("CONTAINS_EXTENDED", COMPATIBLE, "`contains` changed and matches every item it did",
         "{path}: `contains` changed and matches every item it matched. The registry does not check this.", JSON),
    Rule("CONDITION_ADDED", COMPATIBLE, "`if`/`then`/`else` was added", "{path} now has a condition (`if` with `then` or `else`): "
         "values that do not meet its branch fail. The registry does not check this.", JSON),
    Rule("CONDITION_REMOVED", COMPATIBLE, "`if`/`then`/`else` was removed", "{path} no longer has a condition (`if` with `then` or "
         "`else`). The registry does not check this.", JSON),
    Rule("CONDITION_CHANGED", COMPATIBLE, "an `if` changed", "{path}: its `if` changed, so values may meet the other branch "
         "(`then` or `else`) than before. The registry does not check this.", JSON),
    Rule("CONDITION_NARROWED", COMPATIBLE, "a `then` or `else` refuses what it accepted",
         "{path}: a `then` or `else` now refuses values it accepted. The registry does not check this.", JSON),
    Rule("CONDITION_EXTENDED", COMPATIBLE, "a `then` or `else` changed and accepts all it did",
         "{path}: a `then` or `else` changed and accepts every value it accepted. The registry does not check this.", JSON),
    Rule("TYPE_NARROWED", COMPATIBLE, "number became integer",
         "{path} now accepts only integers ({old} → {new}): documents with fractions fail, and consumers that parse it as a decimal change "
         "their type (semantic drift).", JSON),
    Rule("DEFAULT_CHANGED", COMPATIBLE, "a default changed", "The default of {path} changed from {old} to {new}.", JSON),
    Rule("ID_CHANGED", SAFE, "`$id` changed", "{path}: `$id` changed from {old} to {new}.", JSON),
    Rule("TITLE_CHANGED", SAFE, "a title changed", "{path}: title changed from {old} to {new}.", JSON),
    Rule("DESCRIPTION_CHANGED", SAFE, "a description changed", "{path}: description changed.", JSON),
    Rule("FORMAT_ADDED", COMPATIBLE, "a `format` was added", "{path} gained format {new}: validators that assert formats refuse other strings.",
         JSON),
    Rule("FORMAT_REMOVED", COMPATIBLE, "a `format` was removed", "{path} lost format {old}: consumers that parsed it as {old} may meet other strings.",
         JSON),
    Rule("FORMAT_CHANGED", COMPATIBLE, "a `format` changed (semantic drift)",
         "{path} changed format from {old} to {new}: the same strings now mean something else to consumers that parse them. The registry "
         "does not check this.", JSON),
    Rule("PATTERN_ADDED", COMPATIBLE, "a `pattern` was added", "{path} gained pattern {new}.", JSON),
    Rule("PATTERN_REMOVED", COMPATIBLE, "a `pattern` was removed", "{path} lost pattern {old}.", JSON),
    Rule("PATTERN_CHANGED", COMPATIBLE, "a `pattern` changed", "{path}: pattern changed from {old} to {new}.", JSON),
    Rule("MULTIPLE_OF_ADDED", COMPATIBLE, "`multipleOf` was added", "{path} must now be a multiple of {new}.", JSON),
    Rule("MULTIPLE_OF_REMOVED", COMPATIBLE, "`multipleOf` was removed", "{path} need no longer be a multiple of {old}.", JSON),
    Rule("MULTIPLE_OF_REDUCED", COMPATIBLE, "`multipleOf` became a divisor of what it was", "{path}: multipleOf {old} → {new} accepts more.", JSON),
    Rule("MULTIPLE_OF_EXPANDED", COMPATIBLE, "`multipleOf` became a multiple of what it was", "{path}: multipleOf {old} → {new} accepts fewer.",
         JSON),
    Rule("MULTIPLE_OF_CHANGED", COMPATIBLE, "`multipleOf` changed otherwise", "{path}: multipleOf changed from {old} to {new}.", JSON),
    Rule("ENUM_ARRAY_EXTENDED", COMPATIBLE, "an enum gained values", "{path} gained enum value(s) {detail}.", JSON),
    Rule("ENUM_ARRAY_NARROWED", COMPATIBLE, "an enum lost values", "{path} lost enum value(s) {detail}.", JSON),
    Rule("ENUM_ARRAY_CHANGED", COMPATIBLE, "an enum's values changed", "{path}: enum values changed ({detail}).", JSON),
    Rule("COMBINED_TYPE_CHANGED", COMPATIBLE, "allOf, anyOf and oneOf swapped", "{path} changed from {old} to {new}.", JSON),
    Rule("COMBINED_TYPE_EXTENDED", COMPATIBLE, "allOf, anyOf or oneOf changed to one that accepts at least as much",
         "{path} changed from {old} to {new}, which accepts what its branches accepted before.", JSON),
    Rule("COMBINED_TYPE_SUBSCHEMAS_CHANGED", COMPATIBLE, "the branches of a combined schema changed", "{path}: a branch changed incompatibly.",
         JSON),
    Rule("SUM_TYPE_EXTENDED", COMPATIBLE, "anyOf/oneOf gained a branch (or a type became one)", "{path} now also accepts another branch.", JSON),
    Rule("SUM_TYPE_NARROWED", COMPATIBLE, "anyOf/oneOf lost a branch", "{path} accepts one branch less ({old} → {new}).", JSON),
    Rule("PRODUCT_TYPE_EXTENDED", COMPATIBLE, "allOf gained a branch", "{path} must now also match another schema ({old} → {new}).", JSON),
    Rule("PRODUCT_TYPE_NARROWED", COMPATIBLE, "allOf lost a branch", "{path} must match fewer schemas ({old} → {new}).", JSON),
    Rule("NOT_TYPE_EXTENDED", COMPATIBLE, "a `not` refuses more", "{path}: its `not` now refuses more documents.", JSON),
    Rule("NOT_TYPE_NARROWED", COMPATIBLE, "a `not` refuses less", "{path}: its `not` now refuses fewer documents.", JSON),
    Rule("REQUIRED_ATTRIBUTE_ADDED", COMPATIBLE, "an existing property became required",
         "Property {detail} ({path}) became required: documents without it are refused.", JSON),
    Rule("REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED", COMPATIBLE, "an existing property with a default became required",
         "Property {detail} ({path}) became required; it has a default.", JSON),
    Rule("REQUIRED_ATTRIBUTE_REMOVED", COMPATIBLE, "a property is no longer required",
         "Property {detail} ({path}) is no longer required: consumers may meet documents without it.", JSON),
    Rule("PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL", COMPATIBLE, "a property was removed from an open object",
         "Property {detail} ({path}) was removed; the object stays open, so it is still allowed, with any value.", JSON),
    Rule("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", COMPATIBLE, "a property was removed from a closed object",
         "Property {detail} ({path}) was removed from an object that leaves no other property open (`additionalProperties: false`, or "
         "`patternProperties` that do not match it): the registry counts documents that have it as refused (keep it, or open the object; "
         "the registry's lenient mode allows it).", JSON),
    Rule("PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL", SAFE, "a forbidden (false) property was removed from a closed object",
         "Property {detail} ({path}), which no document could have, was removed.", JSON),
    Rule("PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL", SAFE, "a property accepting anything was added to an open object",
         "Property {detail} ({path}) was added, accepting any value, as the open object already did.", JSON),
    Rule("OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", COMPATIBLE, "an optional property was added to an open object",
         "Property {detail} ({path}, {new}) was added to an open object: older documents may already carry {detail} with another type, so "
         "the registry's strict rules refuse it. Close the object (`additionalProperties: false`) from the first version, or use the "
         "registry's lenient mode, to let properties be added.", JSON),
    Rule("REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", COMPATIBLE, "a required property was added to an open object",
         "Required property {detail} ({path}, {new}) was added: older documents do not have it.", JSON),
    Rule("REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL", COMPATIBLE, "a required property with a default was added to an open object",
         "Required property {detail} ({path}, {new}) with a default was added to an open object: older documents may carry it with "
         "another type (strict); the lenient mode allows it.", JSON),
    Rule("OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", SAFE, "an optional property was added to a closed (or partly open) object",
         "Property {detail} ({path}, {new}) was added as optional to an object not open to every property: documents without it stay "
         "valid; older documents could have it only as the object's other keywords allowed.", JSON),
    Rule("REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", COMPATIBLE, "a required property was added to a closed object",
         "Required property {detail} ({path}, {new}) was added without a default: older documents do not have it.", JSON),
    Rule("REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL", SAFE, "a required property with a default was added to a closed object",
         "Required property {detail} ({path}, {new}) was added with a default.", JSON),
    Rule("ADDITIONAL_PROPERTIES_ADDED", COMPATIBLE, "an object was opened (additionalProperties allowed)",
         "Other properties ({path}) are now allowed: consumers may meet properties they do not know.", JSON),
    Rule("ADDITIONAL_PROPERTIES_REMOVED", COMPATIBLE, "an object was closed (additionalProperties: false)",
         "Other properties ({path}) are no longer allowed: older documents with extra properties are refused.", JSON),
    Rule("ADDITIONAL_PROPERTIES_NARROWED", COMPATIBLE, "other properties must now match a schema",
         "Other properties ({path}) must now match a schema.", JSON),
    Rule("ADDITIONAL_PROPERTIES_EXTENDED", COMPATIBLE, "other properties may now be anything",
         "Other properties ({path}) may now have any value.", JSON),
    Rule("UNIQUE_ITEMS_ADDED", COMPATIBLE, "items must now be unique", "{path}: items must now be unique.", JSON),
    Rule("UNIQUE_ITEMS_REMOVED", COMPATIBLE, "items need no longer be unique", "{path}: items need no longer be unique.", JSON),
    Rule("PATTERN_PROPERTIES_CHANGED", COMPATIBLE, "a `patternProperties` entry was added, removed or changed",
         "{path}: the schema for properties named like {detail} changed ({old} → {new}): documents valid under one may be refused by the "
         "other. The registry does not check `patternProperties` (only properties added or removed against them).", JSON),
    Rule("PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", SAFE,
         "a property was added that the object's `patternProperties` or `additionalProperties` schema already held to",
         "Property {detail} ({path}) was added; older documents could only have had it as the object's schema for other properties "
         "allowed, which the new property accepts.", JSON),
    Rule("PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", COMPATIBLE,
         "a property was added that older documents may carry otherwise (`patternProperties` or `additionalProperties` held it to another schema)",
         "Property {detail} ({path}) was added, but older documents may carry {detail} as the object's schema for other properties "
         "allowed, which the new property refuses.", JSON),
    Rule("PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", COMPATIBLE,
         "a property was removed that the object's schema for other properties still accepts",
         "Property {detail} ({path}) was removed; the object's `patternProperties` or `additionalProperties` still accept its values.", JSON),
    Rule("PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", COMPATIBLE,
         "a property was removed that the object's schema for other properties refuses",
         "Property {detail} ({path}) was removed, and the object's schema for other properties (`patternProperties` or "
         "`additionalProperties`) refuses some of its values: documents that have them are refused.",
         JSON),
    Rule("ITEM_ADDED_TO_OPEN_CONTENT_MODEL", COMPATIBLE, "a tuple item was added where any further item was allowed",
         "Item {path} ({new}) was added to a tuple that allowed any further items: older documents may have an item there of another type.",
         JSON),
    Rule("ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL", SAFE, "a tuple item accepting anything was added where any item was allowed",
         "Item {path} was added, accepting any value, as the tuple already did.", JSON),
    Rule("ITEM_ADDED_TO_CLOSED_CONTENT_MODEL", SAFE, "a tuple item was added where no further item was allowed",
         "Item {path} ({new}) was added: the tuple allowed no further items before, so no older document has it.", JSON),
    Rule("ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", SAFE, "a tuple item was added that the array's schema for further items held to",
         "Item {path} was added; older documents could only have had it as the array's schema for further items allowed, which it accepts.",
         JSON),
    Rule("ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", COMPATIBLE, "a tuple item was added that older documents may have otherwise",
         "Item {path} was added, but older documents may have an item there as the array's schema for further items allowed, which it "
         "refuses.", JSON),
    Rule("ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL", COMPATIBLE, "a tuple item was removed; further items stay allowed",
         "Item {path} was removed; the tuple allows further items, so it is still allowed, with any value.", JSON),
    Rule("ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL", COMPATIBLE, "a tuple item was removed where no further item is allowed",
         "Item {path} was removed from a tuple that allows no further items: documents that have it are refused.", JSON),
    Rule("ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL", SAFE, "a forbidden (false) tuple item was removed",
         "Item {path}, which no document could have, was removed.", JSON),
    Rule("ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", COMPATIBLE, "a tuple item was removed that the schema for further items accepts",
         "Item {path} was removed; the array's schema for further items still accepts its values.", JSON),
    Rule("ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", COMPATIBLE, "a tuple item was removed that the schema for further items refuses",
         "Item {path} was removed, and the array's schema for further items refuses some of its values: documents that have them are refused.",
         JSON),
    Rule("SCHEMA_ADDED", COMPATIBLE, "the array's items are now held to a schema (`items`), where any item was allowed",
         "Items ({path}) are now held to a schema ({new}), where any item was allowed: older documents with other items are refused.", JSON),
    Rule("SCHEMA_REMOVED", COMPATIBLE, "the array's schema for its items (`items`) was dropped: any item is allowed",
         "Items ({path}) are no longer held to a schema (was {old}): any item is allowed.", JSON),
    Rule("ADDITIONAL_ITEMS_ADDED", COMPATIBLE, "a tuple was opened (further items allowed)",
         "Further items ({path}) are now allowed: consumers may meet items they do not know.", JSON),
    Rule("ADDITIONAL_ITEMS_REMOVED", COMPATIBLE, "a tuple was closed (no further items)",
         "Further items ({path}) are no longer allowed: older documents with more items are refused.", JSON),
    Rule("ADDITIONAL_ITEMS_NARROWED", COMPATIBLE, "further items must now match a schema", "Further items ({path}) must now match a schema.", JSON),
    Rule("ADDITIONAL_ITEMS_EXTENDED", COMPATIBLE, "further items may now be anything", "Further items ({path}) may now have any value.", JSON),
    Rule("UNEVALUATED_PROPERTIES_ADDED", COMPATIBLE, "`unevaluatedProperties: false` was lifted",
         "Properties no other keyword names ({path}) are now allowed: consumers may meet properties they do not know.", JSON),
    Rule("UNEVALUATED_PROPERTIES_REMOVED", COMPATIBLE, "`unevaluatedProperties: false` was set",
         "Properties no other keyword names ({path}) are no longer allowed: older documents with such properties are refused.", JSON),
    Rule("UNEVALUATED_PROPERTIES_NARROWED", COMPATIBLE, "unevaluated properties must now match a schema",
         "Properties no other keyword names ({path}) must now match a schema.", JSON),
    Rule("UNEVALUATED_PROPERTIES_EXTENDED", COMPATIBLE, "unevaluated properties may now be anything",
         "Properties no other keyword names ({path}) may now have any value.", JSON),
    Rule("UNEVALUATED_ITEMS_ADDED", COMPATIBLE, "`unevaluatedItems: false` was lifted",
         "Items no other keyword covers ({path}) are now allowed: consumers may meet items they do not know.", JSON),
    Rule("UNEVALUATED_ITEMS_REMOVED", COMPATIBLE, "`unevaluatedItems: false` was set",
         "Items no other keyword covers ({path}) are no longer allowed: older documents with such items are refused.", JSON),
    Rule("UNEVALUATED_ITEMS_NARROWED", COMPATIBLE, "unevaluated items must now match a schema",
         "Items no other keyword covers ({path}) must now match a schema.", JSON),
    Rule("UNEVALUATED_ITEMS_EXTENDED", COMPATIBLE, "unevaluated items may now be anything",
         "Items no other keyword covers ({path}) may now have any value.", JSON),
    Rule("DEPENDENCY_ARRAY_ADDED", COMPATIBLE, "a property now requires others beside it (`dependentRequired`)",
         "When {path} is present, {new} must now be present too: documents without them are refused.", JSON),
    Rule("DEPENDENCY_ARRAY_REMOVED", COMPATIBLE, "a property no longer requires others beside it",
         "{path} no longer requires {old} beside it: consumers may meet documents without them.", JSON),
    Rule("DEPENDENCY_ARRAY_EXTENDED", COMPATIBLE, "a property requires more others beside it",
         "When {path} is present, more properties must be present too ({old} → {new}): documents without them are refused.", JSON),
    Rule("DEPENDENCY_ARRAY_NARROWED", COMPATIBLE, "a property requires fewer others beside it",
         "When {path} is present, fewer properties must be present too ({old} → {new}).", JSON),
    Rule("DEPENDENCY_ARRAY_CHANGED", COMPATIBLE, "the properties a property requires beside it changed",
         "The properties {path} requires beside it changed ({old} → {new}): documents without the new ones are refused.", JSON),
    Rule("DEPENDENCY_SCHEMA_ADDED", COMPATIBLE, "a property now brings a schema the object must match (`dependentSchemas`)",
         "When {path} is present, the object must now also match a schema: documents that do not are refused.", JSON),
    Rule("DEPENDENCY_SCHEMA_REMOVED", COMPATIBLE, "a property no longer brings a schema the object must match",
         "When {path} is present, the object need no longer match the schema it brought.", JSON),
)

# --- what a report leaves out ---------------------------------------------------------------------------------
CATALOGUE += (
    Rule("CHANGES_LISTED_ONCE", SAFE, "a type is met at more places than are listed: each change is listed once, at its shallowest place",
         "{path}: a type in this schema is met at so many places that its changes would be more than {detail} findings: each is "
         "listed once, at its shallowest place, and ChangeOps counts every consumer of the topic as affected.", ("AVRO", "JSON")),
)

RULES: dict[str, Rule] = {rule.id: rule for rule in CATALOGUE if "AVRO" in rule.formats}
BY_FORMAT: dict[tuple[str, str], Rule] = {(kind, rule.id): rule for rule in CATALOGUE for kind in rule.formats}


def rule_of(schema_type: str, rule_id: str) -> Rule:
    """The rule ``rule_id`` as the format ``schema_type`` reports it."""
    return BY_FORMAT[(schema_type, rule_id)]
