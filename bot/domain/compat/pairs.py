"""The semantic walk: old and new schemas paired element by element, for what resolution does not see.

Fields pair by name or alias, union branches by kind and name, named types by position. Each pair is
compared for drift that readers feel even when the bytes resolve: logical types, decimal precision and
scale, promotions, defaults, enum symbols, renames, namespaces, docs, aliases, order and attributes.
"""

from __future__ import annotations

import json
from itertools import filterfalse
from typing import Any

from bot.domain.avro.model import NAMED, Field, Node, Schema
from bot.domain.compat.matching import NAME_OF, counterpart, type_change_rule, unshared
from bot.domain.compat.memo import PairMemo, Rel, Walked
from bot.domain.compat.resolve import decimal_changes, entering, entry

SWAP_DETAIL = {"STRING_BYTES_SWAPPED": {("string", "bytes"): "raw bytes instead of text",
                                        ("bytes", "string"): "text decoded as UTF-8 from what were raw bytes (values that are not UTF-8 fail to read)"}}


def semantic_walk(old: Schema, new: Schema) -> Walked:
    """Every semantic difference between two versions, with paths from the new schema's point of view, not yet written
    (see ``Walked``)."""
    walker = _Walker()
    return Walked(walker._records, walker.pair(old.root, new.root), new.label, entry(new.root))


class _Walker:
    def __init__(self) -> None:
        self._records: PairMemo = PairMemo()

    def pair(self, old: Node, new: Node) -> list[Rel]:
        if old is new:
            return []
        if old.type == "union" and new.type == "union":
            found: list[Rel] = []
            positions: list[int] = []
            for branch in new.branches:
                match = counterpart(branch, old)
                if match is not None:
                    positions.append(old.branches.index(match))
                    found += self.pair(match, branch)
            if positions != sorted(positions):
                found.append(("", "UNION_REORDERED", old.describe(), new.describe(), ""))
            return found
        if old.type == "union":
            match = counterpart(new, old)
            return self.pair(match, new) if match is not None else []
        if new.type == "union":
            match = counterpart(old, new)
            return self.pair(old, match) if match is not None else []
        found = []
        if old.type != new.type:
            if old.type not in NAMED and new.type not in NAMED:
                rule = type_change_rule(old.type, new.type)
                if rule != "TYPE_CHANGED":  # the physical types resolve (a promotion or a swap): a logical type still means something
                    detail = SWAP_DETAIL.get(rule, {}).get((old.type, new.type), "")
                    return [("", rule, old.describe(), new.describe(), detail), *_logical(old, new)]
            return found  # another kind entirely: the type change says it all, a logical type's rules do not apply
        found += _logical(old, new)
        if old.type in NAMED:
            found += _named(old, new)
            if old.type == "record":
                found += self.record(old, new)
            elif old.type == "enum":
                found += _enum(old, new)
            return entering(new, found)
        elif old.type == "array":
            assert old.items is not None and new.items is not None
            found += [("[]" + s, *rest) for s, *rest in self.pair(old.items, new.items)]  # type: ignore[misc]
        elif old.type == "map":
            assert old.values is not None and new.values is not None
            found += [("{}" + s, *rest) for s, *rest in self.pair(old.values, new.values)]  # type: ignore[misc]
        if old.props != new.props and old.type not in NAMED:
            found.append(_props("", old.props, new.props))
        return found

    def record(self, old: Node, new: Node) -> list[Rel]:
        return self._records.get(old, new, lambda: self._fields(old, new))

    def _fields(self, old: Node, new: Node) -> list[Rel]:
        found: list[Rel] = []
        lost: set[str] = set()  # new fields that continue no old one
        renamed: dict[str, str] = {}  # new field name: the old one's
        for field in unshared(old.fields, new.fields):  # a shared field has not changed
            before = _partner(old, field, new)
            at = "." + field.name
            if before is None:
                lost.add(field.name)
                if field.has_default:
                    found.append((at, "FIELD_ADDED_WITH_DEFAULT", "", field.type.describe(), _json(field.default)))
                elif kept := next((a for a in field.aliases if a in old.by_name and a in new.by_name), None):
                    found.append((at, "FIELD_ADDED_WITH_ALIAS", "", field.type.describe(), kept))
                continue
            if before.name != field.name:
                renamed[field.name] = before.name
                found.append((at, "FIELD_RENAMED", before.type.describe(), field.type.describe(), before.name))
            found += _field(at, before, field)
            inner = self.pair(before.type, field.type)
            if inner:
                found += [(at + s, *rest) for s, *rest in inner]  # type: ignore[misc]
        order_new = list(map(NAME_OF, new.fields))
        if renamed:
            order_new = [renamed.get(name, name) for name in order_new if name not in lost]
        elif lost:
            order_new = list(filterfalse(lost.__contains__, order_new))
        paired_old = set(order_new)
        order_old = list(map(NAME_OF, old.fields))
        if not paired_old.issuperset(order_old):
            for field in old.fields:
                if field.name not in paired_old and field.has_default:
                    found.append(("." + field.name, "FIELD_REMOVED_WITH_DEFAULT", field.type.describe(), "", _json(field.default)))
            order_old = list(filter(paired_old.__contains__, order_old))
        if order_old != order_new:
            found.append(("", "FIELDS_REORDERED", old.describe(), new.describe(), ""))
        return found


def _partner(old: Node, field: Field, new: Node) -> Field | None:
    """The old field a new one continues: same name, a new alias naming it, or an old alias naming the new one; an alias
    names no rename while the field it names is still there under its own name (the new field is added beside it), nor when
    a later field names it too (Avro's rewrite renames the old field to the last that names it)."""
    same = old.by_name.get(field.name)
    if same is not None:
        return same
    for alias in field.aliases:
        if alias in old.by_name and alias not in new.by_name and new.by_alias[alias] is field:  # a later field naming it takes it
            return old.by_name[alias]
    renamed = old.by_alias.get(field.name)
    return renamed if renamed is not None and renamed.name not in new.by_name else None


def _field(at: str, old: Field, new: Field) -> list[Rel]:
    if (old.default is new.default and old.order == new.order and old.doc == new.doc
            and old.aliases == new.aliases and old.props == new.props):
        return []
    found: list[Rel] = []
    if old.has_default and new.has_default and _canon(old.default) != _canon(new.default):
        found.append((at, "DEFAULT_CHANGED", "", "", f"{_json(old.default)} to {_json(new.default)}"))
    elif new.has_default and not old.has_default:
        found.append((at, "DEFAULT_ADDED", "", "", _json(new.default)))
    elif old.has_default and not new.has_default:
        found.append((at, "DEFAULT_REMOVED", "", "", _json(old.default)))
    if old.order != new.order:
        found.append((at, "FIELD_ORDER_CHANGED", "", "", f"{old.order} to {new.order}"))
    if (old.doc or "") != (new.doc or ""):
        found.append((at, "DOC_CHANGED", "", "", ""))
    found += _aliases(at, old.aliases, new.aliases - {old.name})
    if old.props != new.props:
        found.append(_props(at, old.props, new.props))
    return found


def _named(old: Node, new: Node) -> list[Rel]:
    found: list[Rel] = []
    if old.short_name != new.short_name and old.name in new.aliases:
        found.append(("", "TYPE_RENAMED", old.describe(), new.describe(), f"from {old.short_name} to {new.short_name}"))
    elif old.short_name == new.short_name and old.namespace != new.namespace:
        found.append(("", "NAMESPACE_CHANGED", old.describe(), new.describe(), f"'{old.namespace}' to '{new.namespace}'"))
    if (old.doc or "") != (new.doc or ""):
        found.append(("", "DOC_CHANGED", "", "", ""))
    assert old.name is not None
    found += _aliases("", old.aliases, new.aliases - {old.name})
    if old.props != new.props:
        found.append(_props("", old.props, new.props))
    return found


def _enum(old: Node, new: Node) -> list[Rel]:
    found: list[Rel] = []
    before, after = set(old.symbols), set(new.symbols)
    added = [s for s in new.symbols if s not in before]
    removed = [s for s in old.symbols if s not in after]
    if added:
        seen = f"; consumers on the old schema read them as {old.enum_default}" if old.enum_default else ""
        found.append(("", "ENUM_SYMBOL_ADDED", old.describe(), new.describe(), f"symbol(s) {', '.join(added)}{seen}"))
    if removed:
        seen = f"; consumers on the new schema read old ones as {new.enum_default}" if new.enum_default else ""
        found.append(("", "ENUM_SYMBOL_REMOVED", old.describe(), new.describe(), f"symbol(s) {', '.join(removed)}{seen}"))
    if old.enum_default != new.enum_default:
        found.append(("", "ENUM_DEFAULT_CHANGED", "", "", f"{old.enum_default or 'none'} to {new.enum_default or 'none'}"))
    common_old = [s for s in old.symbols if s in after]
    common_new = [s for s in new.symbols if s in before]
    if common_old != common_new:
        found.append(("", "ENUM_SYMBOLS_REORDERED", "", "", ""))
    return found


def _logical(old: Node, new: Node) -> list[Rel]:
    if old.logical == new.logical:
        return decimal_changes(old, new) if old.logical == "decimal" else []
    if old.logical and new.logical:
        return [("", "LOGICAL_TYPE_CHANGED", old.describe(), new.describe(), f"{old.logical} to {new.logical}")]
    if new.logical:
        return [("", "LOGICAL_TYPE_ADDED", old.describe(), new.describe(), new.logical)]
    return [("", "LOGICAL_TYPE_REMOVED", old.describe(), new.describe(), str(old.logical))]


def _aliases(at: str, old: frozenset[str], new: frozenset[str]) -> list[Rel]:
    found: list[Rel] = []
    if new - old:
        found.append((at, "ALIAS_ADDED", "", "", ", ".join(sorted(new - old))))
    if old - new:
        found.append((at, "ALIAS_REMOVED", "", "", ", ".join(sorted(old - new))))
    return found


def _props(at: str, old: dict[str, Any], new: dict[str, Any]) -> Rel:
    keys = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
    return (at, "PROPERTY_CHANGED", "", "", ", ".join(keys))


def _canon(value: Any) -> Any:
    """Defaults compared as values: 1 and 1.0 are the same number, booleans stay booleans."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, list):
        return [_canon(v) for v in value]
    if isinstance(value, dict):
        return {k: _canon(v) for k, v in value.items()}
    return value


def _json(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."
