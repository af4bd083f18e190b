"""The Flink release gate's planner work against bare PyFlink, in the same process.

A warm check of a 4-table job (three Kafka sources joined into a Kafka sink, Avro formats) by the gate's worker
(``bot/flink/planner_worker.check``: a fresh database, the DDLs, the INSERT's compiled plan, its query schema,
the tables described, the database dropped) against a bare ``explain_sql`` of the same statements (a fresh
database, the DDLs, the explain, the database dropped). The two take turns; medians are compared. The first
check's JVM start is reported on its own. Runs under the Flink runtime's Python (``scripts/flink.sh install``):
started with the bot's, it starts itself again under that one.

Run: .venv/bin/python bench/flink_gate.py [--checks 30]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
VERSION = os.environ.get("FLINK_VERSION", "2.3.0")
KAFKA = ("'connector' = 'kafka', 'properties.bootstrap.servers' = 'kafka:9092', 'properties.group.id' = 'bench', "
         "'scan.startup.mode' = 'earliest-offset', 'format' = 'avro-confluent', 'avro-confluent.url' = 'http://registry:8081'")
DDL = [
    f"CREATE TABLE orders (order_id STRING NOT NULL, customer_id BIGINT, product_id BIGINT, quantity INT, price DECIMAL(10, 2), "
    f"ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) WITH ({KAFKA}, 'topic' = 'orders')",
    f"CREATE TABLE customers (customer_id BIGINT, country STRING, segment STRING) WITH ({KAFKA}, 'topic' = 'customers')",
    f"CREATE TABLE products (product_id BIGINT, category STRING, brand ROW<name STRING, tier INT>) WITH ({KAFKA}, 'topic' = 'products')",
    f"CREATE TABLE dwd_orders (order_id STRING, country STRING, category STRING, brand STRING, total DECIMAL(20, 2)) "
    f"WITH ({KAFKA}, 'topic' = 'dwd_orders')",
]
INSERT = ("INSERT INTO dwd_orders SELECT o.order_id, c.country, p.category, p.brand.name, o.price * o.quantity "
          "FROM orders o JOIN customers c ON o.customer_id = c.customer_id JOIN products p ON o.product_id = p.product_id")


def runtime_python() -> Path:
    root = Path(os.environ.get("CHANGEOPS_FLINK_ROOT") or Path(os.environ.get("CHANGEOPS_CACHE") or Path.home() / ".cache" / "changeops") / "flink")
    return root / f"flink-{VERSION}" / "venv" / "bin" / "python"


def inside(checks: int) -> None:
    sys.path.insert(0, str(ROOT / "bot" / "flink"))
    import planner_worker  # the gate's own worker code, under PyFlink's Python

    jars = sorted(str(j) for j in runtime_python().parents[2].joinpath("jars").glob("*.jar"))
    began = time.perf_counter()
    env = planner_worker.environment(jars)
    started = time.perf_counter() - began
    request = {"statements": [{"kind": "other", "sql": s} for s in DDL] + [{"kind": "insert", "sql": INSERT}]}
    began = time.perf_counter()
    known: dict[str, bool] = {}  # the connectors the runtime has, learned once (as the warm worker keeps them)
    first = planner_worker.check(env, request, "bench_first", known)
    cold = time.perf_counter() - began
    assert all(r["ok"] for r in first["results"]), first["results"]

    def bare(database: str) -> None:
        env.execute_sql(f"CREATE DATABASE `{database}`")
        env.execute_sql(f"USE `{database}`")
        for ddl in DDL:
            env.execute_sql(ddl)
        env.explain_sql(INSERT)
        env.execute_sql("USE `default_database`")
        env.execute_sql(f"DROP DATABASE `{database}` CASCADE")

    gate_times: list[float] = []
    bare_times: list[float] = []
    for turn in range(checks):
        order: list[tuple[list[float], Any]] = [(gate_times, lambda n: planner_worker.check(env, request, n, known)), (bare_times, bare)]
        for times, run in order if turn % 2 == 0 else reversed(order):
            began = time.perf_counter()
            run(f"bench_{turn}_{len(times)}_{id(times)}")
            times.append(time.perf_counter() - began)
    gate, plain = statistics.median(gate_times), statistics.median(bare_times)
    print(f"JVM start and TableEnvironment (once): {started:6.2f} s; the first check after it: {cold:6.2f} s")
    print(f"bare explain_sql of the 4-table job (baseline): {plain * 1000:7.1f} ms median of {checks}")
    print(f"the gate's warm check of the same job:          {gate * 1000:7.1f} ms median of {checks}")
    print(f"ratio gate / bare: {gate / plain:.2f}x (aim <= 1.3x)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checks", type=int, default=30)
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inside:
        inside(args.checks)
        return 0
    python = runtime_python()
    if not python.exists():
        print(f"no Flink {VERSION} runtime at {python.parents[2]}: run scripts/flink.sh install {VERSION}", file=sys.stderr)
        return 1
    return subprocess.run([str(python), "-I", __file__, "--inside", "--checks", str(args.checks)], check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
