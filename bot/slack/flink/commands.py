"""``/flink``: a catalog Flink job as Flink itself sees it."""

from __future__ import annotations

from bot.domain.flink.status import FlinkError
from bot.domain.ops import OpsError
from bot.services.flink import FlinkService
from bot.services.operations import Actor, Operations
from bot.slack.render import Reply, escape
from bot.slack.request import CommandRequest

STATUS_USAGE = "`/flink status JOB`"
USAGE = "`/flink status JOB`, `/flink pause JOB`, `/flink resume JOB`"


class FlinkCommands:
    """What the ``/flink`` subcommands call."""

    def __init__(self, flink: FlinkService, ops: Operations) -> None:
        self.flink, self.ops = flink, ops

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

    async def pause(self, request: CommandRequest) -> Reply:
        """``/flink pause JOB``: oncall plans to stop the job with a savepoint; Confirm does it."""
        if len(request.args) != 1:
            return Reply.text(f"Say which job: {USAGE}.")
        try:
            row = await self.ops.plan_pause(request.args[0], Actor(request.user, "slack"), request.channel)
        except OpsError as err:
            return Reply.text(f"{escape(err)}. Usage: {USAGE}")
        return Reply.text(f"Pause plan #{row.id} is posted in this channel: check it, then Confirm (nothing changes before).")

    async def resume(self, request: CommandRequest) -> Reply:
        """``/flink resume JOB``: oncall plans to start the job again from its last pause's savepoint with its SQL."""
        if len(request.args) != 1:
            return Reply.text(f"Say which job: {USAGE} (a savepoint or SQL of your own: from a terminal, `bot flink resume JOB --savepoint PATH "
                              "--sql FILE`).")
        try:
            row = await self.ops.plan_resume(request.args[0], Actor(request.user, "slack"), request.channel)
        except OpsError as err:
            return Reply.text(f"{escape(err)}. Usage: {USAGE}")
        return Reply.text(f"Resume plan #{row.id} is posted in this channel: check it, then Confirm (nothing changes before).")
