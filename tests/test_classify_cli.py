"""`bot classify` and `bot rules` as a producer's CI pipeline runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bot.cli import main
from bot.domain.compat.rules import CATALOGUE

OLD = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}, {"name": "price", "type": "int"}]}
NEW = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}, {"name": "price", "type": "long"}]}


@pytest.fixture
def files(tmp_path: Path) -> tuple[str, str]:
    (tmp_path / "old.avsc").write_text(json.dumps(OLD))
    (tmp_path / "new.avsc").write_text(json.dumps(NEW))
    return str(tmp_path / "old.avsc"), str(tmp_path / "new.avsc")


def test_text_output_level_first_then_findings(files: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["classify", *files]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("BREAKING under FULL (backward ok, forward FAILS")
    assert "breaking (1):" in out and "  TYPE_PROMOTED  Order.price" in out


def test_json_output_and_mode(files: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["classify", *files, "--mode", "backward", "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result == {"level": "compatible", "backward": True, "forward": False, "changes": [
        {"path": "Order.price", "rule": "TYPE_PROMOTED", "level": "compatible", "message": result["changes"][0]["message"]}]}


def test_fail_on_gates_a_pipeline(files: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["classify", *files, "--fail-on", "breaking"]) == 1
    assert main(["classify", *files, "--mode", "BACKWARD", "--fail-on", "breaking"]) == 0
    assert main(["classify", *files, "--mode", "BACKWARD", "--fail-on", "compatible"]) == 1
    assert main(["classify", files[0], files[0], "--fail-on", "safe"]) == 1
    capsys.readouterr()


def test_no_change(files: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["classify", files[0], files[0]]) == 0
    assert "no change" in capsys.readouterr().out


def test_history(files: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    newest = tmp_path / "v3.avsc"
    newest.write_text(json.dumps({**NEW, "fields": NEW["fields"] + [{"name": "c", "type": "int"}]}))
    assert main(["classify", "--history", *files, str(newest), "--mode", "BACKWARD_TRANSITIVE", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["level"] == "breaking"
    newest.write_text(json.dumps({**NEW, "fields": NEW["fields"] + [{"name": "c", "type": "int", "default": 0}]}))
    assert main(["classify", "--history", *files, str(newest), "--mode", "BACKWARD_TRANSITIVE", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["level"] == "compatible"


def test_usage_errors_exit_2(files: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["classify", files[0]]) == 2
    assert main(["classify", *files, "--mode", "SIDEWAYS"]) == 2
    assert main(["classify", *files, "--fail-on", "awful"]) == 2
    assert main(["classify", files[0], str(tmp_path / "missing.avsc")]) == 2
    err = capsys.readouterr().err
    assert "unknown mode 'SIDEWAYS'" in err and "cannot read" in err and "unknown level" in err


def test_invalid_schema_file(files: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.avsc"
    bad.write_text('{"type": "record", "name": "Order", "fields": [{"name": "a", "type": "Nope"}]}')
    assert main(["classify", files[0], str(bad)]) == 2
    assert main(["classify", files[0], str(bad), "--fail-on", "breaking"]) == 1
    assert 'invalid schema: Order.a: unknown type "Nope"' in capsys.readouterr().err


def test_pairs_one_bad_line_does_not_stop_the_others(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = [
        json.dumps({"id": "a", "old": OLD, "new": NEW, "mode": "BACKWARD"}),
        "{not json",
        json.dumps({"id": "b", "old": json.dumps(OLD), "new": {"type": "record", "name": "Order", "fields": [{"name": "x", "type": "Nope"}]}}),
        "",
        json.dumps({"id": "c", "old": "int", "new": "string"}),
        json.dumps({"id": "d", "old": OLD}),
        json.dumps({"id": "e", "old": OLD, "new": OLD, "mode": "sideways"}),
        json.dumps([1, 2]),
    ]
    source = tmp_path / "pairs.jsonl"
    source.write_text("\n".join(lines) + "\n")
    assert main(["classify", "--pairs", str(source)]) == 0
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [o.get("id") for o in out] == ["a", None, "b", "c", "d", "e", None]
    assert out[0]["level"] == "compatible" and out[0]["changes"][0]["rule"] == "TYPE_PROMOTED"
    assert set(out[0]) == {"id", "level", "backward", "forward", "changes"}
    assert "line 2: malformed JSON" in out[1]["error"]
    assert out[2]["error"].startswith('new: Order.x: unknown type "Nope"')
    assert out[3]["level"] == "breaking" and out[3]["changes"][0]["rule"] == "TYPE_CHANGED"
    assert "missing new" in out[4]["error"] and "unknown mode" in out[5]["error"]
    assert main(["classify", "--pairs", str(source), "--fail-on", "breaking"]) == 1
    capsys.readouterr()


def test_pairs_take_a_bare_primitive_name_as_that_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = [json.dumps({"id": "n", "old": "null", "new": "null"}), json.dumps({"id": "s", "old": "null", "new": ["null", "string"]}),
             json.dumps({"id": "t", "old": '"string"', "new": "bytes"})]
    source = tmp_path / "pairs.jsonl"
    source.write_text("\n".join(lines) + "\n")
    assert main(["classify", "--pairs", str(source)]) == 0
    out = {o["id"]: o for o in map(json.loads, capsys.readouterr().out.splitlines())}
    assert "error" not in out["n"] and out["n"]["level"] == "safe"  # the Avro spec's own "null" schema, twice
    assert "error" not in out["s"] and out["s"]["backward"] is True
    assert "error" not in out["t"] and out["t"]["changes"]


def test_rules_lists_the_catalogue(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "--format", "json"]) == 0
    assert [r["id"] for r in json.loads(capsys.readouterr().out)] == [r.id for r in CATALOGUE]


def test_as_a_process_with_stdin(files: tuple[str, str]) -> None:
    result = subprocess.run([sys.executable, "-m", "bot", "classify", files[0], "-", "--format", "json"],
                            input=json.dumps(NEW), capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and json.loads(result.stdout)["level"] == "breaking"


def test_classify_on_files_and_version_load_neither_slack_nor_the_database_nor_kafka(tmp_path: Path) -> None:
    old, new = tmp_path / "old.avsc", tmp_path / "new.avsc"
    old.write_text('{"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]}')
    new.write_text('{"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}]}')
    heavy = ["slack_bolt", "slack_sdk", "sqlalchemy", "sqlmodel", "alembic", "confluent_kafka", "networkx", "aiohttp", "yaml", "matplotlib"]
    for args in (["classify", str(old), str(new)], ["--version"]):
        probe = ("import sys, contextlib, io\nfrom bot.cli import main\nwith contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
                 f"    main({args!r})\nprint(sorted({{m.split('.')[0] for m in sys.modules}} & set({heavy!r})))")
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "[]", (args, done.stdout)
