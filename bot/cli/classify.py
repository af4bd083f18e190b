"""``bot classify`` and ``bot rules``: the classifier from the command line (and from CI pipelines)."""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import orjson

from bot.cli.store import NotMigrated, with_database
from bot.domain.avro.parse import SchemaError, decode_json, parse, parse_references, parse_value
from bot.domain.compat.classify import Mode, Verdict, classify
from bot.domain.compat.formats import INVALID, SchemaType, classify_schemas, parse_schema
from bot.domain.compat.report import as_json, as_text, rules_json, rules_markdown, rules_text
from bot.domain.compat.rules import Level
from bot.domain.lineage.model import SUBJECT_MAX
from bot.domain.protobuf.compile import ROOT

if TYPE_CHECKING:
    from bot.domain.avro.model import Schema
    from bot.services.registry import Version
    from bot.store.database import Database
    from bot.store.models import Subject

USAGE_ERROR = 2
FAILED_GATE = 1


class UsageError(Exception):
    """Bad arguments or unreadable input; exit code 2."""


def add_parsers(sub: Any) -> None:
    """Register ``classify`` and ``rules`` on the main parser."""
    classify_parser = sub.add_parser(
        "classify", help="classify a schema change: safe, compatible or breaking",
        description="Classify NEW against OLD (or against every version with --history), or every line of --pairs.")
    classify_parser.add_argument("schemas", nargs="*", metavar="SCHEMA", help="OLD NEW, or with --history: V1 V2 ... NEW (files, - for stdin)")
    classify_parser.add_argument("--history", action="store_true", help="the SCHEMA files are the subject's versions, oldest first, then NEW")
    classify_parser.add_argument("--pairs", metavar="FILE.jsonl", help='JSON lines {"id","old","new","mode"} in, one verdict per line out (- for stdin)')
    classify_parser.add_argument("--subject", help="classify NEW against the stored versions of this subject, in its mode")
    classify_parser.add_argument("--mode", help="BACKWARD, BACKWARD_TRANSITIVE, FORWARD, FORWARD_TRANSITIVE, FULL (default), FULL_TRANSITIVE, NONE")
    classify_parser.add_argument("--format", choices=("text", "json"), default=None, help="text (default) or json; --pairs always writes JSON lines")
    classify_parser.add_argument("--ref", action="append", default=[], metavar="FILE",
                                 help="a referenced schema (another subject's named type) both sides use; repeatable, dependencies first. "
                                      "Protobuf and JSON Schema: IMPORT=FILE (the import path or $ref URI the schema names it by)")
    classify_parser.add_argument("--old-ref", action="append", default=[], metavar="FILE", help="a referenced schema only OLD uses (repeatable)")
    classify_parser.add_argument("--new-ref", action="append", default=[], metavar="FILE", help="a referenced schema only NEW uses (repeatable)")
    classify_parser.add_argument("--fail-on", metavar="LEVEL", help="exit 1 when the change is at least LEVEL (safe, compatible, breaking), or a schema is invalid")
    classify_parser.add_argument("--type", metavar="TYPE", help="avro, protobuf or json (JSON Schema); default: by extension (.avsc, .proto, .json)")
    classify_parser.add_argument("--lenient", action="store_true", help="JSON Schema: the registry's lenient rules (properties may be added to open objects)")
    classify_parser.add_argument("--config", metavar="BUF_YAML", help="PREV_DIR CUR_DIR (folders of .proto files): Buf's configuration, "
                                                                      "its breaking: section (default: CUR_DIR/buf.yaml, else the FILE rules)")
    classify_parser.set_defaults(run=run_classify)

    subject_parser = sub.add_parser("subject", help="a subject's stored versions").add_subparsers(metavar="ACTION")
    versions = subject_parser.add_parser("versions", help="list the stored versions of a subject")
    versions.add_argument("subject")
    versions.set_defaults(run=run_versions)
    imported = subject_parser.add_parser("import", help="store existing versions of a subject, oldest first (onboarding)")
    imported.add_argument("subject")
    imported.add_argument("files", nargs="+", metavar="FILE")
    imported.set_defaults(run=run_import_versions)

    rules_parser = sub.add_parser("rules", help="list the classification rules")
    rules_parser.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    rules_parser.add_argument("--buf", action="store_true", help="Buf's breaking rules for Protobuf, with their categories")
    rules_parser.set_defaults(run=run_rules)


def run_rules(args: argparse.Namespace) -> int:
    """Print the rules catalogue."""
    if args.buf:
        from bot.cli.buf import run_rules as buf_rules

        return buf_rules(args)
    print(json.dumps(rules_json(), indent=2) if args.format == "json" else rules_markdown() if args.format == "markdown" else rules_text())
    return 0


def run_classify(args: argparse.Namespace) -> int:
    """Classify, print, and pick the exit code."""
    try:
        mode = Mode.parse(args.mode) if args.mode else None
        fail_on = Level.parse(args.fail_on) if args.fail_on else None
        if args.subject:
            return _classify_subject(args, mode, fail_on)
        mode = mode or Mode.FULL
        if args.pairs:
            if args.schemas or args.history:
                raise UsageError("--pairs takes no SCHEMA arguments")
            if args.ref or args.old_ref or args.new_ref:
                raise UsageError('--pairs lines carry their references ("old_refs", "new_refs"); --ref does not apply')
            if args.format == "text":
                raise UsageError("--pairs writes JSON lines; --format text does not apply")
            with _open(args.pairs) as lines:
                return classify_pairs(lines, sys.stdout, mode, fail_on)
        if len(args.schemas) == 2 and not args.history and all(Path(p).is_dir() for p in args.schemas):
            from bot.cli.buf import run_folders  # protoc and Buf's rules: only for folders

            return run_folders(args, Path(args.schemas[0]), Path(args.schemas[1]), fail_on)
        if args.config:
            raise UsageError("--config (a buf.yaml) is for two folders of .proto files: PREV_DIR CUR_DIR")
        return _classify_files(args, mode, fail_on)
    except (UsageError, ValueError, NotMigrated) as err:
        print(f"bot classify: {err}", file=sys.stderr)
        return USAGE_ERROR


def _classify_subject(args: argparse.Namespace, mode: Mode | None, fail_on: Level | None) -> int:
    if len(args.schemas) != 1 or args.history or args.pairs:
        raise UsageError("--subject takes exactly one NEW schema")
    try:
        _, new_refs = _references(args)
        new = parse(_read(args.schemas[0]), refs=new_refs)
    except _InvalidReference as err:
        print(f"bot classify: {err}", file=sys.stderr)
        return FAILED_GATE if fail_on is not None else USAGE_ERROR
    except SchemaError as err:
        print(f"bot classify: {args.schemas[0]}: invalid schema: {err}", file=sys.stderr)
        return FAILED_GATE if fail_on is not None else USAGE_ERROR

    from bot.services.registry import Registry  # the database: only for --subject

    async def stored(db: Database) -> tuple[Subject | None, list[Version]]:
        registry = Registry(db)
        return await registry.subject(args.subject), await registry.history(args.subject)

    subject, history = with_database(stored)
    if subject is None:
        raise UsageError(f"unknown subject {args.subject!r}: load the catalog or import its versions first")
    verdict = classify([v.schema for v in history], new, mode or Mode.parse(subject.compatibility))
    _print(verdict, args.format)
    return _gate(verdict, fail_on)


def run_versions(args: argparse.Namespace) -> int:
    """``bot subject versions SUBJECT``."""
    from bot.services.registry import Registry

    try:
        history = with_database(lambda db: Registry(db).history(args.subject))
    except NotMigrated as err:
        print(f"bot subject: {err}", file=sys.stderr)
        return USAGE_ERROR
    if not history:
        print(f"bot subject: {args.subject!r} has no stored versions", file=sys.stderr)
        return FAILED_GATE
    for version in history:
        print(f"version {version.number}  {version.fingerprint[:12]}  {len(version.schema_text)} bytes")
    return 0


def run_import_versions(args: argparse.Namespace) -> int:
    """``bot subject import SUBJECT FILE...``: store versions in order; nothing is stored if one is invalid."""
    if len(args.subject) > SUBJECT_MAX:
        print(f"bot subject: a subject's name holds at most {SUBJECT_MAX} characters ({len(args.subject)} given); nothing was stored",
              file=sys.stderr)
        return USAGE_ERROR
    try:
        schemas = [parse(_read(path)) for path in args.files]
    except (UsageError, SchemaError) as err:
        print(f"bot subject: {err}; nothing was stored", file=sys.stderr)
        return FAILED_GATE

    from bot.services.registry import Registry

    async def store(db: Database) -> list[int]:
        registry = Registry(db)
        return [await registry.record(args.subject, schema) for schema in schemas]

    try:
        numbers = with_database(store)
    except NotMigrated as err:
        print(f"bot subject: {err}", file=sys.stderr)
        return USAGE_ERROR
    print(f"{args.subject}: now at version {numbers[-1]} ({', '.join(map(str, numbers))})")
    return 0


def _classify_files(args: argparse.Namespace, mode: Mode, fail_on: Level | None) -> int:
    paths: list[str] = args.schemas
    if args.history:
        if len(paths) < 1:
            raise UsageError("--history needs the versions and then NEW")
    elif len(paths) != 2:
        raise UsageError("give OLD and NEW (or --history V1 ... NEW, or --pairs FILE)")
    texts = [_read(path) for path in paths]
    types = [SchemaType.parse(args.type) if args.type else SchemaType.of_file(path, text) for path, text in zip(paths, texts, strict=True)]
    if len(set(types)) > 1:
        shown = ", ".join(f"{path} is {kind.value}" for path, kind in zip(paths, types, strict=True))
        raise UsageError(f"the schemas are of different types ({shown}): compare a schema with one of its own type, or say --type")
    if types[0] is not SchemaType.AVRO:
        return _classify_other(args, types[0], paths, texts, mode, fail_on)
    if args.lenient:
        raise UsageError("--lenient is for JSON Schema")
    try:
        old_refs, new_refs = _references(args)
    except _InvalidReference as err:
        print(f"bot classify: {err}", file=sys.stderr)
        return FAILED_GATE if fail_on is not None else USAGE_ERROR
    schemas: list[Schema] = []
    for number, (path, text) in enumerate(zip(paths, texts, strict=True), start=1):  # each version parsed alongside the one before
        try:
            schemas.append(parse(text, like=schemas[-1] if schemas else None, keep_parts=True,
                                 refs=new_refs if number == len(paths) else old_refs))
        except SchemaError as err:
            print(f"bot classify: {path}: invalid schema: {err}", file=sys.stderr)
            return FAILED_GATE if fail_on is not None else USAGE_ERROR
    verdict = classify(schemas[:-1], schemas[-1], mode)
    _print(verdict, args.format)
    return _gate(verdict, fail_on)


def _classify_other(args: argparse.Namespace, schema_type: SchemaType, paths: list[str], texts: list[str], mode: Mode, fail_on: Level | None) -> int:
    """Protobuf or JSON Schema files: their references are IMPORT=FILE (the name the schema imports or $refs them by)."""
    if args.lenient and schema_type is not SchemaType.JSON:
        raise UsageError("--lenient is for JSON Schema")

    def named(given: list[str]) -> dict[str, str]:
        found = {}
        for item in given:
            name, sep, path = item.partition("=")
            if not sep or not name or not path:
                raise UsageError(f"--ref {item!r}: a {schema_type.value} reference is IMPORT=FILE (for example common/address.proto=protos/address.proto)")
            found[name] = _read(path)
        return found

    shared = named(args.ref)
    old_refs, new_refs = {**shared, **named(args.old_ref)}, {**shared, **named(args.new_ref)}
    parsed: list[Any] = []
    for number, (path, text) in enumerate(zip(paths, texts, strict=True), start=1):
        try:
            parsed.append(parse_schema(schema_type, text, new_refs if number == len(paths) else old_refs, like=parsed[-1] if parsed else None))
        except INVALID as err:
            said = str(err).replace(f"{ROOT}:", f"{path}:")  # protoc names the schema by the name it was compiled under
            print(f"bot classify: {path}: invalid {schema_type.value} schema: {said}", file=sys.stderr)
            return FAILED_GATE if fail_on is not None else USAGE_ERROR
    verdict = classify_schemas(schema_type, parsed[:-1], parsed[-1], mode, lenient=args.lenient)
    _print(verdict, args.format)
    return _gate(verdict, fail_on)


class _InvalidReference(UsageError):
    """A --ref, --old-ref or --new-ref file that is not a schema (its message names the file)."""


def _references(args: argparse.Namespace) -> tuple[list[Schema], list[Schema]]:
    """The referenced schemas of OLD and of NEW: --ref files (shared by both sides, parsed once) then each side's own."""

    def load(paths: list[str], before: list[Schema]) -> list[Schema]:
        found = list(before)
        for path in paths:
            try:
                found += parse_references([_read(path)], before=found)
            except SchemaError as err:
                raise _InvalidReference(f"{path}: invalid referenced schema: {str(err).removeprefix('reference 1').lstrip(': ')}") from None
        return found

    shared = load(args.ref, [])
    return load(args.old_ref, shared), load(args.new_ref, shared)


def _print(verdict: Verdict, form: str | None) -> None:
    print(json.dumps(as_json(verdict), ensure_ascii=False) if form == "json" else as_text(verdict))


def classify_pairs(lines: TextIO, out: TextIO, default_mode: Mode, fail_on: Level | None) -> int:
    """One verdict per input line; a bad line answers ``{"id","error"}`` and the rest go on."""
    status = 0
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        with _collector_paused():
            result = _pair(number, line, default_mode)
        out.write(_line(result))
        if fail_on is not None and ("error" in result or Level.parse(result["level"]) >= fail_on):
            status = FAILED_GATE
    out.flush()
    return status


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while one pair is classified. A large pair allocates tens of thousands
    of small objects that all live until its answer is written, so the collector's passes over them find
    nothing and cost a fifth of the time; what the pair leaves is freed by reference counting, and
    the few cycles of recursive types by the collector's next pass."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _line(result: dict[str, Any]) -> str:
    """One compact JSON line; orjson writes it ten times faster, json what orjson refuses (huge integers,
    lone surrogates echoed back in an id)."""
    try:
        return orjson.dumps(result).decode() + "\n"
    except TypeError:
        return json.dumps(result, ensure_ascii=False, separators=(",", ":")) + "\n"


def _pair(number: int, line: str, default_mode: Mode) -> dict[str, Any]:
    try:
        item = decode_json(line)
    except json.JSONDecodeError as err:
        return {"id": None, "error": f"line {number}: malformed JSON: {err.msg} (column {err.colno})"}
    except RecursionError:
        return {"id": None, "error": f"line {number}: nesting too deep"}
    if not isinstance(item, dict):
        return {"id": None, "error": f"line {number}: expected an object with id, old, new and mode"}
    ident = item.get("id")
    missing = [key for key in ("old", "new") if key not in item]
    if missing:
        return {"id": ident, "error": f"line {number}: missing {' and '.join(missing)}"}
    try:
        mode = Mode.parse(item["mode"]) if item.get("mode") is not None else default_mode
    except (ValueError, AttributeError):
        return {"id": ident, "error": f"line {number}: unknown mode {item.get('mode')!r}"}
    try:
        schema_type = SchemaType.parse(item["schema_type"]) if item.get("schema_type") is not None else SchemaType.AVRO
    except (ValueError, AttributeError):
        return {"id": ident, "error": f"line {number}: unknown schema_type {item.get('schema_type')!r}: use AVRO, PROTOBUF or JSON"}
    if schema_type is not SchemaType.AVRO:
        return {"id": ident, **_other_pair(number, item, schema_type, mode)}
    sides: dict[str, list[Schema]] = {}
    for side in ("old_refs", "new_refs"):
        given = item.get(side, [])
        if not isinstance(given, list):
            return {"id": ident, "error": f"line {number}: {side} must be an array of schemas"}
        try:  # the same references on both sides are parsed once, and shared (nothing in them changed)
            sides[side] = sides["old_refs"] if side == "new_refs" and given == item.get("old_refs", []) else parse_references(given)
        except SchemaError as err:
            return {"id": ident, "error": f"{side}: {err}"}
    try:
        old = parse_value(item["old"], keep_parts=True, refs=sides["old_refs"])
    except SchemaError as err:
        return {"id": ident, "error": f"old: {err}"}
    try:
        new = parse_value(item["new"], like=old, refs=sides["new_refs"])
    except SchemaError as err:
        return {"id": ident, "error": f"new: {err}"}
    return {"id": ident, **as_json(classify([old], new, mode))}


def _other_pair(number: int, item: dict[str, Any], schema_type: SchemaType, mode: Mode) -> dict[str, Any]:
    """A Protobuf or JSON Schema line: ``refs`` (both sides), ``old_refs``, ``new_refs`` as ``[{"name", "schema"}]``; a ref
    without ``schema`` is one the registry provides itself (``google/protobuf/*.proto``, ``confluent/...``)."""
    sides: dict[str, dict[str, str]] = {}
    for side in ("refs", "old_refs", "new_refs"):
        given = item.get(side, [])
        if not isinstance(given, list) or not all(isinstance(r, dict) and isinstance(r.get("name"), str) for r in given):
            return {"error": f"line {number}: {side} must be an array of {{\"name\", \"schema\"}}"}
        sides[side] = {r["name"]: r["schema"] for r in given if isinstance(r.get("schema"), str)}
    texts = {}
    for side in ("old", "new"):
        value = item[side]
        texts[side] = value if isinstance(value, str) else json.dumps(value)
    parsed: dict[str, Any] = {}
    for side in ("old", "new"):
        try:
            parsed[side] = parse_schema(schema_type, texts[side], {**sides["refs"], **sides[f"{side}_refs"]}, like=parsed.get("old"))
        except INVALID as err:
            return {"error": f"{side}: invalid {schema_type.value} schema: {err}"}
    return as_json(classify_schemas(schema_type, [parsed["old"]], parsed["new"], mode, lenient=bool(item.get("lenient"))))


def _gate(verdict: Verdict, fail_on: Level | None) -> int:
    return FAILED_GATE if fail_on is not None and verdict.level >= fail_on else 0


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise UsageError(f"cannot read {path}: {err.strerror}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path} is not UTF-8 text") from None


def _open(path: str) -> contextlib.AbstractContextManager[TextIO]:
    if path == "-":
        return contextlib.nullcontext(sys.stdin)
    try:
        return open(path, encoding="utf-8")
    except OSError as err:
        raise UsageError(f"cannot read {path}: {err.strerror}") from None
