"""Flink SQL types: read from the planner's serializable strings (``ROW<`a` INT NOT NULL> NOT NULL``),
compared with Avro by Flink's avro formats' mapping, and judged for lossy conversions."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from bot.domain.avro.model import Node

ALIASES = {"STRING": ("VARCHAR", (2147483647,)), "BYTES": ("VARBINARY", (2147483647,)), "INTEGER": ("INT", ()),
           "DEC": ("DECIMAL", None), "NUMERIC": ("DECIMAL", None)}
DEFAULTS = {"DECIMAL": (10, 0), "TIMESTAMP": (6,), "TIMESTAMP_LTZ": (6,), "TIME": (0,), "VARCHAR": (1,), "CHAR": (1,),
            "BINARY": (1,), "VARBINARY": (1,)}
INTEGER_DIGITS = {"TINYINT": 3, "SMALLINT": 5, "INT": 10, "BIGINT": 19}
TOKEN = re.compile(r"\s*(`(?:[^`]|``)*`|'(?:[^']|'')*'|[A-Za-z_][A-Za-z0-9_$]*|\d+|[<>(),])")
AVRO_PRIMITIVE = {"boolean": "BOOLEAN", "int": "INT", "long": "BIGINT", "float": "FLOAT", "double": "DOUBLE",
                  "string": "VARCHAR", "bytes": "VARBINARY", "enum": "VARCHAR", "fixed": "VARBINARY"}
AVRO_LOGICAL = {"date": ("DATE", ()), "time-millis": ("TIME", (3,)), "time-micros": ("TIME", (6,)),
                "timestamp-millis": ("TIMESTAMP", (3,)), "timestamp-micros": ("TIMESTAMP", (6,)),
                "local-timestamp-millis": ("TIMESTAMP", (3,)), "local-timestamp-micros": ("TIMESTAMP", (6,))}
PROMOTIONS = {("INT", "BIGINT"), ("INT", "FLOAT"), ("INT", "DOUBLE"), ("BIGINT", "FLOAT"), ("BIGINT", "DOUBLE"), ("FLOAT", "DOUBLE"),
              ("VARCHAR", "VARBINARY"), ("VARBINARY", "VARCHAR")}  # Avro's own resolution: the writer's type read as the reader's


class SqlTypeError(ValueError):
    """A type string this module cannot read."""


@dataclass(frozen=True)
class SqlType:
    """One Flink SQL type: its root name, parameters, nullability and parts (row fields, element, key, value)."""

    name: str
    params: tuple[int, ...] = ()
    nullable: bool = True
    fields: tuple[tuple[str, SqlType], ...] = ()
    parts: tuple[SqlType, ...] = field(default=())  # ARRAY/MULTISET: (element,); MAP: (key, value)

    def __str__(self) -> str:
        if self.name == "VARCHAR" and self.params == (2147483647,):
            text = "STRING"
        elif self.name == "VARBINARY" and self.params == (2147483647,):
            text = "BYTES"
        elif self.name == "ROW":
            text = "ROW<" + ", ".join(f"{n} {t}" for n, t in self.fields) + ">"
        elif self.parts:
            text = f"{self.name}<{', '.join(str(p) for p in self.parts)}>"
        elif self.params:
            text = f"{self.name}({', '.join(str(p) for p in self.params)})"
        else:
            text = self.name
        return text if self.nullable else f"{text} NOT NULL"

    def field(self, name: str) -> SqlType | None:
        """A row's field by name."""
        return next((t for n, t in self.fields if n == name), None)


def parse_type(text: str) -> SqlType:
    """Read a type as the planner writes it; SqlTypeError for anything else."""
    tokens = [m.group(1) for m in TOKEN.finditer(text)]
    if "".join(tokens).replace(" ", "") != re.sub(r"\s+", "", text):
        raise SqlTypeError(f"not a Flink SQL type: {text!r}")
    parser = _Parser(tokens)
    parsed = parser.type()
    if parser.i != len(tokens):
        raise SqlTypeError(f"not a Flink SQL type: {text!r}")
    return parsed


class _Parser:
    def __init__(self, tokens: list[str]) -> None:
        self.tokens, self.i = tokens, 0

    def peek(self, offset: int = 0) -> str:
        return self.tokens[self.i + offset].upper() if self.i + offset < len(self.tokens) else ""

    def take(self, expected: str | None = None) -> str:
        if self.i >= len(self.tokens) or (expected is not None and self.tokens[self.i].upper() != expected):
            raise SqlTypeError(f"expected {expected or 'more'} in a type, found {self.peek() or 'the end'}")
        self.i += 1
        return self.tokens[self.i - 1]

    def type(self) -> SqlType:
        name = self.take().upper()
        params: tuple[int, ...] | None = ()
        fields: list[tuple[str, SqlType]] = []
        parts: list[SqlType] = []
        if name in ALIASES:
            name, params = ALIASES[name]
        if name == "DOUBLE" and self.peek() == "PRECISION":
            self.take()
        if name in ("ROW", "ARRAY", "MULTISET", "MAP") and self.peek() in ("<", "("):
            close = ">" if self.take() == "<" else ")"
            while self.peek() != close:
                if name == "ROW":
                    field_name = self.take().strip("`").replace("``", "`")
                    field_type = self.type()
                    if self.peek().startswith("'"):
                        self.take()  # a field's description
                    fields.append((field_name, field_type))
                else:
                    parts.append(self.type())
                if self.peek() == ",":
                    self.take()
            self.take(close)
        elif self.peek() == "(" and name not in ("ROW",):
            self.take()
            numbers = []
            while self.peek() != ")":
                numbers.append(int(self.take()))
                if self.peek() == ",":
                    self.take()
            self.take(")")
            params = tuple(numbers)
        if not params:
            params = DEFAULTS.get(name, ())
        if name == "DECIMAL" and len(params) == 1:
            params = (params[0], 0)
        if name == "TIMESTAMP" and self.peek() == "WITH":
            self.take(), self.take("LOCAL"), self.take("TIME"), self.take("ZONE")
            name = "TIMESTAMP_LTZ"
        elif name == "TIMESTAMP" and self.peek() == "WITHOUT":
            self.take(), self.take("TIME"), self.take("ZONE")
        nullable = True
        if self.peek() == "NOT" and self.peek(1) == "NULL":
            self.take(), self.take()
            nullable = False
        elif self.peek() == "NULL":
            self.take()
        return SqlType(name, params or (), nullable, tuple(fields), tuple(parts))


def from_avro(node: Node) -> SqlType:
    """The SQL type Flink's avro formats read an Avro type as (a union with null is the nullable type)."""
    nullable = False
    if node.type == "union":
        others = [b for b in node.branches if b.type != "null"]
        nullable = len(others) < len(node.branches)
        if len(others) != 1:
            return SqlType("RAW", (), nullable)  # a union of several types: Flink's formats do not read it
        node = others[0]
    if node.logical == "decimal" and node.precision is not None:
        return SqlType("DECIMAL", (node.precision, node.scale or 0), nullable)
    if node.logical in AVRO_LOGICAL and (node.logical != "date" or node.type == "int"):
        name, params = AVRO_LOGICAL[node.logical]
        return SqlType(name, params, nullable)
    if node.type == "record":
        return SqlType("ROW", (), nullable, tuple((f.name, from_avro(f.type)) for f in node.fields))
    if node.type == "array" and node.items is not None:
        return SqlType("ARRAY", (), nullable, parts=(from_avro(node.items),))
    if node.type == "map" and node.values is not None:
        return SqlType("MAP", (), nullable, parts=(SqlType("VARCHAR", (2147483647,), False), from_avro(node.values)))
    name = AVRO_PRIMITIVE.get(node.type, "RAW")
    params = (2147483647,) if name in ("VARCHAR", "VARBINARY") else ()
    return SqlType(name, params, nullable)


def read_problems(column: SqlType, written: SqlType, path: str) -> list[tuple[str, str]]:
    """Why a column of type ``column`` cannot read values written as ``written`` (Avro's resolution, Flink's
    mapping): ``(path, reason)`` pairs, empty when it reads them."""
    if written.nullable and not column.nullable:
        return [(path, f"the approved schema allows null here, but the column is {column}: a null fails the job")]
    if column.name == "ROW" and written.name == "ROW":
        problems = []
        for name, sub in column.fields:
            other = written.field(name)
            if other is None:
                problems.append((f"{path}.{name}", "the approved schema has no such field"))
            else:
                problems += read_problems(sub, other, f"{path}.{name}")
        return problems
    if column.name in ("ARRAY", "MULTISET", "MAP") and column.name == written.name:
        suffix = ["[]"] if column.name != "MAP" else ["{key}", "{}"]
        problems = []
        for mine, theirs, end in zip(column.parts, written.parts, suffix, strict=False):
            problems += read_problems(mine, theirs, f"{path}{end}")
        return problems
    if _same_base(column, written) or (written.name, column.name) in PROMOTIONS:
        return []
    if column.name == "TIMESTAMP_LTZ" and written.name == "TIMESTAMP" and column.params == written.params:
        return []  # the format reads timestamp-millis as TIMESTAMP_LTZ(3) too
    if column.name in ("VARCHAR", "CHAR") and written.name == "VARCHAR":
        return []
    return [(path, f"the approved schema has {_plain(written)}, the column reads {_plain(column)}")]


def lossy(source: SqlType, target: SqlType, path: str) -> list[tuple[str, str]]:
    """Where converting ``source`` values into ``target`` can lose data: ``(path, reason)`` pairs."""
    found: list[tuple[str, str]] = []
    if source.nullable and not target.nullable:
        found.append((path, f"nullable {_plain(source)} into {target}: a null fails the job"))
    if source.name == "ROW" and target.name == "ROW":
        for (name, mine), (_, theirs) in zip(source.fields, target.fields, strict=False):
            found += lossy(mine, theirs, f"{path}.{name}")
        return found
    if source.name == target.name and source.parts:
        for mine, theirs in zip(source.parts, target.parts, strict=False):
            found += lossy(mine, theirs, f"{path}[]")
        return found
    reason = _narrowing(source, target)
    if reason:
        found.append((path, f"{_plain(source)} into {_plain(target)} {reason}"))
    return found


def _narrowing(source: SqlType, target: SqlType) -> str | None:
    s, t = source.name, target.name
    if s == "DECIMAL" and t == "DECIMAL":
        (p1, s1), (p2, s2) = source.params, target.params
        if s2 < s1:
            return f"drops {s1 - s2} decimal place(s)"
        if p2 - s2 < p1 - s1:
            return f"keeps {p2 - s2} integer digit(s) of {p1 - s1}: larger values overflow"
    if s in ("FLOAT", "DOUBLE") and (t == "DECIMAL" or t in INTEGER_DIGITS):
        return "rounds binary floating point to a fixed number of digits"
    if s == "DOUBLE" and t == "FLOAT":
        return "halves the precision"
    if s in INTEGER_DIGITS and t in INTEGER_DIGITS and INTEGER_DIGITS[t] < INTEGER_DIGITS[s]:
        return "overflows for larger values"
    if s in INTEGER_DIGITS and t == "DECIMAL" and target.params[0] - target.params[1] < INTEGER_DIGITS[s]:
        return "overflows for larger values"
    if s == "DECIMAL" and t in INTEGER_DIGITS:
        return "drops the decimal places" if source.params[1] else ("overflows for larger values" if source.params[0] > INTEGER_DIGITS[t] else None)
    if (s, t) in (("BIGINT", "DOUBLE"), ("BIGINT", "FLOAT"), ("INT", "FLOAT")):
        return "loses precision for large values"
    if s == t and s in ("VARCHAR", "CHAR", "VARBINARY", "BINARY") and target.params[0] < source.params[0]:
        return "may be cut short"
    if s == t and s in ("TIMESTAMP", "TIMESTAMP_LTZ", "TIME") and target.params[0] < source.params[0]:
        return "drops sub-second precision"
    if s in ("TIMESTAMP", "TIMESTAMP_LTZ") and t == "DATE":
        return "drops the time of day"
    return None


def _same_base(a: SqlType, b: SqlType) -> bool:
    if a.name != b.name:
        return False
    if a.name in ("VARCHAR", "VARBINARY", "CHAR", "BINARY"):
        return True
    return a.params == b.params


def _plain(sql_type: SqlType) -> str:
    return str(SqlType(sql_type.name, sql_type.params, True, sql_type.fields, sql_type.parts))
