"""Protobuf and JSON Schema classification, parse included, against what their own tools take for the same input,
measured in the same run:

- a 500-message ``.proto`` pair (each message 8 fields, a nested enum, every tenth message changed) classified by the
  registry's rules, against protoc alone compiling both sides (``grpc_tools.protoc`` with the flags the classifier
  gives it: imports, no source positions; aim <= 2x); the new side is parsed alongside the old, as ``bot classify``
  and the proposal's analysis parse it (messages defined alike are taken over, not read again); Buf's FILE rules on
  the same pair (which need positions) are printed beside it;
- a 2,000-property JSON Schema pair (objects of 20 properties, every tenth property changed) classified, against
  ``jsonschema``'s own meta-validation of both documents (``check_schema``; aim <= 3x);
- ``bot classify old.proto new.proto`` from process start to exit (aim <= 0.5 s).

Run: .venv/bin/python bench/formats.py [--rounds 5] [--smoke]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.domain.buf.breaking import breaking  # noqa: E402
from bot.domain.compat.classify import Mode  # noqa: E402
from bot.domain.compat.formats import SchemaType, classify_schemas, parse_schema  # noqa: E402


def proto_pair(messages: int) -> tuple[str, str]:
    def text(changed: bool) -> str:
        parts = ['syntax = "proto3";', "package bench.v1;"]
        for m in range(messages):
            shifted = changed and m % 10 == 0
            parts.append(f"message M{m} {{\n  enum Kind {{ KIND_UNSPECIFIED = 0; A = 1; B = 2; }}\n  string id = 1;\n"
                         f"  {'int64' if shifted else 'int32'} count = 2;\n  double price = 3;\n  repeated string tags = 4;\n"
                         f"  Kind kind = 5;\n  map<string, int32> extra = 6;\n  {'M0' if m else 'string'} link = 7;\n"
                         f"  {'' if shifted else 'bool flag = 8;'}\n}}")
        return "\n".join(parts) + "\n"
    return text(False), text(True)


def json_pair(properties: int) -> tuple[str, str]:
    def text(changed: bool) -> str:
        groups = {}
        for g in range(properties // 20):
            props: dict[str, Any] = {}
            for p in range(20):
                shifted = changed and p % 10 == 0
                props[f"p{p}"] = {"type": "integer" if shifted else "number", "minimum": 0} if p % 2 else {"type": "string", "maxLength": 64 + shifted}
            groups[f"g{g}"] = {"type": "object", "properties": props, "required": ["p1"], "additionalProperties": False}
        return json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": groups,
                           "additionalProperties": False})
    return text(False), text(True)


def best(work: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        began = time.perf_counter()
        work()
        times.append(time.perf_counter() - began)
    return min(times)


def protoc_alone(folder: Path) -> None:
    from grpc_tools import protoc

    include = str(Path(protoc.__file__).with_name("_proto"))
    for side in ("old", "new"):
        code = protoc.main(["protoc", f"-I{folder / side}", f"-I{include}", "--include_imports",
                            f"--descriptor_set_out={folder / side}.pb", str(folder / side / "schema.proto")])
        assert code == 0


def main(rounds: int, smoke: bool) -> None:
    messages, properties = (20, 100) if smoke else (500, 2000)
    old, new = proto_pair(messages)
    folder = Path(tempfile.mkdtemp(prefix="bench-formats-"))
    for side, text in (("old", old), ("new", new)):
        (folder / side).mkdir()
        (folder / side / "schema.proto").write_text(text)
    baseline = best(lambda: protoc_alone(folder), rounds)

    def classify_proto() -> None:
        first = parse_schema(SchemaType.PROTOBUF, old)
        verdict = classify_schemas(SchemaType.PROTOBUF, [first], parse_schema(SchemaType.PROTOBUF, new, like=first), Mode.FULL)
        assert verdict.findings

    ours = best(classify_proto, rounds)
    buf = best(lambda: breaking({"schema.proto": old}, {"schema.proto": new}), rounds)
    print(f"protobuf, {messages} messages: protoc alone (baseline) {baseline * 1000:.1f} ms; classified {ours * 1000:.1f} ms "
          f"= ratio {ours / baseline:.2f}x (aim <= 2x; the new side parsed alongside the old); Buf's FILE rules {buf * 1000:.1f} ms = ratio {buf / baseline:.2f}x")

    old_json, new_json = json_pair(properties)
    from jsonschema.validators import validator_for

    def meta() -> None:
        for text in (old_json, new_json):
            document = json.loads(text)
            validator_for(document).check_schema(document)

    def classify_json() -> None:
        verdict = classify_schemas(SchemaType.JSON, [parse_schema(SchemaType.JSON, old_json)], parse_schema(SchemaType.JSON, new_json), Mode.FULL)
        assert verdict.findings

    baseline, ours = best(meta, rounds), best(classify_json, rounds)
    print(f"json schema, {properties} properties: meta-validation alone (baseline) {baseline * 1000:.1f} ms; classified {ours * 1000:.1f} ms "
          f"= ratio {ours / baseline:.2f}x (aim <= 3x)")

    starts = []
    for _ in range(2 if smoke else 7):
        began = time.perf_counter()
        subprocess.run([sys.executable, "-m", "bot", "classify", str(folder / "old" / "schema.proto"), str(folder / "new" / "schema.proto")],
                       check=False, capture_output=True)
        starts.append(time.perf_counter() - began)
    print(f"bot classify old.proto new.proto: {statistics.median(starts) * 1000:.0f} ms from start to exit, median (aim <= 500 ms)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, to see that it runs")
    args = parser.parse_args()
    main(1 if args.smoke else args.rounds, args.smoke)
