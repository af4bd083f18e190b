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
    """One kind of finding: id, level on its own, one-line purpose, and the message template."""

    id: str
    level: Level
    purpose: str
    template: str


SAFE, COMPATIBLE, BREAKING = Level.SAFE, Level.COMPATIBLE, Level.BREAKING

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

RULES: dict[str, Rule] = {rule.id: rule for rule in CATALOGUE}
