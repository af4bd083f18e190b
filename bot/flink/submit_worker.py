"""Submit a Flink SQL job to a running cluster, optionally restored from a savepoint: one JSON request on stdin,
one JSON answer on stdout (``{"job_id"}`` or ``{"failure": [[class, message], ...]}``).

Runs under the Python of a Flink runtime (``scripts/flink.sh install``), never in the bot's process: it imports
the standard library, PyFlink and ``bot.flink.worker_common`` only. Every non-INSERT statement runs as written (DDL, ``SET``); the INSERTs
(an ``EXECUTE STATEMENT SET`` block counts as given) run as one job, submitted with ``execution.target: remote``
to the cluster's REST address, named by ``pipeline.name`` and restored from ``execution.state-recovery.path``
when asked. ``starts`` moves Kafka sources: each table of the ``kafka`` connector reading a topic it names gets those
options (``scan.startup.mode`` ...) by ``ALTER TABLE ... SET`` before the job is planned; the answer names them."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

if __package__:
    from bot.flink.worker_common import SET, chain
else:  # a script under the Flink runtime's own Python (its own packages): this folder alone on the path, not the bot's
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from worker_common import SET, chain  # type: ignore[import-not-found,no-redef]


def main() -> int:
    """Read the request, submit, print the answer."""
    out = sys.stdout
    sys.stdout = sys.stderr  # whatever PyFlink prints must not mix into the answer
    request = json.loads(sys.stdin.read())
    try:
        job_id, moved = submit(request)
        answer: dict[str, Any] = {"job_id": job_id, "moved": moved}
    except Exception as err:  # what Flink refused: its own words, causes first to last
        answer = {"failure": chain(err)}
    out.write(json.dumps(answer) + "\n")
    out.flush()
    return 0


def submit(request: dict[str, Any]) -> tuple[str, dict[str, list[str]]]:
    """Submit the statements as one job: its id, and the tables moved by ``starts`` (table -> the topics it reads among them)."""
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
        setting = SET.fullmatch(statement["sql"].strip().rstrip(";").strip())
        if statement["kind"] == "insert":
            inserts.append(statement["sql"])
        elif setting is not None:  # the SQL client's SET 'key' = 'value': the job's configuration
            env.get_config().set(setting.group(1), setting.group(2))
        else:
            env.execute_sql(statement["sql"])
    if not inserts:
        raise ValueError("the SQL has no INSERT: there is no job to run")
    for key, value in (request.get("overrides") or {}).items():  # after the job's own SETs: what the bot must decide
        env.get_config().set(key, str(value))
    moved = _move_sources(env, request.get("starts") or {})
    missing = sorted(set(request.get("starts") or {}) - {topic for topics in moved.values() for topic in topics})
    if missing:  # before the job runs: a source left where it was would not re-read
        raise ValueError(f"no table of the 'kafka' connector in the SQL reads {', '.join(missing)}: nothing was started")
    if len(inserts) == 1 and inserts[0].lstrip().upper().startswith(("EXECUTE STATEMENT SET", "BEGIN STATEMENT SET")):
        return _job_id(env.execute_sql(inserts[0])), moved
    batch = env.create_statement_set()
    for sql in inserts:
        batch.add_insert_sql(sql)
    return _job_id(batch.execute()), moved


def _move_sources(env: Any, starts: dict[str, dict[str, str]]) -> dict[str, list[str]]:
    """``ALTER TABLE ... SET`` the start options of every Kafka table reading topics of ``starts`` (a table of several topics is
    given one start for all of them: the plan made them alike)."""
    from pyflink.java_gateway import get_gateway

    j_env = env._j_tenv
    catalog = j_env.getCatalog(j_env.getCurrentCatalog()).get()
    moved: dict[str, list[str]] = {}
    for name in env.list_tables():
        path = get_gateway().jvm.org.apache.flink.table.catalog.ObjectPath(j_env.getCurrentDatabase(), name)
        options = {str(k): str(v) for k, v in dict(catalog.getTable(path).getOptions()).items()}
        if options.get("connector") != "kafka":
            continue
        topics = [t.strip() for t in options.get("topic", "").split(";") if t.strip() in starts]
        if topics:
            settings = ", ".join(f"'{k}' = '{v}'" for k, v in starts[topics[0]].items())
            env.execute_sql(f"ALTER TABLE `{name}` SET ({settings})")
            moved[name] = topics
    return moved


def _job_id(result: Any) -> str:
    client = result.get_job_client()
    if client is None:
        raise ValueError("Flink started no job for the INSERT")
    return str(client.get_job_id())


if __name__ == "__main__":
    sys.exit(main())
