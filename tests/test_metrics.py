"""``GET /metrics``: the bot's own figures in the Prometheus text format, read back with prometheus-client's parser."""

from __future__ import annotations

from typing import Any

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from bot.slack import ids
from tests.conftest import SlackHarness
from tests.test_proposals_slack import ALICE
from tests.test_sli_alerts import catalog, load, sample, send, the_alert


async def scrape(slack: SlackHarness) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of ``/metrics`` (unauthenticated, as Prometheus scrapes), by name and labels."""
    async with aiohttp.ClientSession() as http, http.get(f"{slack.bot.url}/metrics") as response:
        assert response.status == 200 and response.headers["Content-Type"].startswith("text/plain; version=")
        text = await response.text()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for family in text_string_to_metric_families(text) for s in family.samples}


def value(figures: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float | None:
    return figures.get((name, tuple(sorted(labels.items()))))


async def test_metrics_follow_the_outbox_alerts_samples_slack_limits_and_requests(slack: SlackHarness) -> None:
    figures = await scrape(slack)
    assert value(figures, "changeops_outbox_pending") == 0 and value(figures, "changeops_outbox_oldest_pending_age_seconds") == 0
    assert value(figures, "changeops_sli_samples_total", result="ingested", reason="") == 0
    assert value(figures, "changeops_census_age_seconds") is None  # no census has answered: no figure rather than a made-up one

    await load(slack, catalog(slack))
    slack.ws.rate_limit("chat.postMessage")  # Slack's next answer to a post is 429: the alert goes out after Retry-After
    status, body = await send(slack, [sample("schema_error_rate", 0.05), sample("schema_error_rate", 0.06, 1),
                                      {"pipeline": "ghost", "sli": "schema_error_rate", "value": 0.1, "time": "2026-12-01T00:00:00Z"},
                                      {"pipeline": "enrich-orders", "sli": "schema_error_rate", "value": "high"}])
    assert status == 200 and body["accepted"] == 2
    message = await the_alert(slack, lambda text: "PAGE" in text)
    figures = await scrape(slack)
    assert value(figures, "changeops_sli_samples_total", result="ingested", reason="") == 2
    refused: dict[str, Any] = {labels: v for (name, labels), v in figures.items() if name == "changeops_sli_samples_total" and ("result", "refused") in labels}
    assert sum(refused.values()) == 2, refused
    assert value(figures, "changeops_sli_episodes_open", level="page", state="unacknowledged") == 1
    assert value(figures, "changeops_slack_rate_limited_total", method="chat.postMessage") == 1
    sent = sum(v for (name, labels), v in figures.items() if name == "changeops_outbox_deliveries_total" and ("result", "sent") in labels)
    retried = sum(v for (name, labels), v in figures.items() if name == "changeops_outbox_deliveries_total" and ("result", "retried") in labels)
    assert sent >= 1 and retried >= 1
    assert value(figures, "changeops_http_request_duration_seconds_count", route="/api/v1/metrics", method="POST", status="200") == 1
    assert value(figures, "changeops_http_request_duration_seconds_count", route="/metrics", method="GET", status="200") == 1

    await slack.driver.click(message, ids.SLI_ACK, user=ALICE)
    await the_alert(slack, lambda text: "Acknowledged by" in text)
    figures = await scrape(slack)
    assert value(figures, "changeops_sli_episodes_open", level="page", state="acknowledged") == 1
    assert value(figures, "changeops_sli_episodes_open", level="page", state="unacknowledged") is None
    async with aiohttp.ClientSession() as http, http.get(f"{slack.bot.url}/api/v1/proposals/12345") as response:
        assert response.status == 401  # an unknown route pattern never becomes a label of its own: the pattern does
    figures = await scrape(slack)
    assert value(figures, "changeops_http_request_duration_seconds_count", route="/api/v1/proposals/{id}", method="GET", status="401") == 1
