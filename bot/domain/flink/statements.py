"""A Flink SQL file as statements, each with where it starts, so positions the planner gives inside one
statement become lines and columns of the file. Strings, quoted identifiers and comments are respected;
``EXECUTE STATEMENT SET BEGIN ... END;`` and ``BEGIN STATEMENT SET; ... END;`` give their INSERTs."""

from __future__ import annotations

import re
from dataclasses import dataclass

INSERT = re.compile(r"(?is)(INSERT\s+(INTO|OVERWRITE)|EXECUTE\s+INSERT)\b")
SET_BEGIN = re.compile(r"(?is)(EXECUTE\s+STATEMENT\s+SET\s+BEGIN|BEGIN\s+STATEMENT\s+SET)\b\s*")
SET_KEY = re.compile(r"(?is)SET\s+'([^']+)'\s*=")
END = re.compile(r"(?is)END\Z")
POSITION = re.compile(r"line (\d+), column (\d+)")


class StatementError(ValueError):
    """A file that is not a set of statements (an unterminated string or comment)."""


@dataclass(frozen=True)
class Statement:
    """One statement: its text, its kind (``insert``, ``set``, ``reset`` or ``other``), where it starts (1-based)."""

    sql: str
    kind: str
    line: int
    column: int
    key: str | None = None  # the key of a SET

    def at(self, line: int, column: int) -> tuple[int, int]:
        """A position inside the statement, as a position in the file."""
        return self.line + line - 1, column + (self.column - 1 if line == 1 else 0)

    def position(self, message: str) -> tuple[int | None, int | None]:
        """The file position of the first ``line L, column C`` in a planner message."""
        found = POSITION.search(message)
        if found is None:
            return None, None
        return self.at(int(found.group(1)), int(found.group(2)))


def split(text: str) -> list[Statement]:
    """The statements of a SQL file, in order."""
    statements: list[Statement] = []
    for sql, offset in _pieces(text):
        begin = SET_BEGIN.match(sql)
        if begin:
            offset += begin.end()
            sql = sql[begin.end():]
        if not sql or END.fullmatch(sql):
            continue
        line = text.count("\n", 0, offset) + 1
        column = offset - (text.rfind("\n", 0, offset) + 1) + 1
        kind, key = "other", None
        if INSERT.match(sql):
            kind = "insert"
        elif (found := SET_KEY.match(sql)) is not None:
            kind, key = "set", found.group(1)
        elif re.match(r"(?i)RESET\b", sql):
            kind = "reset"
        statements.append(Statement(sql, kind, line, column, key))
    return statements


def _pieces(text: str) -> list[tuple[str, int]]:
    """Top-level ``;``-separated pieces, each stripped of leading space and comments, with its offset."""
    pieces, start, i, n = [], 0, 0, len(text)
    while i < n:
        char = text[i]
        if char in "'`\"":
            close = text.find(char, i + 1)
            while close != -1 and char == "'" and text.startswith("''", close):
                close = text.find(char, close + 2)
            if close == -1:
                raise StatementError(f"line {text.count(chr(10), 0, i) + 1}: a {'string' if char == chr(39) else 'quoted name'} never ends")
            i = close + 1
        elif text.startswith("--", i):
            end = text.find("\n", i)
            i = n if end == -1 else end + 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end == -1:
                raise StatementError(f"line {text.count(chr(10), 0, i) + 1}: a comment never ends")
            i = end + 2
        elif char == ";":
            pieces.append(_lead(text, start, i))
            start = i = i + 1
        else:
            i += 1
    pieces.append(_lead(text, start, n))
    return [(sql, offset) for sql, offset in pieces if sql]


def _lead(text: str, start: int, end: int) -> tuple[str, int]:
    """The piece from its first token (past spaces and comments), trailing space dropped."""
    i = start
    while i < end:
        if text[i].isspace():
            i += 1
        elif text.startswith("--", i):
            newline = text.find("\n", i, end)
            i = end if newline == -1 else newline + 1
        elif text.startswith("/*", i):
            i = text.find("*/", i + 2, end) + 2 if text.find("*/", i + 2, end) != -1 else end
        else:
            break
    return text[i:end].rstrip(), i
