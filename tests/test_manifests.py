"""The deployment files agree with the code."""

from __future__ import annotations

from pathlib import Path

import yaml

from bot.slack.ids import SLASH_COMMANDS
from tests.conftest import SlackHarness

ROOT = Path(__file__).resolve().parents[1]


def manifest() -> dict[str, object]:
    return yaml.safe_load((ROOT / "manifests" / "slack-app.yaml").read_text())


def test_manifest_declares_exactly_the_registered_slash_commands() -> None:
    declared = {c["command"] for c in manifest()["features"]["slash_commands"]}  # type: ignore[index]
    assert declared == set(SLASH_COMMANDS)


async def test_every_declared_command_is_answered(slack: SlackHarness) -> None:
    for entry in manifest()["features"]["slash_commands"]:  # type: ignore[index]
        delivery = await slack.driver.command(f"{entry['command']} help", user="U0000ALICE", channel="changes")
        assert delivery.status == 200, entry["command"]


def test_request_urls_point_at_the_events_path() -> None:
    settings = manifest()["settings"]
    assert settings["event_subscriptions"]["request_url"].endswith("/slack/events")  # type: ignore[index]
    assert settings["interactivity"]["request_url"].endswith("/slack/events")  # type: ignore[index]
    assert "app_home_opened" in settings["event_subscriptions"]["bot_events"]  # type: ignore[index]


def test_procfile_and_kubernetes_probes() -> None:
    procfile = dict(line.split(": ", 1) for line in (ROOT / "Procfile").read_text().splitlines() if line)
    assert procfile == {"web": "bot serve", "release": "bot migrate"}
    deployment = yaml.safe_load((ROOT / "manifests" / "k8s" / "deployment.yaml").read_text())
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    refs = {next(iter(r.values()))["name"] for r in container["envFrom"]}
    assert refs == {"changeops"}


def test_the_rules_page_is_generated_from_the_catalogue() -> None:
    import sys

    from bot.domain.compat.rules import CATALOGUE

    sys.path.insert(0, str(ROOT / "scripts"))
    from docs_hooks import on_page_markdown

    page = (ROOT / "docs" / "reference" / "rules.md").read_text()
    assert "| `FIELD_ADDED_WITH_DEFAULT` |" not in page  # never copied by hand
    built = on_page_markdown(page)
    assert all(f"| `{rule.id}` | {rule.level} |" in built for rule in CATALOGUE)
    from bot.domain.buf.rules import RULES as BUF_RULES

    assert all(f"| `{rule_id}` |" in built for rule_id in BUF_RULES) and "| `FIELD_WIRE_COMPATIBLE_TYPE` | — | WIRE | WIRE |" in built
    reference = on_page_markdown((ROOT / "docs" / "reference" / "cli.md").read_text())
    assert "## `bot backfill`" in reference and "--all-topics" in reference and "### `bot ops undo`" in reference  # subcommands too
    from bot.web.api import ENDPOINTS

    routes = on_page_markdown((ROOT / "docs" / "reference" / "http-api.md").read_text())
    assert all(f"| `{e.method} {e.path}` | scope `{e.access}` |" in routes for e in ENDPOINTS) and "`POST /api/v1/pagerduty`" in routes


def test_the_docs_show_the_example_catalog_as_it_is() -> None:
    assert (ROOT / "examples" / "catalog.yaml").read_text() in (ROOT / "docs" / "features" / "lineage.md").read_text()


def test_the_readme_fits_two_screens_and_its_links_lead_to_pages() -> None:
    import re

    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 150
    links = re.findall(r"\]\((?!https?:)([^)#]+)\)", readme)
    assert len(links) > 10 and [link for link in links if not (ROOT / link).exists()] == []
