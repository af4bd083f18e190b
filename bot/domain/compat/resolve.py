"""Schema resolution (Avro 1.12) in one direction, reporting every reason a read would fail.

``Resolution(BACKWARD)`` asks whether the new schema can read data written with the old one;
``Resolution(FORWARD)`` the reverse. Each failure is a ``Change`` named by what changed (old to new),
so both directions describe the same edit with the same rule and path. Records are memoised by the
pair of nodes (``PairMemo``), with paths relative to the record, so shared named types cost once and
recursive types terminate (a pair met again while it is being checked is assumed to resolve: a cycle
adds no new failure); a named type used at many places is written at each, up to ``memo.PLACES`` findings.
"""

from __future__ import annotations

from bot.domain.avro.model import NAMED, Node, Schema
from bot.domain.compat.changes import Change, Direction
from bot.domain.compat.matching import (
    counterpart,
    decimals_differ,
    first_match,
    matches,
    names_match,
    related,
    type_change_rule,
    unshared,
)
from bot.domain.compat.memo import PairMemo, Rel, Walked


class Resolution:
    """Resolution in one direction between an old and a new schema."""

    def __init__(self, direction: Direction) -> None:
        self.direction = direction
        self.backward = direction is Direction.BACKWARD
        self._records: PairMemo = PairMemo()

    def check(self, old: Schema, new: Schema, version: int | None = None) -> list[Change]:
        """Every failure of this direction, with full paths."""
        return self.walk(old, new, version).changes()

    def walk(self, old: Schema, new: Schema, version: int | None = None) -> Walked:
        """Every failure of this direction, not yet written (see ``Walked``)."""
        writer, reader = (old.root, new.root) if self.backward else (new.root, old.root)
        return Walked(self._records, self._resolve(writer, reader), new.label, entry(new.root), frozenset({self.direction}), version)

    def _orient(self, writer: Node, reader: Node) -> tuple[Node, Node]:
        return (writer, reader) if self.backward else (reader, writer)

    def _resolve(self, writer: Node, reader: Node) -> list[Rel]:
        if writer is reader:
            return []
        if writer.type == "union":
            found: list[Rel] = []
            for branch in writer.branches:
                if reader.type == "union":
                    target = first_match(branch, reader)
                    found += self._resolve(branch, target) if target is not None else self._lost_branch(branch, reader)
                elif matches(branch, reader):
                    found += self._resolve(branch, reader)
                elif related(branch, reader):
                    found += self._mismatch(branch, reader)
                else:
                    found += self._branch(branch)
            return found
        if reader.type == "union":
            target = first_match(writer, reader)
            if target is not None:
                return self._resolve(writer, target)
            return self._lost_branch(writer, reader, plain=True)
        if not matches(writer, reader):
            return self._mismatch(writer, reader)
        if writer.type == "record":
            return entering(reader if self.backward else writer, self._record(writer, reader))
        if writer.type == "enum":
            return entering(reader if self.backward else writer, self._enum(writer, reader))
        if writer.type == "array":
            assert writer.items is not None and reader.items is not None
            return [("[]" + s, *rest) for s, *rest in self._resolve(writer.items, reader.items)]  # type: ignore[misc]
        if writer.type == "map":
            assert writer.values is not None and reader.values is not None
            return [("{}" + s, *rest) for s, *rest in self._resolve(writer.values, reader.values)]  # type: ignore[misc]
        return []

    def _lost_branch(self, writer: Node, union: Node, *, plain: bool = False) -> list[Rel]:
        """A writer type that no branch of the reader's union accepts."""
        near = counterpart(writer, union)
        if near is not None:
            return self._mismatch(writer, near)
        if plain:
            old, new = self._orient(writer, union)
            return [("", "TYPE_CHANGED", old.describe(), new.describe(), "")]
        return self._branch(writer)

    def _branch(self, writer: Node) -> list[Rel]:
        """A writer's union branch the reader cannot take: removed (backward) or added (forward)."""
        if self.backward:
            return [("", "UNION_BRANCH_REMOVED", writer.describe(), "", writer.describe())]
        return [("", "UNION_BRANCH_ADDED", "", writer.describe(), writer.describe())]

    def _mismatch(self, writer: Node, reader: Node) -> list[Rel]:
        """Why two related schemas do not match, as rules on the old-to-new edit."""
        old, new = self._orient(writer, reader)
        found: list[Rel] = []
        if old.type == new.type and old.type in NAMED:
            if not names_match(writer, reader):
                if old.name in new.aliases:
                    found.append(("", "TYPE_RENAMED", old.describe(), new.describe(), f"from {old.short_name} to {new.short_name}"))
                else:
                    found.append(("", "NAME_CHANGED", old.describe(), new.describe(), f"renamed from {old.short_name} to {new.short_name}"))
            if old.type == "fixed" and old.size != new.size:
                found.append(("", "FIXED_SIZE_CHANGED", old.describe(), new.describe(), f"{old.size} to {new.size}"))
        elif old.type != new.type:
            rule = type_change_rule(old.type, new.type) if old.type not in NAMED and new.type not in NAMED else "TYPE_CHANGED"
            found.append(("", rule, old.describe(), new.describe(), ""))
        if decimals_differ(old, new):
            found.extend(decimal_changes(old, new))
        return found

    def _record(self, writer: Node, reader: Node) -> list[Rel]:
        return self._records.get(writer, reader, lambda: self._fields(writer, reader))

    def _fields(self, writer: Node, reader: Node) -> list[Rel]:
        found: list[Rel] = []
        for field in unshared(writer.fields, reader.fields):  # a shared field resolves to itself
            source = writer.by_name.get(field.name)
            taken = None  # an alias naming a writer's field that a later reader field also names, and so takes
            if field.aliases:
                if source is None:
                    for alias in field.aliases:
                        if alias in writer.by_name:
                            if reader.by_alias[alias] is field:
                                source = writer.by_name[alias]
                                break
                            taken = taken or alias
                elif shadowed := next((a for a in field.aliases if a != field.name and a in writer.by_name and reader.by_alias[a] is field), None):
                    # the writer's schema rewritten by this alias has the field twice: ambiguous, not read
                    found.append(("." + field.name, "FIELD_ALIAS_SHADOWED", source.type.describe(), field.type.describe(), shadowed))
            if source is not None:
                inner = self._resolve(source.type, field.type)
                if inner:
                    segment = "." + (field.name if self.backward else source.name)
                    found += [(segment + s, *rest) for s, *rest in inner]  # type: ignore[misc]
            elif field.has_default:
                continue
            elif taken is not None:
                found.append(("." + field.name, "FIELD_ALIAS_TAKEN", writer.by_name[taken].type.describe(), field.type.describe(), taken))
            elif self.backward:
                found.append(("." + field.name, "FIELD_ADDED_WITHOUT_DEFAULT", "", field.type.describe(), ""))
            elif (renamed := writer.by_alias.get(field.name)) is not None and renamed.name not in reader.by_name:
                found.append(("." + renamed.name, "FIELD_RENAMED", field.type.describe(), renamed.type.describe(), field.name))
            else:
                found.append(("." + field.name, "FIELD_REMOVED_WITHOUT_DEFAULT", field.type.describe(), "", ""))
        return found

    def _enum(self, writer: Node, reader: Node) -> list[Rel]:
        if reader.enum_default is not None:
            return []
        known = set(reader.symbols)
        if all(symbol in known for symbol in writer.symbols):
            return []
        old, new = self._orient(writer, reader)
        rule = "ENUM_SYMBOL_REMOVED" if self.backward else "ENUM_SYMBOL_ADDED"
        return [("", rule, old.describe(), new.describe(), "")]


def entry(node: Node) -> str:
    """The path segment that says a path enters another subject's type: ``<Address>`` (empty for any other node)."""
    return f"<{node.short_name}>" if node.referenced else ""


def entering(new: Node, found: list[Rel]) -> list[Rel]:
    """Findings inside ``new`` (the new schema's side), their paths entering it when it is a referenced type."""
    if not new.referenced or not found:
        return found
    segment = entry(new)
    return [(segment + s, *rest) for s, *rest in found]  # type: ignore[misc]


def decimal_changes(old: Node, new: Node) -> list[Rel]:
    """Precision and scale changes of two decimals."""
    found: list[Rel] = []
    if old.precision != new.precision:
        found.append(("", "DECIMAL_PRECISION_CHANGED", old.describe(), new.describe(), f"{old.precision} to {new.precision}"))
    if old.scale != new.scale:
        found.append(("", "DECIMAL_SCALE_CHANGED", old.describe(), new.describe(), f"{old.scale} to {new.scale}"))
    return found
