"""Imports run one way: the domain imports nothing of the bot; the store and the adapters to outside systems (Kafka,
the registry, Flink's planner) only the domain and each other; services call those; the edges (Slack, HTTP, pagers)
call services; the runtime wires the edges; the command line and the playground start the runtime."""

from __future__ import annotations

import ast
from pathlib import Path

BOT = Path(__file__).resolve().parents[1] / "bot"
LAYERS = [
    {"domain"},
    {"config", "logs", "workers", "store", "schema_registry", "flink", "kafka"},
    {"services"},
    {"slack", "web", "receivers", "emulator"},
    {"runtime"},
    {"cli", "playground", "__main__"},
]
LAYER = {package: number for number, packages in enumerate(LAYERS) for package in packages}


def imports() -> list[tuple[str, int, str, str]]:
    """(file, line, its package, the package it imports) for every import of ``bot.*`` in ``bot/``."""
    found = []
    for path in sorted(BOT.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        parts = path.relative_to(BOT).parts
        package = parts[0].removesuffix(".py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [node.module] if isinstance(node, ast.ImportFrom) and node.module else \
                [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            for name in names:
                if name.startswith("bot."):
                    found.append((str(path.relative_to(BOT.parent)), node.lineno, package, name.split(".")[1]))
    return found


def test_every_package_of_the_bot_has_a_layer() -> None:
    packages = {path.name.removesuffix(".py") for path in BOT.iterdir() if path.name != "__init__.py" and not path.name.startswith("__pycache__")
                and (path.suffix == ".py" or (path / "__init__.py").exists())}
    assert packages - set(LAYER) == set(), "give each new package of bot/ its layer here"


def upward(found: list[tuple[str, int, str, str]]) -> list[str]:
    """The imports that reach up a layer."""
    return [f"{file}:{line}: {package} imports bot.{target}" for file, line, package, target in found
            if target in LAYER and package in LAYER and LAYER[target] > LAYER[package]]


def test_no_import_runs_from_a_lower_layer_to_a_higher_one() -> None:
    found = imports()
    assert len({(package, target) for _, _, package, target in found}) > 20  # it reads the real imports
    assert upward(found) == []


def test_the_check_names_an_import_that_reaches_up() -> None:
    assert upward([("bot/kafka/metrics.py", 22, "kafka", "services"), ("bot/slack/app.py", 3, "slack", "services")]) == \
        ["bot/kafka/metrics.py:22: kafka imports bot.services"]
