"""One proposal's whole CPU-heavy part in one call: parse the stored versions and the proposed schema,
classify, and give the canonical text and fingerprint to store. Pure and picklable, so it can run in a
worker process (the bot never parses or classifies on its event loop)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

from bot.domain.avro.model import Schema
from bot.domain.avro.normal import normal_form
from bot.domain.avro.parse import SchemaError, parse, parse_references
from bot.domain.compat.classify import Mode, Verdict, classify


@dataclass(frozen=True)
class Analysis:
    """The verdict on a proposed schema, or why it is not a valid schema (``error``)."""

    verdict: Verdict | None
    label: str = ""
    canonical: str = ""  # the text stored for a version: the normal form, compact
    fingerprint: str = ""
    error: str | None = None
    unused: tuple[int, ...] = ()  # the referenced schemas (by position) none of whose types the schema reaches


def fingerprint(schema: Schema) -> str:
    """SHA-256 of the normal form: equal only for schemas identical in every attribute."""
    return stored_form(schema)[1]


def stored_form(schema: Schema) -> tuple[str, str]:
    """The text stored for a version (the normal form, compact) and its fingerprint."""
    normal = normal_form(schema)
    digest = hashlib.sha256(json.dumps(normal, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    return json.dumps(normal, separators=(",", ":")), digest


def analyse(history: Sequence[str], proposed: str, mode: str, refs: Sequence[str] = ()) -> Analysis:
    """Classify ``proposed`` (using the referenced schemas ``refs``, dependencies first) against the stored versions
    (oldest first, each whole) in ``mode``. The newest version is parsed alongside the proposal, so the two share what
    they have in common. The stored form spells the referenced types out, so the fingerprint covers them."""
    try:
        referenced = parse_references(refs)
        new = parse(proposed, keep_parts=True, refs=referenced)
    except SchemaError as err:
        return Analysis(None, error=str(err))
    versions = [parse(text) for text in history[:-1]] + [parse(text, like=new) for text in history[-1:]]
    verdict = classify(versions, new, Mode.parse(mode))
    return Analysis(verdict, new.label, *stored_form(new), unused=unreached(new, referenced))


def unreached(schema: Schema, refs: Sequence[Schema]) -> tuple[int, ...]:
    """The positions of the referenced schemas none of whose own named types ``schema`` reaches."""
    if not refs:
        return ()
    reached: set[int] = set()
    stack = [schema.root]
    while stack:
        node = stack.pop()
        if id(node) in reached:
            continue
        reached.add(id(node))
        stack += [f.type for f in node.fields] + node.branches + [n for n in (node.items, node.values) if n is not None]
    unused: list[int] = []
    before: set[int] = set()
    for position, ref in enumerate(refs):
        own = {id(n) for n in ref.names.values()} - before
        if not own & reached:
            unused.append(position)
        before |= own
    return tuple(unused)


def fingerprints(texts: Sequence[str], refs: Sequence[str] = ()) -> list[str | None]:
    """The fingerprint of each schema text, with the referenced schemas ``refs`` (None for one that does not parse):
    to match a schema to proposals."""
    found: list[str | None] = []
    try:
        referenced = parse_references(refs)
    except SchemaError:
        return [None for _ in texts]
    for text in texts:
        try:
            found.append(fingerprint(parse(text, refs=referenced)))
        except SchemaError:
            found.append(None)
    return found


def fingerprints_each(schemas: Sequence[tuple[str, Sequence[str]]]) -> list[str | None]:
    """The fingerprint of each (schema text, its referenced schemas), in one call (None for one that does not parse)."""
    return [fingerprints([text], refs)[0] for text, refs in schemas]
