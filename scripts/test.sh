#!/usr/bin/env bash
# Set up and run every test: .venv with the test dependencies, PostgreSQL, Kafka, Apicurio Registry, Flink's planner (PyFlink) and a Flink cluster, and
# headless Chromium (installed from Debian's packages / PyPI / Maven Central when missing), pytest, then stop what started.
# Arguments go to pytest (e.g. scripts/test.sh -k slack -x).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
ensure_venv "[test]"
# The browser tests: Debian's Chromium and its driver (no test tool downloads a browser), emoji for the screenshot
ensure_packages chromium chromium-driver fonts-noto-color-emoji
.venv/bin/ruff check bot tests bench scripts/docs_hooks.py
.venv/bin/mypy
run_dir=$(mktemp -d /tmp/changeops-test.XXXXXX)
cleanup() {
  scripts/flink.sh cluster stop "$run_dir" || true
  scripts/registry.sh stop "$run_dir" || true
  scripts/kafka.sh stop "$run_dir" || true
  scripts/postgres.sh stop "$run_dir" || true
  rm -rf "$run_dir"
}
trap cleanup EXIT
# The documentation site, strictly: a broken link, a missing page or a page left out of the navigation fails the build
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --site-dir "$run_dir/site" > "$run_dir/docs.log" 2>&1 \
  || { grep -v "^INFO" "$run_dir/docs.log" >&2; echo "the documentation did not build" >&2; exit 1; }
echo "the documentation site builds strictly"
# One real Schema Registry per pytest worker (each test clears its registry), started while the rest starts
scripts/registry.sh start "$run_dir" "${PYTEST_WORKERS:-3}" > "$run_dir/registry.env" &
registry=$!
postgres_env=$(scripts/postgres.sh start "$run_dir") || { echo "PostgreSQL did not start" >&2; exit 1; }
eval "$postgres_env"
kafka_env=$(scripts/kafka.sh start "$run_dir") || { echo "the Kafka broker did not start (see $run_dir/kafka)" >&2; exit 1; }
eval "$kafka_env"
wait "$registry" || { echo "the Schema Registry did not start" >&2; exit 1; }
eval "$(cat "$run_dir/registry.env")"
export TEST_SCHEMA_REGISTRY_URLS=$SCHEMA_REGISTRY_URLS
unset SCHEMA_REGISTRY_URL SCHEMA_REGISTRY_URLS
eval "$(scripts/flink.sh install)"  # Flink's planner for the release gate, in its own environment, once
# A real standalone Flink cluster from that runtime (start-cluster.sh), for the Flink operations and SLIs
eval "$(scripts/flink.sh cluster start "$run_dir")" || { echo "the Flink cluster did not start (see $run_dir/flink/log)" >&2; exit 1; }
export TEST_FLINK_REST_URL=$FLINK_REST_URL TEST_FLINK_SAVEPOINT_DIR=$FLINK_SAVEPOINT_DIR
unset FLINK_REST_URL FLINK_SAVEPOINT_DIR
export TEST_DATABASE_URL KAFKA_BOOTSTRAP_SERVERS CHANGEOPS_FLINK_ROOT
set +e
started=$SECONDS
.venv/bin/python -m pytest -n "${PYTEST_WORKERS:-3}" --dist worksteal "$@"
status=$?
set -e
took=$((SECONDS - started))
echo "pytest took $((took / 60)) min $((took % 60)) s"
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests: that is a failure" >&2
  status=1
fi
exit "$status"
