"""The planner worker: Flink's SQL planner answering checks, one JSON line in and one out.

Runs under the Python of a Flink runtime (``scripts/flink.sh install``), never in the bot's process: it imports
the standard library, PyFlink and ``bot.flink.worker_common`` only. One ``TableEnvironment`` is kept warm; each check runs in a database of
its own that is dropped afterwards, and the configuration its ``SET`` statements changed is put back. It ends at the end of its input, which is
also how it ends when the bot that started it dies (the JVM ends with it: PyFlink's gateway exits when its
own input closes).

A table whose connector this runtime lacks (JDBC, Doris, a CDC source...) is checked through the type-only stand-in
``scripts/flink.sh install`` builds (``changeops-type-only``): the planner validates its columns and types, not its
options, and the answer names it under ``unchecked``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

STAND_IN = "changeops-type-only"
REAL = "changeops.unchecked-connector"  # the stand-in's option holding the table's own connector

if __package__:
    from bot.flink.worker_common import RESET, SET, chain
else:  # a script under the Flink runtime's own Python (its own packages): this folder alone on the path, not the bot's
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from worker_common import RESET, SET, chain  # type: ignore[import-not-found,no-redef]


def main(argv: list[str]) -> int:
    """``planner_worker JAR...``: serve checks on stdin/stdout until stdin ends."""
    out = sys.stdout
    sys.stdout = sys.stderr  # whatever PyFlink prints must not mix into the answers
    env = environment(argv)
    import pyflink.version

    out.write(json.dumps({"ready": True, "flink": pyflink.version.__version__}) + "\n")
    out.flush()
    checks = 0
    known: dict[str, bool] = {}  # connector -> whether this runtime has it
    for line in sys.stdin:
        if not line.strip():
            continue
        checks += 1
        try:
            answer = check(env, json.loads(line), f"check_{checks}", known)
        except Exception as err:  # the check itself failed, not the job: say so and stay up
            answer = {"failure": f"{type(err).__name__}: {err}"}
        out.write(json.dumps(answer) + "\n")
        out.flush()
    return 0


def environment(jars: list[str]) -> Any:
    """A streaming ``TableEnvironment`` with the connector and format jars loaded (the JVM starts here)."""
    from pyflink.table import EnvironmentSettings, TableEnvironment

    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    if jars:
        env.get_config().set("pipeline.jars", ";".join(f"file://{jar}" for jar in jars))
    return env


def check(env: Any, request: dict[str, Any], database: str, known: dict[str, bool]) -> dict[str, Any]:
    """Run one job's statements in a fresh database: every statement's outcome and every table it created."""
    j_env = env._j_tenv
    catalog = j_env.getCurrentCatalog()
    j_env.executeSql(f"CREATE DATABASE `{database}`")  # the Java environment's own call: PyFlink's execute_sql first re-adds its
    j_env.executeSql(f"USE `{database}`")  # jars to the configuration, a dozen JVM calls per statement for jars set once at start
    saved: dict[str, str | None] = {}  # keys the job SET, with their values before it
    try:
        results: list[dict[str, Any]] = []
        looked_at: set[str] = set()  # each table looked at once, before the first INSERT after its CREATE
        for statement in request["statements"]:
            if statement["kind"] == "insert":
                _stand_in(env, catalog, database, known, looked_at)
            results.append(_statement(env, statement, saved))
        planned = _planned_tables(results)  # what the compiled plans already say: each other table is asked for, attribute by attribute
        tables = {name: planned.get(name) or _table(env, catalog, database, name) for name in env.list_tables()}
        unchecked = {name: table["options"]["connector"] for name, table in tables.items() if table.pop("unchecked", False)}
        return {"results": results, "tables": tables, "unchecked": unchecked}
    finally:
        j_env.executeSql("USE `default_database`")
        j_env.executeSql(f"DROP DATABASE IF EXISTS `{database}` CASCADE")
        configuration = env.get_config().get_configuration() if saved else None  # (each is a JVM call: only when the job SET keys)
        for key, value in saved.items():
            assert configuration is not None
            if value is None:
                configuration.remove_config(key)
            else:
                configuration.set_string(key, value)


def _statement(env: Any, statement: dict[str, Any], saved: dict[str, str | None]) -> dict[str, Any]:
    sql, kind = statement["sql"], statement["kind"]
    try:
        if kind in ("set", "reset"):  # the SQL client's SET 'key' = 'value' / RESET 'key': the job's configuration
            _configure(env, sql, saved)
            return {"ok": True}
        if kind != "insert":
            env._j_tenv.executeSql(sql)
            return {"ok": True}
        return {"ok": True, **_insert(env, sql)}
    except Exception as err:
        return {"ok": False, "error": chain(err)}


def _configure(env: Any, sql: str, saved: dict[str, str | None]) -> None:
    configuration = env.get_config().get_configuration()
    text = sql.strip().rstrip(";").strip()
    found = SET.fullmatch(text) or RESET.fullmatch(text)
    if found is None:
        return  # a bare SET or RESET lists or clears the client's session: nothing for a job
    key = found.group(1)
    if key not in saved:
        saved[key] = configuration.get_string(key, None) if configuration.contains_key(key) else None
    if found.re is SET:
        configuration.set_string(key, found.group(2))
    else:
        configuration.remove_config(key)


def _insert(env: Any, sql: str) -> dict[str, Any]:
    """The planner's whole validation of an INSERT (columns, types, the sink's shape, connector options) by
    compiling its plan, which the gate reads for column lineage and casts; and what the gate checks beyond the
    planner: the query's own columns (before the sink's implicit casts) and the explicit column list. The statement is
    parsed once and its plan compiled from that operation (``compilePlanSql`` would parse and validate it again). A plan
    that cannot be compiled (a connector without compiled-plan support) is validated by ``explain_sql`` instead."""
    from pyflink.java_gateway import get_gateway

    j_env = env._j_tenv
    answer: dict[str, Any] = {"plan": None, "target_columns": None}
    operation = j_env.getParser().parse(sql).get(0)  # parsed and validated once: the plan is compiled from this operation
    try:
        answer["plan"] = json.loads(j_env.getPlanner().compilePlan(get_gateway().jvm.java.util.Collections.singletonList(operation)).asJsonString())
    except Exception as err:
        env.explain_sql(sql)  # raises what the planner refuses; if it passes, only the compiled plan was unavailable
        answer["plan_error"] = chain(err)[-1][1]
    answer["target"] = str(operation.getContextResolvedTable().getIdentifier().getObjectName())
    answer["query"] = [[c.getName(), c.getDataType().getLogicalType().asSerializableString()]
                       for c in operation.getChild().getResolvedSchema().getColumns()]
    targets = operation.getTargetColumns() if hasattr(operation, "getTargetColumns") else None
    if targets is not None:
        answer["target_columns"] = [list(path) for path in targets]
    return answer


def _stand_in(env: Any, catalog: str, database: str, known: dict[str, bool], looked_at: set[str]) -> None:
    """Point every table whose connector this runtime lacks at the type-only stand-in, keeping its own connector."""
    from pyflink.java_gateway import get_gateway

    jvm = get_gateway().jvm
    names = [name for name in env.list_tables() if name not in looked_at]
    if not names:
        return
    tables, path = env._j_tenv.getCatalog(catalog).get(), jvm.org.apache.flink.table.catalog.ObjectPath  # looked up once: each is a JVM call
    for name in names:
        looked_at.add(name)
        base = tables.getTable(path(database, name))
        if str(base.getTableKind().name()) != "TABLE":
            continue
        connector = str(base.getOptions().get("connector") or "")
        if not connector or connector == STAND_IN:
            continue
        if connector not in known:
            factory = jvm.java.lang.Class.forName("org.apache.flink.table.factories.DynamicTableFactory")
            try:
                jvm.org.apache.flink.table.factories.FactoryUtil.discoverFactory(
                    jvm.java.lang.Thread.currentThread().getContextClassLoader(), factory, connector)
                known[connector] = True
            except Exception:
                known[connector] = False
        if not known[connector]:
            quoted = connector.replace("'", "''")
            env._j_tenv.executeSql(f"ALTER TABLE `{name}` SET ('connector' = '{STAND_IN}', '{REAL}' = '{quoted}')")


def _planned_tables(results: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The tables the INSERTs' compiled plans describe, as ``_table`` describes them: Flink writes each catalog table a plan
    reads or writes into it whole (``table.plan.compile.catalog-objects``: ALL, the default). A table with a column whose type
    the plan spells in a form not read here is left out (``_table`` asks for it)."""
    found: dict[str, dict[str, Any]] = {}
    stack: list[Any] = [r["plan"] for r in results if r.get("plan")]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        stack.extend(node.values())
        resolved, identifier = node.get("resolvedTable"), node.get("identifier")
        if not isinstance(resolved, dict) or not isinstance(identifier, str) or not identifier.endswith("`"):
            continue
        columns = []
        for column in resolved.get("schema", {}).get("columns", []):
            kind = str(column.get("kind", "PHYSICAL")).lower()
            written = column.get("expression", {}).get("rexNode", {}).get("type") if kind == "computed" else column.get("dataType")
            if isinstance(written, dict) and written.get("type") == "TIMESTAMP_WITHOUT_TIME_ZONE" and "precision" in written:
                written = f"TIMESTAMP({written['precision']})" + ("" if written.get("nullable", True) else " NOT NULL")  # a rowtime attribute
            if not isinstance(written, str):
                break
            columns.append({"name": column["name"], "type": written, "kind": kind})
        else:
            options = {str(k): str(v) for k, v in (resolved.get("options") or {}).items()}
            unchecked = options.get("connector") == STAND_IN and REAL in options
            if unchecked:
                options["connector"] = options.pop(REAL)
            name = identifier[identifier.rfind(".`") + 2:-1].replace("``", "`") if ".`" in identifier else identifier.strip("`")
            found[name] = {"kind": "table", "options": options, "columns": columns, "unchecked": unchecked}
    return found


def _table(env: Any, catalog: str, database: str, name: str) -> dict[str, Any]:
    from pyflink.java_gateway import get_gateway

    j_env = env._j_tenv
    path = get_gateway().jvm.org.apache.flink.table.catalog.ObjectPath(database, name)
    base = j_env.getCatalog(catalog).get().getTable(path)
    kind = str(base.getTableKind().name())
    columns = [{"name": c.getName(), "type": c.getDataType().getLogicalType().asSerializableString(),
                "kind": c.getClass().getSimpleName().removesuffix("Column").lower()}
               for c in getattr(j_env, "from")(f"`{name}`").getResolvedSchema().getColumns()]
    options = {str(k): str(v) for k, v in dict(base.getOptions()).items()} if kind == "TABLE" else {}
    unchecked = options.get("connector") == STAND_IN and REAL in options
    if unchecked:
        options["connector"] = options.pop(REAL)
    return {"kind": kind.lower(), "options": options, "columns": columns, "unchecked": unchecked}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
