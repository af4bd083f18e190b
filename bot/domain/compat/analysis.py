"""One proposal's whole CPU-heavy part in one call: parse the stored versions and the proposed schema,
classify, and give the canonical text and fingerprint to store, for each of the registry's schema types. Pure and
picklable, so it can run in a worker process (the bot never parses or classifies on its event loop)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

from bot.domain.avro.model import Schema
from bot.domain.avro.normal import normal_form
from bot.domain.avro.parse import SchemaError, parse, parse_references
from bot.domain.compat.classify import Mode, Verdict, classify
from bot.domain.compat.formats import INVALID, SchemaType, canonical_bytes, classify_schemas, parse_schema


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


def analyse(history: Sequence[str], proposed: str, mode: str, refs: Sequence[str] = (), schema_type: str = "AVRO",
            names: Sequence[str] = (), *, lenient: bool = False) -> Analysis:
    """Classify ``proposed`` (using the referenced schemas ``refs``, dependencies first) against the stored versions
    (oldest first, each whole) in ``mode``. Avro: the newest version is parsed alongside the proposal, so the two share
    what they have in common, and the stored form spells the referenced types out, so the fingerprint covers them.
    Protobuf and JSON Schema: ``names`` are the references' import paths or URIs (one per ref), the stored text is the
    schema as written, and the fingerprint hashes its canonical form with its references; Protobuf's versions are parsed
    alongside the proposal (the messages defined alike are taken over)."""
    if schema_type != SchemaType.AVRO:
        return _analyse_other(SchemaType(schema_type), history, proposed, Mode.parse(mode), dict(zip(names, refs, strict=True)), lenient)
    try:
        referenced = parse_references(refs)
        new = parse(proposed, keep_parts=True, refs=referenced)
    except SchemaError as err:
        return Analysis(None, error=str(err))
    versions = [parse(text) for text in history[:-1]] + [parse(text, like=new) for text in history[-1:]]
    verdict = classify(versions, new, Mode.parse(mode))
    return Analysis(verdict, new.label, *stored_form(new), unused=unreached(new, referenced))


def _analyse_other(schema_type: SchemaType, history: Sequence[str], proposed: str, mode: Mode, refs: dict[str, str], lenient: bool) -> Analysis:
    try:
        new = parse_schema(schema_type, proposed, refs)
    except INVALID as err:
        return Analysis(None, error=str(err))
    versions = []
    for number, text in enumerate(history, start=1):
        try:
            versions.append(parse_schema(schema_type, text, refs, like=new))
        except INVALID as err:
            return Analysis(None, error=f"the subject's version {number} does not parse with the references named: {err}")
    verdict = classify_schemas(schema_type, versions, new, mode, lenient=lenient)
    return Analysis(verdict, new.label, proposed, hashlib.sha256(canonical_bytes(schema_type, new)).hexdigest())


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


def fingerprints(texts: Sequence[str], refs: Sequence[str] = (), schema_type: str = "AVRO", names: Sequence[str] = ()) -> list[str | None]:
    """The fingerprint of each schema text, with the referenced schemas ``refs`` (None for one that does not parse):
    to match a schema to proposals."""
    found: list[str | None] = []
    if schema_type != SchemaType.AVRO:
        kind, named = SchemaType(schema_type), dict(zip(names, refs, strict=True))
        for text in texts:
            try:
                found.append(hashlib.sha256(canonical_bytes(kind, parse_schema(kind, text, named))).hexdigest())
            except INVALID:
                found.append(None)
        return found
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


def fingerprints_each(schemas: Sequence[tuple[str, Sequence[str], str, Sequence[str]]]) -> list[str | None]:
    """The fingerprint of each (schema text, its referenced schemas, its type, the references' names), in one call
    (None for one that does not parse)."""
    return [fingerprints([text], refs, schema_type, names)[0] for text, refs, schema_type, names in schemas]
