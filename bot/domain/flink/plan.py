"""Column lineage and casts from Flink's compiled plan (``compilePlanSql(...).asJsonString()``): which sink
column comes from which source columns, and every CAST the plan performs. Node kinds this module does not know
are taken conservatively: each of their outputs comes from all of their inputs (``coarse``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from bot.domain.flink.types import SqlType, SqlTypeError, parse_type

Origin = frozenset[tuple[str, str]]  # (table, column path) pairs
PASS_THROUGH = ("exchange", "watermark-assigner", "changelog-normalize", "drop-update-before", "mini-batch-assigner", "sink-materializer",
                "limit", "sort-limit", "sort", "rank", "deduplicate", "window-deduplicate", "window-rank", "temporal-sort", "window-table-function",
                "calc-watermark", "local-window-aggregate")
AGGREGATES = ("group-aggregate", "global-group-aggregate", "local-group-aggregate", "incremental-group-aggregate", "window-aggregate",
              "global-window-aggregate", "group-window-aggregate", "python-group-aggregate", "over-aggregate")
JOINS = ("join", "interval-join", "temporal-join", "window-join", "multi-join")


@dataclass
class Cast:
    """A CAST in the plan: from which type to which, producing which output column of its node."""

    source: SqlType
    target: SqlType
    column: str


@dataclass
class PlanLineage:
    """Per sink table, per sink column, the source columns it comes from (a lookup join's dimension table counts as a
    source); the casts; the node kinds taken conservatively (``coarse``: the lineage is not exact)."""

    sinks: dict[str, dict[str, Origin]] = field(default_factory=dict)
    sources: set[str] = field(default_factory=set)
    casts: list[Cast] = field(default_factory=list)
    coarse: list[str] = field(default_factory=list)  # node kinds taken conservatively


def table_name(identifier: str) -> str:
    """``\\`default_catalog\\`.\\`db\\`.\\`orders\\``` -> ``orders``."""
    return identifier.rsplit(".", 1)[-1].strip("`")


def lineage(plan: dict[str, Any]) -> PlanLineage:
    """Walk the plan's nodes in dependency order."""
    nodes = {n["id"]: n for n in plan.get("nodes", [])}
    inputs: dict[int, list[int]] = {i: [] for i in nodes}
    for edge in plan.get("edges", []):
        inputs.setdefault(edge["target"], []).append(edge["source"])
    found = PlanLineage()
    done: dict[int, list[Origin]] = {}

    def outputs(node_id: int) -> list[Origin]:
        if node_id not in done:
            done[node_id] = []  # a cycle (none in Flink plans) reads as nothing
            done[node_id] = _node(nodes[node_id], [outputs(i) for i in inputs.get(node_id, [])], found)
        return done[node_id]

    for node_id in nodes:
        outputs(node_id)
    return found


def _node(node: dict[str, Any], ins: list[list[Origin]], found: PlanLineage) -> list[Origin]:
    kind = _kind(node["type"])
    names = _names(node.get("outputType"))
    first = ins[0] if ins else []
    if kind == "table-source-scan":
        table = node.get("scanTableSource", {}).get("table", {})
        name = table_name(table.get("identifier", "?"))
        found.sources.add(name)
        columns = table.get("resolvedTable", {}).get("schema", {}).get("columns", [])
        projected = _projection(node.get("scanTableSource", {}).get("abilities", []), columns)
        return [frozenset({(name, path)}) for path in (projected or names)]
    if kind == "sink":
        table = node.get("dynamicTableSink", {}).get("table", {})
        name = table_name(table.get("identifier", "?"))
        columns = [c["name"] for c in table.get("resolvedTable", {}).get("schema", {}).get("columns", [])
                   if c.get("kind", "PHYSICAL") == "PHYSICAL"]
        targets = node.get("targetColumns")
        if targets:
            columns = [columns[path[0]] for path in targets if path and path[0] < len(columns)]
        sink = found.sinks.setdefault(name, {})
        for column, origin in zip(columns, first, strict=False):
            sink[column] = sink.get(column, frozenset()) | origin
        return first
    if kind == "calc":
        out = [_expression(e, first, found, names[i] if i < len(names) else f"${i}") for i, e in enumerate(node.get("projection", []))]
        return out
    if kind in PASS_THROUGH:  # fields it adds (window bounds, a rank) come from what it orders or windows by: all of it
        everything = frozenset().union(*first) if first else frozenset()
        return list(first) + [everything] * max(0, len(names) - len(first))
    if kind == "union":
        width = max((len(i) for i in ins), default=0)
        return [frozenset().union(*(i[k] for i in ins if k < len(i))) for k in range(width)]
    if kind in JOINS:
        return [o for i in ins for o in i]
    if kind == "lookup-join":
        looked_up = _lookup(node, found)
        if looked_up is not None:
            return list(first) + looked_up
    if kind in AGGREGATES:
        out = [first[g] for g in node.get("grouping", []) if g < len(first)]
        for call in node.get("aggCalls", []):
            out.append(frozenset().union(*(first[a] for a in call.get("argList", []) if a < len(first))))
        return out + [frozenset()] * max(0, len(names) - len(out))
    found.coarse.append(kind)
    everything = frozenset().union(*(o for i in ins for o in i))
    return [everything] * len(names)


def _lookup(node: dict[str, Any], found: PlanLineage) -> list[Origin] | None:
    """The columns a lookup join adds: its dimension table's (after the projection the planner pushed onto it)."""
    temporal = node.get("temporalTable") or {}
    identifier = (temporal.get("lookupTableSource") or {}).get("table", {}).get("identifier")
    if not identifier:
        return None  # a legacy lookup source: no table to name
    name = table_name(identifier)
    found.sources.add(name)
    columns = [frozenset({(name, column)}) for column in _names(temporal.get("outputType"))]
    projection = node.get("projectionOnTemporalTable")
    if projection:
        columns = [_expression(e, columns, found, f"${i}") for i, e in enumerate(projection)]
    return columns


def _expression(expr: dict[str, Any], ins: list[Origin], found: PlanLineage, column: str) -> Origin:
    """The source columns an expression reads (a field access narrows a whole row to its field); casts noted."""
    kind = expr.get("kind")
    if kind == "INPUT_REF":
        index = expr.get("inputIndex", -1)
        return ins[index] if 0 <= index < len(ins) else frozenset()
    if kind == "FIELD_ACCESS":
        inner = _expression(expr.get("expr", {}), ins, found, column)
        return frozenset((table, f"{path}.{expr['name']}") for table, path in inner)
    if kind == "CALL" and expr.get("internalName", "").startswith("$CAST$") and expr.get("operands"):
        try:
            found.casts.append(Cast(parse_type(expr["operands"][0]["type"]), parse_type(expr["type"]), column))
        except (SqlTypeError, KeyError):
            pass  # a type this module cannot read: no cast to judge
    origin: Origin = frozenset()
    for operand in _operands(expr):
        origin |= _expression(operand, ins, found, column)
    return origin


def _operands(expr: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for key in ("operands", "exprs"):
        for item in expr.get(key, []) or []:
            if isinstance(item, dict):
                yield item
    if isinstance(expr.get("expr"), dict) and expr.get("kind") != "FIELD_ACCESS":
        yield expr["expr"]


def _kind(node_type: str) -> str:
    """``stream-exec-table-source-scan_2`` -> ``table-source-scan``."""
    return node_type.split("_", 1)[0].removeprefix("stream-exec-").removeprefix("batch-exec-")


def _names(output_type: Any) -> list[str]:
    if isinstance(output_type, dict):
        return [f["name"] for f in output_type.get("fields", [])]
    if isinstance(output_type, str):
        try:
            return [name for name, _ in parse_type(output_type).fields]
        except SqlTypeError:
            return []
    return []


def _projection(abilities: list[dict[str, Any]], columns: list[dict[str, Any]]) -> list[str] | None:
    """The column paths a scan reads after projection push-down (nested paths when it projects into rows)."""
    for ability in abilities:
        if ability.get("type") == "ProjectPushDown":
            paths = []
            for indexes in ability.get("projectedFields", []):
                if not indexes or indexes[0] >= len(columns):
                    continue
                path, row = [columns[indexes[0]]["name"]], _row(columns[indexes[0]].get("dataType"))
                for index in indexes[1:]:
                    if row is None or index >= len(row.fields):
                        break
                    name, sub = row.fields[index]
                    path.append(name)
                    row = sub
                paths.append(".".join(path))
            return paths
    return None


def _row(text: Any) -> SqlType | None:
    try:
        return parse_type(text) if isinstance(text, str) else None
    except SqlTypeError:
        return None
