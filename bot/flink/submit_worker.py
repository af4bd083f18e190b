"""Submit a Flink SQL job to a running cluster, optionally restored from a savepoint: one JSON request on stdin,
one JSON answer on stdout (``{"job_id"}`` or ``{"failure": [[class, message], ...]}``).

Runs under the Python of a Flink runtime (``scripts/flink.sh install``), never in the bot's process: it imports
the standard library and PyFlink only. Every non-INSERT statement runs as written (DDL, ``SET``); the INSERTs
(an ``EXECUTE STATEMENT SET`` block counts as given) run as one job, submitted with ``execution.target: remote``
to the cluster's REST address, named by ``pipeline.name`` and restored from ``execution.state-recovery.path``
when asked."""

from __future__ import annotations

import json
import sys
from typing import Any
from urllib.parse import urlsplit


def main() -> int:
    """Read the request, submit, print the answer."""
    out = sys.stdout
    sys.stdout = sys.stderr  # whatever PyFlink prints must not mix into the answer
    request = json.loads(sys.stdin.read())
    try:
        answer: dict[str, Any] = {"job_id": submit(request)}
    except Exception as err:  # what Flink refused: its own words, causes first to last
        answer = {"failure": _chain(err)}
    out.write(json.dumps(answer) + "\n")
    out.flush()
    return 0


def submit(request: dict[str, Any]) -> str:
    """Submit the statements as one job; its id."""
    from pyflink.common import Configuration
    from pyflink.table import EnvironmentSettings, TableEnvironment

    url = urlsplit(request["rest_url"])
    conf = Configuration()
    settings = {"execution.target": "remote", "rest.address": url.hostname or "127.0.0.1", "rest.port": str(url.port or 8081),
                "pipeline.name": request["name"], **request.get("config", {})}
    if request.get("jars"):
        settings["pipeline.jars"] = ";".join(f"file://{jar}" for jar in request["jars"])
    for key, value in settings.items():
        conf.set_string(key, str(value))
    env = TableEnvironment.create(EnvironmentSettings.new_instance().in_streaming_mode().with_configuration(conf).build())
    inserts = []
    for statement in request["statements"]:
        if statement["kind"] == "insert" and not statement["sql"].lstrip().upper().startswith(("EXECUTE STATEMENT SET", "BEGIN STATEMENT SET")):
            inserts.append(statement["sql"])
        elif statement["kind"] == "insert":
            return _job_id(env.execute_sql(statement["sql"]))
        else:
            env.execute_sql(statement["sql"])
    if not inserts:
        raise ValueError("the SQL has no INSERT: there is no job to run")
    batch = env.create_statement_set()
    for sql in inserts:
        batch.add_insert_sql(sql)
    return _job_id(batch.execute())


def _job_id(result: Any) -> str:
    client = result.get_job_client()
    if client is None:
        raise ValueError("Flink started no job for the INSERT")
    return str(client.get_job_id())


def _chain(err: Exception) -> list[list[str]]:
    cause = getattr(err, "java_exception", None)
    if cause is None:
        return [[type(err).__name__, str(err)]]
    chain: list[list[str]] = []
    while cause is not None and len(chain) < 20:
        chain.append([str(cause.getClass().getName()), str(cause.getMessage())])
        cause = cause.getCause()
    return chain


if __name__ == "__main__":
    sys.exit(main())
