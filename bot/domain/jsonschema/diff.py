"""The differences between two JSON Schemas, named as Confluent's Schema Registry names them, in one direction:
``differences(original, update)`` is what the schema ``update`` meets in documents valid under ``original``. The
registry's BACKWARD check is ``differences(old, new)``, FORWARD the reverse; a difference outside the compatible set
(``STRICT``, or ``LENIENT`` where a subject chose it) fails. Beyond the registry: ``format`` changes (a date-time
that becomes a date) and ``patternProperties`` changes, each reported with a plain message; an open object's added
property is told how to close it. Stricter than the registry where it would let older documents be refused: a required
property added with an empty schema, a property added to an object open but for patterns that do not match it, and a
name made required that no ``properties`` entry describes."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from bot.domain.compat.changes import Difference
from bot.domain.jsonschema.disjoint import disjoint
from bot.domain.jsonschema.model import PARTS, JsonSchema, json_value, kind, parts, resolve
from bot.domain.jsonschema.walks import HERE, Done, Key, Met, Walks

STRICT = frozenset({
    "ID_CHANGED", "DESCRIPTION_CHANGED", "TITLE_CHANGED", "DEFAULT_CHANGED", "SCHEMA_REMOVED", "TYPE_EXTENDED", "MAX_LENGTH_INCREASED",
    "MAX_LENGTH_REMOVED", "MIN_LENGTH_DECREASED", "MIN_LENGTH_REMOVED", "PATTERN_REMOVED", "MAXIMUM_INCREASED", "MAXIMUM_REMOVED",
    "MINIMUM_DECREASED", "MINIMUM_REMOVED", "EXCLUSIVE_MAXIMUM_INCREASED", "EXCLUSIVE_MAXIMUM_REMOVED", "EXCLUSIVE_MINIMUM_DECREASED",
    "EXCLUSIVE_MINIMUM_REMOVED", "MULTIPLE_OF_REDUCED", "MULTIPLE_OF_REMOVED", "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED",
    "REQUIRED_ATTRIBUTE_REMOVED", "MAX_PROPERTIES_INCREASED", "MAX_PROPERTIES_REMOVED", "MIN_PROPERTIES_DECREASED",
    "MIN_PROPERTIES_REMOVED", "ADDITIONAL_PROPERTIES_ADDED", "ADDITIONAL_PROPERTIES_EXTENDED", "PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL",
    "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL", "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
    "PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL", "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL", "MAX_ITEMS_INCREASED",
    "MAX_ITEMS_REMOVED", "MIN_ITEMS_DECREASED", "MIN_ITEMS_REMOVED", "UNIQUE_ITEMS_REMOVED", "ADDITIONAL_ITEMS_ADDED",
    "ADDITIONAL_ITEMS_EXTENDED", "ENUM_ARRAY_EXTENDED", "COMBINED_TYPE_EXTENDED", "PRODUCT_TYPE_NARROWED", "SUM_TYPE_EXTENDED",
    "NOT_TYPE_NARROWED", "DEPENDENCY_ARRAY_NARROWED", "DEPENDENCY_ARRAY_REMOVED", "DEPENDENCY_SCHEMA_REMOVED",
    "UNEVALUATED_PROPERTIES_ADDED", "UNEVALUATED_PROPERTIES_EXTENDED", "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    "PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", "MAX_CONTAINS_INCREASED", "MAX_CONTAINS_REMOVED", "MIN_CONTAINS_DECREASED",
    "MIN_CONTAINS_REMOVED", "UNEVALUATED_ITEMS_ADDED", "UNEVALUATED_ITEMS_EXTENDED", "ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL",
    "ITEM_ADDED_TO_CLOSED_CONTENT_MODEL", "ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL", "ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL",
    "ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", "ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    "FORMAT_ADDED", "FORMAT_REMOVED", "FORMAT_CHANGED",  # ours: the registry does not judge `format`; each is a finding of its own level
    "PATTERN_PROPERTIES_CHANGED",  # ours: nor `patternProperties`, beyond a property added or removed
    "TYPE_NO_LONGER_DECLARED",  # ours: nor a `type` dropped beside a kind's keywords (TYPE_DECLARED fails)
    "PROPERTY_NAMES_EXTENDED", "CONTAINS_REMOVED", "CONTAINS_EXTENDED", "CONDITION_REMOVED", "CONDITION_EXTENDED",  # ours: nor these
    "CHANGES_LISTED_ONCE",  # ours: a report too long to list every place (it changes nothing of itself)
})
NOTED = frozenset({"PATTERN_PROPERTIES_CHANGED"})  # what the registry does not check: shown from either direction
KEYWORD_KINDS = ("object", "array", "string", "number")  # kinds a schema's keywords tell without `type` (a type list is a combination)
LENIENT = STRICT | {
    "ADDITIONAL_PROPERTIES_NARROWED", "ADDITIONAL_PROPERTIES_REMOVED", "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL",
    "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", "UNEVALUATED_PROPERTIES_NARROWED",
    "UNEVALUATED_PROPERTIES_REMOVED", "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
}
LIMITS = (  # keyword, (added, removed, grew, shrank): growing a maximum accepts more (compatible), shrinking it fewer
    ("maxLength", ("MAX_LENGTH_ADDED", "MAX_LENGTH_REMOVED", "MAX_LENGTH_INCREASED", "MAX_LENGTH_DECREASED")),
    ("minLength", ("MIN_LENGTH_ADDED", "MIN_LENGTH_REMOVED", "MIN_LENGTH_INCREASED", "MIN_LENGTH_DECREASED")),
    ("maximum", ("MAXIMUM_ADDED", "MAXIMUM_REMOVED", "MAXIMUM_INCREASED", "MAXIMUM_DECREASED")),
    ("minimum", ("MINIMUM_ADDED", "MINIMUM_REMOVED", "MINIMUM_INCREASED", "MINIMUM_DECREASED")),
    ("exclusiveMaximum", ("EXCLUSIVE_MAXIMUM_ADDED", "EXCLUSIVE_MAXIMUM_REMOVED", "EXCLUSIVE_MAXIMUM_INCREASED", "EXCLUSIVE_MAXIMUM_DECREASED")),
    ("exclusiveMinimum", ("EXCLUSIVE_MINIMUM_ADDED", "EXCLUSIVE_MINIMUM_REMOVED", "EXCLUSIVE_MINIMUM_INCREASED", "EXCLUSIVE_MINIMUM_DECREASED")),
    ("maxItems", ("MAX_ITEMS_ADDED", "MAX_ITEMS_REMOVED", "MAX_ITEMS_INCREASED", "MAX_ITEMS_DECREASED")),
    ("minItems", ("MIN_ITEMS_ADDED", "MIN_ITEMS_REMOVED", "MIN_ITEMS_INCREASED", "MIN_ITEMS_DECREASED")),
    ("maxProperties", ("MAX_PROPERTIES_ADDED", "MAX_PROPERTIES_REMOVED", "MAX_PROPERTIES_INCREASED", "MAX_PROPERTIES_DECREASED")),
    ("minProperties", ("MIN_PROPERTIES_ADDED", "MIN_PROPERTIES_REMOVED", "MIN_PROPERTIES_INCREASED", "MIN_PROPERTIES_DECREASED")),
    ("maxContains", ("MAX_CONTAINS_ADDED", "MAX_CONTAINS_REMOVED", "MAX_CONTAINS_INCREASED", "MAX_CONTAINS_DECREASED")),
    ("minContains", ("MIN_CONTAINS_ADDED", "MIN_CONTAINS_REMOVED", "MIN_CONTAINS_INCREASED", "MIN_CONTAINS_DECREASED")),
)


def differences(original: JsonSchema, update: JsonSchema) -> list[Difference]:
    """Every difference the schema ``update`` meets in documents valid under ``original``.

    Each pair of subschemas is compared once (``Walks``), so schemas whose definitions refer to one another cost what
    their pairs do, not what their paths do. A pair met again while it is being compared (recursion) is assumed alike;
    where that was assumed, the comparison runs again knowing from the start the pairs found to fail, until no more
    are found (the greatest fixed point, as the registry finds it)."""
    known: dict[Key, Done] = {}
    while True:  # each round knows more pairs to fail, or is the last: at most a round a pair
        walks = Walks(STRICT, known)
        walk = _Diff(original, update, walks, True)
        walk.compare(original.root, original.base, update.root, update.base, HERE)
        failing = {key: done for key, done in walks.done.items() if done.fails}
        if not walks.assumed or failing.keys() <= known.keys():
            return walks.written(walk.found, update.label)
        known = {**known, **failing}



class _Diff:
    def __init__(self, original: JsonSchema, update: JsonSchema, walks: Walks, forward: bool) -> None:
        self.o, self.u = original, update
        self.walks, self.forward = walks, forward  # forward: ``original`` is the comparison's original
        self.found: list[Difference | Met] = []

    def add(self, rule: str, path: str, old: Any = "", new: Any = "", detail: str = "", aspect: str = "") -> None:
        self.found.append(Difference(rule, (aspect or rule.split("_")[0], path), path, _text(old), _text(new), detail))

    def compare(self, o_node: Any, o_base: str, u_node: Any, u_base: str, path: str) -> None:
        """Compare two subschemas met at ``path``, or take what comparing them found before."""
        o_node, o_base = resolve(self.o, o_node, o_base)
        u_node, u_base = resolve(self.u, u_node, u_base)
        o_node, u_node = parts(self.o, o_node), parts(self.u, u_node)
        walks, key = self.walks, (self.forward, id(o_node), o_base, id(u_node), u_base)
        if key not in walks.done:
            active = (id(o_node), id(u_node)) if self.forward else (id(u_node), id(o_node))
            if active in walks.active:
                if key in walks.known:
                    self.found.append(Met(key, path, again=True))
                else:
                    walks.assumed = True
                return
            walks.active.add(active)
            outer, self.found = self.found, []
            try:
                self._compare(o_node, o_base, u_node, u_base, HERE)
            finally:
                walks.active.discard(active)
                found, self.found = self.found, outer
            walks.done[key] = Done(o_node, u_node, found, walks.fails(found), walks.shows(found))
        self.found.append(Met(key, path))

    def _compare(self, o: Any, o_base: str, u: Any, u_base: str, path: str) -> None:
        o_kind, u_kind = kind(o), kind(u)
        if o_kind != u_kind:
            if o_kind == "false" or u_kind == "empty":
                return  # the update accepts everything, or nothing was valid before
            branches = self._branches(self.u, u, u_base) if u_kind == "combined" and o_kind != "combined" else []
            if branches and (len(branches) == 1 or "allOf" not in u):  # one of the branches will do (allOf must match them all)
                for index, (branch, branch_base) in enumerate(branches):
                    sub = self._sub(o, o_base, branch, branch_base, path)
                    if not self.walks.fails(sub.found):
                        self.found += sub.found
                        if len(branches) > 1:
                            self.add("SUM_TYPE_EXTENDED", path, o_kind, "anyOf/oneOf", aspect="type")
                            if "oneOf" in u:
                                self._exclusive(branches, {index: (o, o_base)}, set(), path)
                        return
            o_branches = self._branches(self.o, o, o_base) if o_kind == "combined" and u_kind != "combined" else []
            if o_branches and (len(o_branches) == 1 or "allOf" in o):  # what an allOf accepted, each of its branches accepted
                for branch, branch_base in o_branches:
                    sub = self._sub(branch, branch_base, u, u_base, path)
                    if not self.walks.fails(sub.found):
                        self.found += sub.found
                        if len(o_branches) > 1:
                            made = id(o) in self.o.made
                            self.add("PRODUCT_TYPE_NARROWED", path, self._shown(self.o, o) if made else len(o_branches),
                                     _type_of(u) if made else 1, aspect="type")
                        return
            self.add("TYPE_CHANGED", path, self._shown(self.o, o), self._shown(self.u, u), aspect="type")
            return
        if not isinstance(o, dict) or not isinstance(u, dict):
            return
        for word, rule in (("$id", "ID_CHANGED"), ("title", "TITLE_CHANGED"), ("description", "DESCRIPTION_CHANGED"), ("default", "DEFAULT_CHANGED")):
            if o.get(word) != u.get(word):
                self.add(rule, path, o.get(word, ""), u.get(word, ""), aspect=word)
        if o_kind in KEYWORD_KINDS and bool(o.get("type")) != bool(u.get("type")):  # without `type`, a kind's keywords bind only its values
            self.add("TYPE_DECLARED" if u.get("type") else "TYPE_NO_LONGER_DECLARED", path, _type_of(o), _type_of(u), aspect="type")
        elif o_kind == "number" and (o.get("type") == "integer") != (u.get("type") == "integer"):
            self.add("TYPE_NARROWED" if u.get("type") == "integer" else "TYPE_EXTENDED", path, o.get("type"), u.get("type"), aspect="type")
        if o.get("format") != u.get("format"):
            rule = "FORMAT_ADDED" if "format" not in o else "FORMAT_REMOVED" if "format" not in u else "FORMAT_CHANGED"
            self.add(rule, path, o.get("format", ""), u.get("format", ""), aspect="format")
        o_limits, u_limits = _limits(o), _limits(u)
        for word, (added, removed, grew, shrank) in LIMITS:
            before, after = o_limits.get(word), u_limits.get(word)
            if before == after or isinstance(before, bool) or isinstance(after, bool):
                continue
            rule = added if before is None else removed if after is None else grew if after > before else shrank
            self.add(rule, path, before if before is not None else "", after if after is not None else "", word, aspect=word)
        if o.get("pattern") != u.get("pattern"):
            rule = "PATTERN_ADDED" if "pattern" not in o else "PATTERN_REMOVED" if "pattern" not in u else "PATTERN_CHANGED"
            self.add(rule, path, o.get("pattern", ""), u.get("pattern", ""), aspect="pattern")
        if o.get("multipleOf") != u.get("multipleOf"):
            before, after = o.get("multipleOf"), u.get("multipleOf")
            exact = (Decimal(str(before)), Decimal(str(after))) if before is not None and after is not None else None  # 0.1 % 0.01 is not 0 in floats
            rule = ("MULTIPLE_OF_ADDED" if exact is None and before is None else "MULTIPLE_OF_REMOVED" if exact is None
                    else "MULTIPLE_OF_REDUCED" if exact[0] % exact[1] == 0 else "MULTIPLE_OF_EXPANDED" if exact[1] % exact[0] == 0
                    else "MULTIPLE_OF_CHANGED")
            self.add(rule, path, before or "", after or "", aspect="multipleOf")
        if o_kind == "enum":
            before, after = _values(o["enum"]), _values(u["enum"])
            if before.keys() != after.keys():
                rule = ("ENUM_ARRAY_EXTENDED" if before.keys() < after.keys() else "ENUM_ARRAY_NARROWED" if after.keys() < before.keys()
                        else "ENUM_ARRAY_CHANGED")
                moved = sorted({**before, **after}[k] for k in before.keys() ^ after.keys())
                self.add(rule, path, sorted(before.values()), sorted(after.values()), ", ".join(moved), aspect="enum")
        elif o_kind == "const" and json_value(o["const"]) != json_value(u["const"]):  # a one-value enum, as the registry names it
            self.add("ENUM_ARRAY_CHANGED", path, [o["const"]], [u["const"]], f"const {json.dumps(o['const'])} → {json.dumps(u['const'])}", aspect="const")
        elif o_kind == "combined":
            self._combined(o, o_base, u, u_base, path)
        elif o_kind == "not":
            sub = _Diff(self.u, self.o, self.walks, not self.forward)  # the negated schemas compare the other way round
            sub.compare(u["not"], u_base, o["not"], o_base, path)
            if self.walks.fails(sub.found):
                self.add("NOT_TYPE_EXTENDED", path, aspect="not")
            elif self.walks.shows(sub.found):
                self.add("NOT_TYPE_NARROWED", path, aspect="not")
        elif o_kind == "object":
            self._object(o, o_base, u, u_base, path)
        elif o_kind == "array":
            self._array(o, o_base, u, u_base, path)
        self._conditional(o, o_base, u, u_base, path)

    def _sub(self, o: Any, o_base: str, u: Any, u_base: str, path: str) -> _Diff:
        """A walk of its own (to judge a branch or a schema for other properties), inside this one's recursion guard."""
        sub = _Diff(self.o, self.u, self.walks, self.forward)
        sub.compare(o, o_base, u, u_base, path)
        return sub

    def _alike(self, o: Any, o_base: str, u: Any, u_base: str, path: str) -> bool:
        """Whether two schemas accept the same documents as far as the registry's rules tell (a description may differ)."""
        back = _Diff(self.u, self.o, self.walks, not self.forward)
        back.compare(u, u_base, o, o_base, path)
        return not self.walks.fails([*self._sub(o, o_base, u, u_base, path).found, *back.found])

    def _covered(self, o: Any, o_base: str, u: Any, u_base: str, path: str, what: str, detail: str = "") -> None:
        """A property or tuple item met on one side only, against the schema the other side holds such members to
        (``patternProperties``, ``additionalProperties``, ``additionalItems``...): its differences, and ``what`` as covered or not."""
        sub = self._sub(o, o_base, u, u_base, path)
        self.found += sub.found
        covered = not self.walks.fails(sub.found)
        aspect = "property" if what.startswith("PROPERTY") else "item"
        self.add(f"{what}_{'IS' if covered else 'NOT'}_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", path, detail=detail, aspect=aspect)

    def _exclusive(self, branches: list[tuple[Any, str]], matched: dict[int, tuple[Any, str]], unchanged: set[int], path: str,
                   exclusive: Sequence[tuple[Any, str]] = ()) -> None:
        """A ``oneOf`` of the update refuses a document that matches two of its branches. A document the original accepted
        matches one of ``matched`` (update branch -> the original's schema it takes over); it must match no other branch
        that is new or changed (one ``unchanged`` did not match it before either): disjoint from the original's schema or
        from the branch that takes it over, by ``disjoint``'s proof, or, where the original was a ``oneOf`` too
        (``exclusive``, its branches), accepting nothing that another of its branches did not (which that document did
        not match)."""
        for other, (branch, base) in enumerate(branches):
            if other in unchanged:
                continue
            for index, (before, before_base) in matched.items():
                taking, taking_base = branches[index]
                if index != other and not (disjoint(self.o, before, before_base, self.u, branch, base)
                                           or disjoint(self.u, taking, taking_base, self.u, branch, base)
                                           or any(self._within(branch, base, *o_branch) for o_branch in exclusive
                                                  if o_branch[0] is not before)):
                    self.add("ONEOF_BRANCHES_MAY_OVERLAP", path, detail=f"{index + 1} and {other + 1}", aspect="oneOf")
                    return

    def _within(self, u: Any, u_base: str, o: Any, o_base: str) -> bool:
        """Whether every document the update's ``u`` accepts, the original's ``o`` accepted, as far as the rules tell."""
        back = _Diff(self.u, self.o, self.walks, not self.forward)
        back.compare(u, u_base, o, o_base, HERE)
        return not self.walks.fails(back.found)

    @staticmethod
    def _branches(schema: JsonSchema, node: dict[str, Any], base: str) -> list[tuple[Any, str]]:
        for word in ("anyOf", "oneOf", "allOf"):
            if word in node:
                return [(branch, base) for branch in node[word]]
        if isinstance(node.get("type"), list):
            if id(node) not in schema.types:  # made once, so each is the same subschema to every walk
                rest = {k: v for k, v in node.items() if k != "type"}
                schema.types[id(node)] = [({**rest, "type": t}, base) for t in node["type"]]
            return schema.types[id(node)]
        return []

    def _combined(self, o: dict[str, Any], o_base: str, u: dict[str, Any], u_base: str, path: str) -> None:
        """Two combinations, as the registry compares them: their criteria, their numbers of branches, and a maximum
        matching of the original's branches to the update's compatible ones, which must cover the fewer."""
        o_branches, u_branches = self._branches(self.o, o, o_base), self._branches(self.u, u, u_base)
        before, after = _criterion(o), _criterion(u)
        if before != after:
            single = len(o_branches) == 1, len(u_branches) == 1
            if not (after == "anyOf" or all(single) or (single[0] and after == "oneOf") or (single[1] and before == "allOf")):
                self.add("COMBINED_TYPE_CHANGED", path, before, after, aspect="combined")
                return
            self.add("COMBINED_TYPE_EXTENDED", path, before, after, aspect="combined")
        if before != "oneOf":  # the same branch twice changes nothing (in a oneOf, it refuses what that branch accepts)
            o_branches = _distinct(o_branches)
        if after != "oneOf":
            u_branches = _distinct(u_branches)
        pairs, walks = self._matching(o_branches, u_branches, path)
        for sub in pairs.values():
            self.found += sub[1].found
        paired = {i for i, _ in pairs.values()}
        told = 0  # unmatched branches whose own place shows a difference that fails
        for i in range(min(len(o_branches), len(u_branches))):  # a branch left without a match: what differs at its own place says why
            if i not in paired and i not in pairs and (i, i) in walks:
                self.found += walks[(i, i)].found
                told += self.walks.fails(walks[(i, i)].found)
        if after == "oneOf":
            self._exclusive(u_branches, {index: o_branches[i] for index, (i, _) in pairs.items()},
                            {j for j, (i, _) in pairs.items() if before == "oneOf" and _same(o_branches[i], u_branches[j])}, path,
                            o_branches if before == "oneOf" else [])
        made = id(o) in self.o.made or id(u) in self.u.made  # parts of one schema: name them, not count them
        was: Any = self._shown(self.o, o) if made else len(o_branches)
        now: Any = self._shown(self.u, u) if made else len(u_branches)
        if len(u_branches) > len(o_branches):
            self.add("PRODUCT_TYPE_EXTENDED" if after == "allOf" else "SUM_TYPE_EXTENDED", path, was, now, aspect="combined")
        elif len(u_branches) < len(o_branches):
            self.add("PRODUCT_TYPE_NARROWED" if before == "allOf" else "SUM_TYPE_NARROWED", path, was, now, aspect="combined")
        unmatched = min(len(o_branches), len(u_branches)) - len(pairs)
        if unmatched and not (made and told == unmatched):  # parts no one wrote as an allOf: their own differences say it
            self.add("COMBINED_TYPE_SUBSCHEMAS_CHANGED", path, aspect="combined")

    def _matching(self, o_branches: list[tuple[Any, str]], u_branches: list[tuple[Any, str]],
                  path: str) -> tuple[dict[int, tuple[int, _Diff]], dict[tuple[int, int], _Diff]]:
        """A maximum matching of the original's branches to the update's that accept what they accepted: update branch ->
        (original branch, their walk); and every walk made. Each branch tries the one at its own place first, so branches
        kept in order cost one walk each."""
        walks: dict[tuple[int, int], _Diff] = {}

        def edge(i: int, j: int) -> _Diff | None:
            if (i, j) not in walks:
                walks[(i, j)] = self._sub(*o_branches[i], *u_branches[j], path)
            sub = walks[(i, j)]
            return sub if not self.walks.fails(sub.found) else None

        def order(i: int) -> list[int]:
            return [*range(i, len(u_branches)), *range(min(i, len(u_branches)))]

        owner: dict[int, int] = {}  # update branch -> original branch

        def augment(i: int, seen: set[int]) -> bool:
            for j in order(i):
                if j not in seen and edge(i, j) is not None:
                    seen.add(j)
                    if j not in owner or augment(owner[j], seen):
                        owner[j] = i
                        return True
            return False

        for i in range(len(o_branches)):
            free = next((j for j in order(i) if j not in owner and edge(i, j) is not None), None)
            if free is not None:
                owner[free] = i
            else:
                augment(i, set())
        return {j: (i, walks[(i, j)]) for j, i in owner.items()}, walks

    def _object(self, o: dict[str, Any], o_base: str, u: dict[str, Any], u_base: str, path: str) -> None:
        o_props, u_props = o.get("properties") or {}, u.get("properties") or {}
        o_required, u_required = set(o.get("required") or []), set(u.get("required") or [])
        for name in [*o_props, *sorted((o_required | u_required) - o_props.keys())]:  # the registry skips names without a schema
            added, removed = name in u_props and name not in o_props, name in o_props and name not in u_props
            if (name in o_required) != (name in u_required) and not (added and name in u_required) and not (removed and name in o_required):
                at = _join(path, name)
                if name in o_required:
                    self.add("REQUIRED_ATTRIBUTE_REMOVED", at, detail=name, aspect="required")
                else:
                    self.add("REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED" if _has_default(u_props.get(name)) else "REQUIRED_ATTRIBUTE_ADDED", at,
                             detail=name, aspect="required")
        for name in sorted(set(o_props) | set(u_props)):
            at = _join(path, name)
            if name not in u_props:
                held = _held(u, name)
                if _open(u):
                    self.add("PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL", at, detail=name, aspect="property")
                elif held is not None:
                    self._covered(o_props[name], o_base, held, u_base, at, "PROPERTY_REMOVED", name)
                elif self.kind_of(self.o, o_props[name], o_base) == "false":
                    self.add("PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL", at, detail=name, aspect="property")
                else:
                    self.add("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", at, detail=name, aspect="property")
            elif name not in o_props:
                added = resolve(self.u, u_props[name], u_base)[0]
                if _open_to(o, name):
                    if name in u_required:  # before the empty schema (the registry looks at that first): older documents may lack it
                        rule = "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL" if _has_default(u_props[name]) else "REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"
                    elif kind(added) == "empty":
                        rule = "PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL"
                    else:
                        rule = "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"
                else:
                    held = _held(o, name)
                    if held is not None:  # older documents may carry it, as the schema for other properties allowed
                        self._covered(held, o_base, u_props[name], u_base, at, "PROPERTY_ADDED", name)
                    if name in u_required:
                        rule = ("REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL" if _has_default(u_props[name])
                                else "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL")
                    else:  # beside what the schema that held it says, as the registry reports it
                        rule = "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"
                self.add(rule, at, new=_type_of(added), detail=name, aspect="property")
            else:
                self.compare(o_props[name], o_base, u_props[name], u_base, at)
        self._dependencies(o, o_base, u, u_base, path)
        self._applied(o.get("propertyNames", True), o_base, u.get("propertyNames", True), u_base, path, "PROPERTY_NAMES", "propertyNames")
        at = f"{path}{{}}" if path else "{}"
        o_patterns, u_patterns = o.get("patternProperties") or {}, u.get("patternProperties") or {}
        for pattern in sorted(o_patterns.keys() | u_patterns.keys()):
            before, after = o_patterns.get(pattern), u_patterns.get(pattern)
            if before is None or after is None or not self._alike(before, o_base, after, u_base, at):
                self.add("PATTERN_PROPERTIES_CHANGED", at, "none" if before is None else _type_of(resolve(self.o, before, o_base)[0]),
                         "none" if after is None else _type_of(resolve(self.u, after, u_base)[0]), pattern, aspect=f"patternProperties {pattern}")
        self._others(o.get("additionalProperties", True), o_base, u.get("additionalProperties", True), u_base, at, "ADDITIONAL_PROPERTIES",
                     "additionalProperties")
        self._others(o.get("unevaluatedProperties", True), o_base, u.get("unevaluatedProperties", True), u_base, at, "UNEVALUATED_PROPERTIES",
                     "unevaluatedProperties")

    def _dependencies(self, o: dict[str, Any], o_base: str, u: dict[str, Any], u_base: str, path: str) -> None:
        """``dependencies`` (drafts 4 to 7) and ``dependentRequired``/``dependentSchemas`` (2019-09 on), by the property named."""
        (o_lists, o_schemas), (u_lists, u_schemas) = _dependents(o), _dependents(u)
        for name in sorted(o_lists.keys() | u_lists.keys()):
            before, after = o_lists.get(name), u_lists.get(name)
            if before == after:
                continue
            rule = ("DEPENDENCY_ARRAY_REMOVED" if after is None else "DEPENDENCY_ARRAY_ADDED" if before is None
                    else "DEPENDENCY_ARRAY_EXTENDED" if after > before else "DEPENDENCY_ARRAY_NARROWED" if after < before else "DEPENDENCY_ARRAY_CHANGED")
            self.add(rule, _join(path, name), ", ".join(sorted(before or ())), ", ".join(sorted(after or ())), name, aspect="dependentRequired")
        for name in sorted(o_schemas.keys() | u_schemas.keys()):
            if name not in u_schemas:
                self.add("DEPENDENCY_SCHEMA_REMOVED", _join(path, name), detail=name, aspect="dependentSchemas")
            elif name not in o_schemas:
                self.add("DEPENDENCY_SCHEMA_ADDED", _join(path, name), detail=name, aspect="dependentSchemas")
            else:
                self.compare(o_schemas[name], o_base, u_schemas[name], u_base, path)  # what the object must also match: its own paths

    def _applied(self, o_schema: Any, o_base: str, u_schema: Any, u_base: str, at: str, rules: str, aspect: str) -> None:
        """A schema a keyword applies to parts of a value (``propertyNames`` to each name, ``contains`` to items,
        ``then``/``else``): ``{rules}_NARROWED`` when the update's refuses something the original's accepted,
        ``_EXTENDED`` when it changed and accepts all it did."""
        if json_value(o_schema) == json_value(u_schema):
            return
        sub = self._sub(o_schema, o_base, u_schema, u_base, at)
        self.add(f"{rules}_NARROWED" if self.walks.fails(sub.found) else f"{rules}_EXTENDED", at, aspect=aspect)

    def _conditional(self, o: dict[str, Any], o_base: str, u: dict[str, Any], u_base: str, path: str) -> None:
        """``if``/``then``/``else``: a value that matches ``if`` must match ``then``, one that does not, ``else``. The
        registry compares none of it."""
        o_if, u_if = "if" in o and ("then" in o or "else" in o), "if" in u and ("then" in u or "else" in u)
        if not o_if and not u_if:
            return
        if o_if != u_if:
            self.add("CONDITION_ADDED" if u_if else "CONDITION_REMOVED", path, aspect="if")
        elif json_value(o["if"]) != json_value(u["if"]):
            self.add("CONDITION_CHANGED", path, aspect="if")
        else:
            for word in ("then", "else"):
                self._applied(o.get(word, True), o_base, u.get(word, True), u_base, path, "CONDITION", "if")

    def _others(self, o_extra: Any, o_base: str, u_extra: Any, u_base: str, at: str, rules: str, aspect: str) -> None:
        """The schema for members no other keyword names (``additionalProperties``, ``additionalItems``, ``unevaluated*``):
        ``{rules}_ADDED`` when it was false and is not, ``_REMOVED`` the reverse, ``_NARROWED``/``_EXTENDED`` when it was or became
        a schema rather than anything; two schemas are compared."""
        o_extra, o_base = resolve(self.o, o_extra, o_base)
        u_extra, u_base = resolve(self.u, u_extra, u_base)
        o_kind, u_kind = kind(o_extra), kind(u_extra)
        if (o_kind == "false") != (u_kind == "false"):
            self.add(f"{rules}_ADDED" if o_kind == "false" else f"{rules}_REMOVED", at, aspect=aspect)
        elif o_kind != "false":
            if o_kind == "empty" and u_kind != "empty":
                self.add(f"{rules}_NARROWED", at, aspect=aspect)
            elif o_kind != "empty" and u_kind == "empty":
                self.add(f"{rules}_EXTENDED", at, aspect=aspect)
            elif o_kind != "empty":
                self.compare(o_extra, o_base, u_extra, u_base, at)

    def _array(self, o: dict[str, Any], o_base: str, u: dict[str, Any], u_base: str, path: str) -> None:
        at = f"{path}[]" if path else "[]"
        (o_tuple, o_further), (u_tuple, u_further) = _items(o), _items(u)
        for index in range(min(len(o_tuple), len(u_tuple))):
            self.compare(o_tuple[index], o_base, u_tuple[index], u_base, f"{path}[{index}]")
        held = _held_item(u)
        for index in range(len(u_tuple), len(o_tuple)):  # removed: what the update holds such an item to now
            if _open_items(u):
                self.add("ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL", f"{path}[{index}]", aspect="item")
            elif held is not None:
                self._covered(o_tuple[index], o_base, held, u_base, f"{path}[{index}]", "ITEM_REMOVED")
            elif self.kind_of(self.o, o_tuple[index], o_base) == "false":
                self.add("ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL", f"{path}[{index}]", aspect="item")
            else:
                self.add("ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL", f"{path}[{index}]", aspect="item")
        held = _held_item(o)
        for index in range(len(o_tuple), len(u_tuple)):  # added: what older documents could have there
            added = resolve(self.u, u_tuple[index], u_base)[0]
            if _open_items(o):
                rule = "ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL" if kind(added) == "empty" else "ITEM_ADDED_TO_OPEN_CONTENT_MODEL"
                self.add(rule, f"{path}[{index}]", new=_type_of(added), aspect="item")
            elif held is not None:
                self._covered(held, o_base, u_tuple[index], u_base, f"{path}[{index}]", "ITEM_ADDED")
            else:
                self.add("ITEM_ADDED_TO_CLOSED_CONTENT_MODEL", f"{path}[{index}]", new=_type_of(added), aspect="item")
        if o_tuple or u_tuple:
            self._others(o_further, o_base, u_further, u_base, at, "ADDITIONAL_ITEMS", "additionalItems")
        elif ("items" in o) != ("items" in u) and self.kind_of(*((self.u, u["items"], u_base) if "items" in u else (self.o, o["items"], o_base))) != "empty":
            self.add("SCHEMA_ADDED" if "items" in u else "SCHEMA_REMOVED", at, _type_of(resolve(self.o, o_further, o_base)[0]),
                     _type_of(resolve(self.u, u_further, u_base)[0]), aspect="items")  # one schema for every item, where there was none
        else:  # one schema for every item
            self.compare(o_further, o_base, u_further, u_base, at)
        self._others(o.get("unevaluatedItems", True), o_base, u.get("unevaluatedItems", True), u_base, at, "UNEVALUATED_ITEMS", "unevaluatedItems")
        if ("contains" in o) != ("contains" in u):  # an array must hold an item that matches it
            self.add("CONTAINS_ADDED" if "contains" in u else "CONTAINS_REMOVED", path, aspect="contains")
        elif "contains" in o:
            self._applied(o["contains"], o_base, u["contains"], u_base, path, "CONTAINS", "contains")
        if bool(o.get("uniqueItems")) != bool(u.get("uniqueItems")):
            self.add("UNIQUE_ITEMS_ADDED" if u.get("uniqueItems") else "UNIQUE_ITEMS_REMOVED", path, aspect="uniqueItems")

    @staticmethod
    def _shown(schema: JsonSchema, node: Any) -> str:
        """What a schema is, for a message: its type, or for an allOf no one wrote, its parts (``string + enum``)."""
        if isinstance(node, dict) and id(node) in schema.made:
            return " + ".join(_part(part) for part in node["allOf"])
        return _type_of(node)

    @staticmethod
    def kind_of(schema: JsonSchema, node: Any, base: str) -> str:
        """The kind of ``node`` once its ``$ref`` is followed."""
        return kind(resolve(schema, node, base)[0])


def _criterion(node: dict[str, Any]) -> str:
    return next((w for w in ("allOf", "anyOf", "oneOf") if w in node), "anyOf")  # a type list is an anyOf


def _same(a: tuple[Any, str], b: tuple[Any, str]) -> bool:
    """The same schema, read under the same base (``1`` is not ``true``)."""
    return a[1] == b[1] and json_value(a[0]) == json_value(b[0])


def _distinct(branches: list[tuple[Any, str]]) -> list[tuple[Any, str]]:
    """Branches without repeats (the same schema read under the same base, as ``_same`` tells), first places kept."""
    seen: dict[tuple[str, Any], tuple[Any, str]] = {}
    for node, base in branches:
        seen.setdefault((base, json_value(node)), (node, base))
    return list(seen.values())


def _limits(node: dict[str, Any]) -> dict[str, Any]:
    """The node's limits as drafts 6 on write them: draft 4's ``"exclusiveMinimum": true`` beside ``"minimum": 3`` is
    ``"exclusiveMinimum": 3`` (and no inclusive minimum), so that setting the flag counts as the narrowing it is."""
    if not isinstance(node.get("exclusiveMinimum"), bool) and not isinstance(node.get("exclusiveMaximum"), bool):
        return node
    limits = dict(node)
    for word, inclusive in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        flag = node.get(word)
        if isinstance(flag, bool):
            limits[word] = limits.pop(inclusive, None) if flag else None
    return limits


def _anything(node: Any) -> bool:
    return node is True or node == {}


def _open(node: dict[str, Any]) -> bool:
    """An open content model, as the registry sees one: any other property is allowed, of any type (no
    ``patternProperties``, and ``additionalProperties`` and ``unevaluatedProperties`` absent or true)."""
    return (_anything(node.get("additionalProperties", True)) and not node.get("patternProperties")
            and _anything(node.get("unevaluatedProperties", True)))


def _open_to(node: dict[str, Any], name: str) -> bool:
    """Whether an object allows the property ``name`` with any value: open, or open but for patterns that do not find the name
    (the registry counts such an object closed, and so calls a property added there compatible; older documents may have it)."""
    return (_pattern(node, name) is None and _anything(node.get("additionalProperties", True))
            and _anything(node.get("unevaluatedProperties", True)))


def _pattern(node: dict[str, Any], name: str) -> Any:
    """The schema of the first ``patternProperties`` entry whose pattern finds ``name``; None when none does."""
    for pattern, schema in (node.get("patternProperties") or {}).items():
        if re.search(pattern, name):  # the meta-schema check has compiled every pattern (format "regex")
            return schema
    return None


def _held(node: dict[str, Any], name: str) -> Any:
    """The schema a partially open object holds the property ``name`` to, when its ``properties`` do not name it: the first
    ``patternProperties`` entry whose pattern finds the name, else a schema in ``additionalProperties`` (or, that absent,
    in ``unevaluatedProperties``); None when there is none (the registry then counts the object closed to it)."""
    pattern = _pattern(node, name)
    return pattern if pattern is not None else _holding(node.get("additionalProperties", True), node.get("unevaluatedProperties", True))


def _holding(further: Any, unevaluated: Any) -> Any:
    """The schema members no other keyword names are held to: ``further`` (``additionalProperties``, ``additionalItems``...)
    when it is one, else ``unevaluated`` when that is a schema that does not accept everything; None when none is allowed."""
    if further is not True:
        return further if further is not False else None
    return unevaluated if unevaluated is not False and not _anything(unevaluated) else None


def _items(node: dict[str, Any]) -> tuple[list[Any], Any]:
    """An array as the places of its tuple and what it holds the items after them to: ``prefixItems`` and ``items`` (2020-12),
    an ``items`` list and ``additionalItems`` (before it), or no places and ``items`` for every item."""
    if "prefixItems" in node:
        return list(node["prefixItems"]), node.get("items", True)
    items = node.get("items", True)
    if isinstance(items, list):
        return items, node.get("additionalItems", True)
    return [], items


def _open_items(node: dict[str, Any]) -> bool:
    """An array that allows any item, of any type, after its tuple's places."""
    return _anything(_items(node)[1]) and _anything(node.get("unevaluatedItems", True))


def _held_item(node: dict[str, Any]) -> Any:
    """The schema an array holds the items after its tuple's places to; None when it allows none."""
    return _holding(_items(node)[1], node.get("unevaluatedItems", True))


def _dependents(node: dict[str, Any]) -> tuple[dict[str, frozenset[str]], dict[str, Any]]:
    """The properties each property requires beside it, and the schemas it brings: ``dependencies`` (lists and schemas, drafts 4
    to 7) and ``dependentRequired`` and ``dependentSchemas`` (2019-09 on)."""
    lists = {name: frozenset(v) for name, v in (node.get("dependentRequired") or {}).items()}
    schemas = dict(node.get("dependentSchemas") or {})
    for name, value in (node.get("dependencies") or {}).items():
        if isinstance(value, list):
            lists[name] = frozenset(value)
        else:
            schemas[name] = value
    return lists, schemas


def _has_default(node: Any) -> bool:
    return isinstance(node, dict) and "default" in node


def _values(items: list[Any]) -> dict[Any, str]:
    """An enum's values as JSON Schema tells them apart, each with its JSON text."""
    return {json_value(v): json.dumps(v, sort_keys=True) for v in items}


def _type_of(node: Any) -> str:
    if isinstance(node, dict):
        declared = node.get("type")
        if isinstance(declared, list):
            return "|".join(str(t) for t in declared)
        if declared:
            return str(declared)
    return kind(node)


def _part(part: Any) -> str:
    """A part of a schema, for a message: the keyword it stands for (``enum``, ``anyOf``, a ``$ref``'s target), else its type."""
    if isinstance(part, dict) and len(part) == 1:
        word = next(iter(part))
        if word in PARTS:
            return str(word)
        if word == "$ref":
            return str(part[word])
    return _type_of(part)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True)
