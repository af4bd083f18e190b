"""Avro schemas as a graph of nodes: named types are shared objects, so recursion is a cycle."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
NAMED = frozenset({"record", "enum", "fixed"})
NO_DEFAULT = object()


@dataclass(eq=False, slots=True)
class Node:
    """One schema: a primitive, record, enum, array, map, union or fixed (with an optional logical type)."""

    type: str
    logical: str | None = None
    precision: int | None = None
    scale: int | None = None
    name: str | None = None
    aliases: frozenset[str] = frozenset()
    doc: str | None = None
    fields: list[Field] = field(default_factory=list)
    symbols: list[str] = field(default_factory=list)
    enum_default: str | None = None
    items: Node | None = None
    values: Node | None = None
    branches: list[Node] = field(default_factory=list)
    size: int | None = None
    props: dict[str, Any] = field(default_factory=dict)
    by_name: dict[str, Field] = field(default_factory=dict)
    by_alias: dict[str, Field] = field(default_factory=dict)  # alias: the last field that names it (the one a reader's rewrite picks)
    referenced: bool = False  # the root type of a referenced schema (another subject's): paths show where they enter it

    @property
    def short_name(self) -> str:
        """The unqualified name of a named type (what schema resolution compares)."""
        assert self.name is not None
        return self.name.rpartition(".")[2]

    @property
    def namespace(self) -> str:
        """The namespace of a named type ('' for the null namespace)."""
        assert self.name is not None
        return self.name.rpartition(".")[0]

    def describe(self) -> str:
        """A short human name: ``long (timestamp-millis)``, ``record Order``, ``array<string>``."""
        if self.type in NAMED:
            base = f"{self.type} {self.short_name}"
            if self.type == "fixed":
                base += f"[{self.size}]"
        elif self.type == "array":
            assert self.items is not None
            base = f"array<{self.items.describe()}>"
        elif self.type == "map":
            assert self.values is not None
            base = f"map<{self.values.describe()}>"
        elif self.type == "union":
            base = "union[" + ", ".join(b.describe() for b in self.branches) + "]"
        else:
            base = self.type
        if self.logical == "decimal":
            return f"{base} (decimal({self.precision},{self.scale}))"
        if self.logical:
            return f"{base} ({self.logical})"
        return base


@dataclass(eq=False, slots=True)
class Field:
    """A record field."""

    name: str
    type: Node
    default: Any = NO_DEFAULT
    aliases: frozenset[str] = frozenset()
    doc: str | None = None
    order: str = "ascending"
    props: dict[str, Any] = field(default_factory=dict)

    @property
    def has_default(self) -> bool:
        """Whether the field declares a default value."""
        return self.default is not NO_DEFAULT


@dataclass(eq=False, slots=True)
class Schema:
    """A parsed schema: its root node, its named types, and (when asked for) the parts another parse may
    take over (see ``parse``). Its JSON for identity and storage is ``normal_form(schema)``."""

    root: Node
    names: dict[str, Node]
    parts: Any = None

    @property
    def label(self) -> str:
        """What paths start with: the root's unqualified name, or ``(value)`` for an unnamed root."""
        return self.root.short_name if self.root.type in NAMED else "(value)"
