"""``/flink``: a catalog Flink job as Flink itself sees it."""

from __future__ import annotations

from bot.domain.flink.status import FlinkError
from bot.services.flink import FlinkService
from bot.slack.render import Reply, escape
from bot.slack.request import CommandRequest

STATUS_USAGE = "`/flink status JOB`"


class FlinkCommands:
    """What the ``/flink`` subcommands call."""

    def __init__(self, flink: FlinkService) -> None:
        self.flink = flink

    async def status(self, request: CommandRequest) -> Reply:
        """``/flink status JOB``: state, job id, last checkpoint against the interval, failures, restarts, backpressure, savepoint."""
        if len(request.args) != 1:
            return Reply.text(f"Say which job: {STATUS_USAGE} (a catalog job with `flink:`, matched by Flink's pipeline.name).")
        try:
            status = await self.flink.status(request.args[0])
        except FlinkError as err:
            return Reply.text(f"{escape(err)}. Usage: {STATUS_USAGE}")
        first, *rest = status.lines()
        return Reply.sections(f"*{escape(first)}*", [escape(line) for line in rest] + [f"_as Flink said at {status.at:%H:%M:%S} UTC_"])
