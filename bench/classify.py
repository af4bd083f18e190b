"""Classifier speed, measured against the Apache Avro Python library in the same run.

1. A pair of nested schemas with 3,400 fields, parse included: `bot classify --pairs` on one line holding
   both (JSON decoding, parsing, validation, both directions and every rule) against the Avro library
   parsing both schema texts and running its ReaderWriterCompatibilityChecker both ways.
2. Schema references: the same wide pair with a shared `Address` record used at 50 places, once taken from
   `old_refs`/`new_refs` (another subject's type, changed between the two) and once written inline at its first
   use; the referencing pair's time over the inline one's (aim: at most 1.5x).
3. Throughput of `bot classify --pairs` over 10,000 small pairs (pairs/s).

The wide pair is also set against the standard library's ``json.loads`` of both schema texts (the least any
classifier of JSON schemas does), printed as a ratio.

Run: .venv/bin/python bench/classify.py [--smoke]
"""

from __future__ import annotations

import copy
import io
import json
import random
import statistics
import sys
import time
from typing import Any

import avro.schema
from avro.compatibility import ReaderWriterCompatibilityChecker

from bot.cli.classify import classify_pairs
from bot.domain.avro.parse import parse
from bot.domain.compat.classify import Mode, classify

TYPES = ["int", "long", "string", "double", "boolean", ["null", "string"], {"type": "array", "items": "long"},
         {"type": "map", "values": "string"}, {"type": "long", "logicalType": "timestamp-millis"}]


def wide_schema(groups: int = 34, per_group: int = 99) -> dict[str, Any]:
    """A record of ``groups`` nested records with ``per_group`` fields each (3,400 fields in all)."""
    rng = random.Random(7)
    fields = []
    for g in range(groups):
        inner = [{"name": f"f{g}_{i}", "type": copy.deepcopy(rng.choice(TYPES))} for i in range(per_group)]
        fields.append({"name": f"group{g}", "type": {"type": "record", "name": f"Group{g}", "fields": inner}})
    return {"type": "record", "name": "Wide", "namespace": "bench", "fields": fields}


def evolve(schema: dict[str, Any]) -> dict[str, Any]:
    """A realistic new version: promotions, added fields with defaults, a removal, doc changes."""
    new = copy.deepcopy(schema)
    for g, group in enumerate(new["fields"]):
        inner = group["type"]["fields"]
        for field in inner[::7]:
            if field["type"] == "int":
                field["type"] = "long"
            field["doc"] = "documented"
        inner.append({"name": f"added{g}", "type": "string", "default": ""})
        inner.pop(3)
    return new


ADDRESS = {"type": "record", "name": "Address", "namespace": "bench",
           "fields": [{"name": f"line{i}", "type": ["null", "string"], "default": None} for i in range(18)]
           + [{"name": "zip", "type": "int"}, {"name": "country", "type": "string"}]}


def address_changed() -> dict[str, Any]:
    """The shared type's next version: a promotion and a field added with a default."""
    new = copy.deepcopy(ADDRESS)
    new["fields"][18]["type"] = "long"
    new["fields"].append({"name": "region", "type": "string", "default": ""})
    return new


def with_addresses(schema: dict[str, Any], uses: int, address: dict[str, Any] | None) -> dict[str, Any]:
    """``schema`` with ``uses`` fields of type Address spread over its groups: the first spells ``address`` out (inline),
    or every one names it (``address`` None: the type comes from a reference)."""
    out = copy.deepcopy(schema)
    groups = out["fields"]
    for k in range(uses):
        kind: Any = address if k == 0 and address is not None else "bench.Address"
        groups[k % len(groups)]["type"]["fields"].append({"name": f"address{k}", "type": kind})
    return out


def references(smoke: bool, old_json: dict[str, Any], new_json: dict[str, Any]) -> None:
    """The reference-heavy pair against the same pair with the type inline."""
    uses = 5 if smoke else 50
    inline = json.dumps({"id": "inline", "old": with_addresses(old_json, uses, ADDRESS), "new": with_addresses(new_json, uses, address_changed()),
                         "mode": "FULL"}) + "\n"
    referenced = json.dumps({"id": "refs", "old": with_addresses(old_json, uses, None), "new": with_addresses(new_json, uses, None),
                             "old_refs": [ADDRESS], "new_refs": [address_changed()], "mode": "FULL"}) + "\n"
    answers = []
    for line in (inline, referenced):
        sink = io.StringIO()
        classify_pairs(io.StringIO(line), sink, Mode.FULL, None)
        answers.append(json.loads(sink.getvalue()))
    paths = [sorted(c["path"].replace("<Address>", "") for c in a["changes"]) for a in answers]
    assert paths[0] == paths[1], "the two forms must find the same changes"
    repeat = 1 if smoke else 31
    flat = median_seconds(lambda: classify_pairs(io.StringIO(inline), io.StringIO(), Mode.FULL, None), repeat)
    refs = median_seconds(lambda: classify_pairs(io.StringIO(referenced), io.StringIO(), Mode.FULL, None), repeat)
    print(f"references: a shared type used at {uses} places, changed: from old_refs/new_refs {refs * 1000:.1f} ms, written inline "
          f"{flat * 1000:.1f} ms ({len(answers[1]['changes'])} findings each); ratio {refs / flat:.2f}x (aim <= 1.5x)")


def median_seconds(run: Any, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def main(smoke: bool = False) -> None:
    old_json = wide_schema(2, 10) if smoke else wide_schema()
    new_json = evolve(old_json)
    old_text, new_text = json.dumps(old_json), json.dumps(new_json)
    line = json.dumps({"id": 1, "old": old_json, "new": new_json, "mode": "FULL"}) + "\n"
    answer = io.StringIO()
    classify_pairs(io.StringIO(line), answer, Mode.FULL, None)
    findings = len(json.loads(answer.getvalue())["changes"])
    ours = median_seconds(lambda: classify_pairs(io.StringIO(line), io.StringIO(), Mode.FULL, None), 1 if smoke else 31)

    def reference() -> None:
        old_ref, new_ref = avro.schema.parse(old_text), avro.schema.parse(new_text)
        ReaderWriterCompatibilityChecker().get_compatibility(new_ref, old_ref)
        ReaderWriterCompatibilityChecker().get_compatibility(old_ref, new_ref)

    theirs = median_seconds(reference, 1 if smoke else 11)
    fields = sum(len(f["type"]["fields"]) + 1 for f in old_json["fields"])
    print(f"{fields:,}-field pair, parse included: bot classify --pairs {ours * 1000:.1f} ms (both directions, every rule, "
          f"{findings} findings); Avro library {theirs * 1000:.1f} ms (parse both, two resolution checks); ratio {theirs / ours:.1f}x faster")
    decoded = median_seconds(lambda: (json.loads(old_text), json.loads(new_text)), 1 if smoke else 31)
    print(f"  the standard library's json.loads of both schema texts (#41's baseline: nothing is classified without them) "
          f"{decoded * 1000:.1f} ms; bot classify --pairs at {ours / decoded:.1f}x it (aim <= 1.5x)")
    old, new = parse(old_json, keep_parts=True), parse(new_json)
    alone = median_seconds(lambda: classify([old], new, Mode.FULL), 1 if smoke else 11)
    print(f"  the same pair parsed apart (nothing shared between the two sides): classify alone {alone * 1000:.1f} ms")
    references(smoke, old_json, new_json)

    small_old = {"type": "record", "name": "Event", "fields": [
        {"name": "id", "type": "string"}, {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "amount", "type": "int"}, {"name": "tags", "type": {"type": "array", "items": "string"}}]}
    count = 50 if smoke else 10_000
    lines = []
    for i in range(count):
        new_small = copy.deepcopy(small_old)
        new_small["fields"][2]["type"] = ["int", "long", "double", "string"][i % 4]
        if i % 3 == 0:
            new_small["fields"].append({"name": "extra", "type": "string", "default": ""})
        lines.append(json.dumps({"id": i, "old": small_old, "new": new_small, "mode": "FULL"}))
    source, sink = io.StringIO("\n".join(lines) + "\n"), io.StringIO()
    started = time.perf_counter()
    classify_pairs(source, sink, Mode.FULL, None)
    elapsed = time.perf_counter() - started
    assert sink.getvalue().count("\n") == count
    print(f"--pairs: {count:,} small pairs in {elapsed:.2f} s = {count / elapsed:,.0f} pairs/s")


if __name__ == "__main__":
    main(smoke="--smoke" in sys.argv[1:])  # --smoke: tiny sizes, to check that it runs
