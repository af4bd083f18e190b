"""The normal form of a parsed schema: the JSON that stands for it in storage and in fingerprints."""

from __future__ import annotations

from typing import Any

from bot.domain.avro.model import NAMED, NO_DEFAULT, Field, Node, Schema


def normal_form(schema: Schema) -> Any:
    """The schema as JSON with every attribute in a fixed form: full names, each named type spelled out
    where it is first used, aliases and properties sorted, defaults as given. Equal for schemas
    identical in every attribute; what fingerprints hash and what a stored version's text is."""
    return _Normaliser().node(schema.root)


class _Normaliser:
    def __init__(self) -> None:
        self.written: set[str] = set()  # named types already spelled out: later uses are their names

    def node(self, node: Node) -> Any:
        kind = node.type
        out: dict[str, Any]
        if kind in NAMED:
            assert node.name is not None
            if node.name in self.written:
                return node.name
            self.written.add(node.name)
            out = {"type": kind, "name": node.name}
            if node.aliases:
                out["aliases"] = sorted(node.aliases)
            if node.doc is not None:
                out["doc"] = node.doc
            if kind == "record":
                out["fields"] = [self.field(field) for field in node.fields]
            elif kind == "enum":
                out["symbols"] = list(node.symbols)
                if node.enum_default is not None:
                    out["default"] = node.enum_default
            else:
                out["size"] = node.size
        elif kind == "union":
            return [self.node(branch) for branch in node.branches]
        elif kind == "array":
            assert node.items is not None
            out = {"type": kind, "items": self.node(node.items)}
        elif kind == "map":
            assert node.values is not None
            out = {"type": kind, "values": self.node(node.values)}
        elif not node.props and not node.logical:
            return kind
        else:
            out = {"type": kind}
        if node.props:
            out.update(sorted(node.props.items()))
        if node.logical:
            out["logicalType"] = node.logical
            if node.logical == "decimal":
                out["precision"], out["scale"] = node.precision, node.scale
        return out

    def field(self, field: Field) -> dict[str, Any]:
        out: dict[str, Any] = {"name": field.name, "type": self.node(field.type)}
        if field.props:
            out.update(sorted(field.props.items()))
        if field.default is not NO_DEFAULT:
            out["default"] = field.default
        if field.aliases:
            out["aliases"] = sorted(field.aliases)
        if field.doc is not None:
            out["doc"] = field.doc
        if field.order != "ascending":
            out["order"] = field.order
        return out
