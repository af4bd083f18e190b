"""``bot classify PREV_DIR CUR_DIR --type protobuf [--config buf.yaml]``: two folders of ``.proto`` files judged by Buf's
breaking rules, as ``buf breaking`` does (the configuration's ``breaking:`` section; none: the FILE category), and
``bot rules --buf``: Buf's rules with their categories per configuration version."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from bot.domain.buf.breaking import breaking
from bot.domain.buf.config import BufConfigError, Module, default_modules, read_config
from bot.domain.buf.rules import CATEGORIES, RULES, VERSIONS, BufFinding
from bot.domain.compat.rules import Level
from bot.domain.protobuf.compile import ProtoError

USAGE_ERROR = 2
FAILED_GATE = 1


def run_folders(args: argparse.Namespace, previous: Path, current: Path, fail_on: Level | None) -> int:
    """Compare the folders; print Buf's findings (text like ``buf breaking``'s, or JSON)."""
    if args.type and args.type.strip().lower() != "protobuf":
        print("bot classify: folders are compared by Buf's breaking rules: they hold .proto files (--type protobuf)", file=sys.stderr)
        return USAGE_ERROR
    try:
        config = Path(args.config) if args.config else current / "buf.yaml"
        modules = read_config(config.read_text(encoding="utf-8"), str(config)) if args.config or config.exists() else default_modules()
        own = previous / "buf.yaml"  # the previous tree is laid out by its own configuration (its roots), as Buf builds it
        layout = read_config(own.read_text(encoding="utf-8"), str(own), layout_only=True) if own.is_file() else None
        found = breaking(_tree(previous), _tree(current), modules, layout)
    except OSError as err:
        print(f"bot classify: cannot read {err.filename}: {err.strerror}", file=sys.stderr)
        return USAGE_ERROR
    except (BufConfigError, UnicodeDecodeError) as err:
        print(f"bot classify: {err}", file=sys.stderr)
        return USAGE_ERROR
    except ProtoError as err:
        print(f"bot classify: invalid PROTOBUF schema: {err}", file=sys.stderr)
        return FAILED_GATE if fail_on is not None else USAGE_ERROR
    uses = _uses(modules)
    if args.format == "json":
        print(json.dumps({"schema_type": "PROTOBUF", "tool": "buf", "rules": uses, "level": "breaking" if found else "safe",
                          "findings": [_json(f, current) for f in found]}, ensure_ascii=False))
    else:
        print(f"BREAKING by Buf's rules ({uses}; {len(found)} finding{'s' if len(found) != 1 else ''})" if found
              else f"no breaking change by Buf's rules ({uses})")
        for finding in found:
            where = f":{finding.line}:{finding.column}" if finding.line else ""
            print(f"{_shown(current, finding)}{where}:{finding.message} ({finding.rule})")
    level = Level.BREAKING if found else Level.SAFE
    return FAILED_GATE if fail_on is not None and level >= fail_on else 0


def run_rules(args: argparse.Namespace) -> int:
    """``bot rules --buf``: each rule, its categories per version, its purpose."""
    rows = rule_rows()
    if args.format == "json":
        print(json.dumps(rows, indent=2))
    elif args.format == "markdown":
        print(rules_markdown())
    else:
        for row in rows:
            print(f"{row['id']:<50} {' '.join(row['categories'].get('v2', [])) or '-':<28} {row['purpose']}")
        print(f"\ncategories: {', '.join(CATEGORIES)} (as in buf.yaml v2; `--format json` gives every version's)")
    return 0


def rule_rows() -> list[dict[str, Any]]:
    """Buf's rules by id: categories per configuration version, purpose."""
    return [{"id": r.id, "categories": {v: list(r.categories[v]) for v in VERSIONS if v in r.categories}, "purpose": r.purpose}
            for r in sorted(RULES.values(), key=lambda r: r.id)]


def rules_markdown() -> str:
    """The rules as a table (the docs' rules page is made from it)."""
    lines = ["| rule | " + " | ".join(VERSIONS) + " | purpose |", "|---|" + "---|" * len(VERSIONS) + "---|"]
    for row in rule_rows():
        cells = [", ".join(row["categories"][v]) or "(none)" if v in row["categories"] else "—" for v in VERSIONS]
        lines.append(f"| `{row['id']}` | " + " | ".join(cells) + f" | {row['purpose']} |")
    return "\n".join(lines)


def _tree(folder: Path) -> dict[str, str]:
    """Every ``.proto`` file under ``folder``, by its path relative to it."""
    if not folder.is_dir():
        raise OSError(2, "not a folder", str(folder))
    return {path.relative_to(folder).as_posix(): path.read_text(encoding="utf-8") for path in sorted(folder.rglob("*.proto")) if path.is_file()}


def _uses(modules: list[Module]) -> str:
    return "; ".join(dict.fromkeys(m.breaking.label for m in modules))


def _shown(current: Path, finding: BufFinding) -> str:
    return (current / finding.file).as_posix()


def _json(finding: BufFinding, current: Path) -> dict[str, object]:
    return {"rule": finding.rule, "file": _shown(current, finding), "line": finding.line, "column": finding.column, "level": "breaking",
            "message": finding.message}
