"""One fixture folder per rule (tests/rules/<rule id>/): old.avsc, new.avsc and the expected findings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.domain.avro.parse import parse
from bot.domain.compat.classify import Mode, classify
from bot.domain.compat.rules import CATALOGUE

FIXTURES = Path(__file__).parent / "rules"


AVRO_RULES = [r.id for r in CATALOGUE if "AVRO" in r.formats]


def test_every_rule_has_a_fixture_folder() -> None:
    assert sorted(p.name.upper() for p in FIXTURES.iterdir() if p.is_dir()) == sorted(AVRO_RULES)


@pytest.mark.parametrize("rule", AVRO_RULES)
def test_rule(rule: str) -> None:
    folder = FIXTURES / rule.lower()
    expected = json.loads((folder / "expected.json").read_text())
    old, new = parse((folder / "old.avsc").read_text()), parse((folder / "new.avsc").read_text())
    verdict = classify([old], new, Mode(expected["mode"]))
    assert [[f.rule, f.path, str(f.level)] for f in verdict.findings] == expected["findings"]
    assert str(verdict.level) == expected["level"]
    for finding in verdict.findings:
        assert finding.path in finding.message
