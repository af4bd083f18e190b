"""The health report in Slack: a readable Block Kit report (overall, then per team, then what could not be measured),
a chart of the trends uploaded with files.uploadV2 in its thread (rendered in a worker process), and
``/schema health [team]``."""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bot.domain.health import OVERALL, describe, month_of
from bot.services.health import HEALTH_REPORT, HealthService
from bot.services.outbox import Expand, GiveUp, Handler, Item
from bot.slack.delivery import call
from bot.slack.render import Reply, escape, fold, section
from bot.slack.request import CommandRequest
from bot.workers import off_loop

HEALTH_CHART = "health.chart"


def figure_lines(figures: dict[str, Any]) -> list[str]:
    """One team's (or the overall) figures, for people in Slack."""
    return [f"{mark} {escape(text)}" for mark, text in describe(figures)]


def report_reply(figures: dict[str, Any], team: str | None = None) -> Reply:
    """The report (one team's part only, with ``team``)."""
    title = f"Metadata health — {figures['month']}" + (f" · {team}" if team else "")
    blocks: list[dict[str, Any]] = [{"type": "header", "text": {"type": "plain_text", "text": title[:150]}}]
    parts = [(team, figures["teams"][team])] if team else [("Overall", figures[OVERALL]), *figures["teams"].items()]
    for name, values in parts:
        blocks += [section(chunk) for chunk in fold([f"*{escape(name)}*", *figure_lines(values)])]
        if len(blocks) > 45:
            blocks.append(section("… more teams in `bot health report`"))
            break
    if figures["unmeasured"]:
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": ("Not measured: " + "; ".join(escape(u) for u in figures["unmeasured"]))[:2900]}]})
    return Reply(title, blocks[:50])


def chart_png(history: list[dict[str, Any]]) -> bytes:
    """The trends as a PNG: per team this month (black-box share, share of changes through proposals), and the overall
    shares month by month. CPU work: run it in a worker process."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    latest = history[-1]
    teams = sorted(latest.get("teams", {}))
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4), dpi=100)
    positions = range(len(teams))
    left.bar([p - 0.2 for p in positions], [(latest["teams"][t]["black_box_share"] or 0) * 100 for t in teams], width=0.4, label="through black boxes")
    left.bar([p + 0.2 for p in positions], [(latest["teams"][t]["through_proposals_share"] or 0) * 100 for t in teams], width=0.4,
             label="changes through proposals")
    left.set_xticks(list(positions), teams, rotation=20, ha="right")
    left.set_ylim(0, 100)
    left.set_ylabel("%")
    left.set_title(f"Teams, {latest['month']}")
    left.legend(fontsize=8)
    months = [r["month"] for r in history]
    for key, label in (("black_box_share", "lineage through black boxes"), ("through_proposals_share", "changes through proposals"),
                       ("registered_share", "topics with a registered schema")):
        right.plot(months, [(r.get(OVERALL, {}).get(key) or 0) * 100 for r in history], marker="o", label=label)
    right.set_ylim(0, 100)
    right.set_title("Overall, month by month")
    right.legend(fontsize=8)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    plt.close(figure)
    return buffer.getvalue()


class HealthSlack:
    """Delivery of the monthly report, and ``/schema health``."""

    def __init__(self, client: AsyncWebClient, health: HealthService) -> None:
        self.client, self.health = client, health

    def handlers(self) -> Mapping[str, Handler]:
        """Kind -> handler, for the dispatcher."""
        return {HEALTH_REPORT: self.post, HEALTH_CHART: self.chart}

    async def post(self, item: Item) -> Expand:
        """Post the report; its chart follows in the thread (a row of its own, so a failed upload never posts twice)."""
        figures = await self.health.stored(item.payload["month"])
        if figures is None:
            raise GiveUp(f"no report of {item.payload['month']} is stored")
        reply = report_reply(figures)
        posted = await call(self.client, "chat.postMessage", channel=item.payload["channel"], text=reply.fallback, blocks=reply.blocks,
                            unfurl_links=False)
        return Expand([(HEALTH_CHART, item.key, {"month": item.payload["month"], "channel": str(posted["channel"]), "ts": str(posted["ts"])})])

    async def chart(self, item: Item) -> None:
        """Upload the trends chart into the report's thread (files.uploadV2)."""
        history = [r for r in await self.health.history() if r["month"] <= item.payload["month"]]
        if not history:
            raise GiveUp(f"no report of {item.payload['month']} is stored")
        png = await off_loop(chart_png, history)
        await call(self.client, "files.upload_v2", channel=item.payload["channel"], thread_ts=item.payload["ts"], content=png,
                   filename=f"metadata-health-{item.payload['month']}.png", title=f"Metadata health trends, {item.payload['month']}")

    async def command(self, request: CommandRequest) -> Reply:
        """``/schema health [team]``: this month so far (overall and every team, or one team)."""
        team = request.args[0] if request.args else None
        teams = await self.health.lineage.teams()
        if team is not None and team not in teams:
            return Reply.text(f"There is no team `{escape(team)}`. Teams: {', '.join(f'`{escape(t)}`' for t in sorted(teams)[:30])}")
        month = month_of(self.health.clock().strftime("%Y-%m"))
        return report_reply(await self.health.compute(month), team)
