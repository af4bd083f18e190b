"""The release gate's report in Slack: the developer's DM and the job's team channel get the verdict, each
failed check with its reasons and positions (what the gate answered, never re-run)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.services.outbox import Expand, GiveUp, Handler, Item
from bot.services.releases import RELEASE_REPORT, Releases
from bot.slack.delivery import message_row
from bot.slack.render import Reply, escape

MAX_FINDINGS = 20  # per check; the rest are counted
TITLES = {"source_schema": "Source schemas vs the registry", "sql": "SQL against the schemas", "sink": "Sink columns",
          "state": "State vs the last savepoint", "lineage": "Registered in the lineage"}


def report_reply(report: dict[str, Any]) -> Reply:
    """The verdict, then each check that blocked (and any warnings), findings with their positions."""
    job = escape(report["job"])
    if report["verdict"] == "pass":
        title = f":white_check_mark: Flink release of *{job}* passed the gate (Flink {escape(report['flink'])}): booked as a release"
    else:
        failed = ", ".join(TITLES[c["check"]].lower() for c in report["checks"] if not c["ok"])
        title = f":no_entry: Flink release of *{job}* is blocked (Flink {escape(report['flink'])}): {failed}"
    lines = []
    for check in report["checks"]:
        if not check["findings"]:
            continue
        lines.append(f"*{TITLES[check['check']]}*" + ("" if check["ok"] else " — blocks the release"))
        for finding in check["findings"][:MAX_FINDINGS]:
            where = [f"line {finding['line']}" + (f", column {finding['column_number']}" if finding.get("column_number") else "")] \
                if finding.get("line") else []
            if finding.get("table"):
                where.insert(0, f"`{escape(finding['table'])}`")
            mark = {"warning": ":warning: ", "info": ":information_source: "}.get(finding["level"], "• ")
            lines.append(f"{mark}{' · '.join(where) + ': ' if where else ''}{escape(finding['message'])}")
        if len(check["findings"]) > MAX_FINDINGS:
            lines.append(f"… and {len(check['findings']) - MAX_FINDINGS} more (`bot gate job {job} --format json`)")
    lines.append(f"Release #{report['release']}, checked {escape(report['checked_at'][:16].replace('T', ' '))} UTC")
    return Reply.sections(title, lines)


class ReleaseReports:
    """Expands a release's report into the messages it owes."""

    def __init__(self, releases: Releases) -> None:
        self.releases = releases

    def handlers(self) -> Mapping[str, Handler]:
        """Kind -> handler, for the dispatcher."""
        return {RELEASE_REPORT: self.expand}

    async def expand(self, item: Item) -> Expand:
        """One DM for the developer, one message for the team's channel."""
        row = await self.releases.stored(int(item.payload["release"]))
        if row is None or not row.report:
            raise GiveUp(f"release #{item.payload['release']} is not stored")
        reply = report_reply(row.report)
        rows = []
        if item.payload.get("author"):
            rows.append(message_row(str(item.payload["author"]), reply))
        if item.payload.get("channel"):
            rows.append(message_row(str(item.payload["channel"]), reply, key=f"releases:{item.payload['channel']}"))
        return Expand(rows)
