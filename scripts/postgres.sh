#!/usr/bin/env bash
# Start or stop a throw-away PostgreSQL cluster on 127.0.0.1 for the tests.
#   scripts/postgres.sh start RUN_DIR   prints `export TEST_DATABASE_URL=...`
#   scripts/postgres.sh stop RUN_DIR
# Installs PostgreSQL from Debian's packages when it is missing. When TEST_DATABASE_URL is already
# set and answers, it is used as it is and nothing is started.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
action=$1 run_dir=$2
data=$run_dir/postgres

as_postgres() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

pg_bin() {
  local dir
  dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  if [ -z "$dir" ]; then
    ensure_command pg_ctlcluster postgresql >/dev/null
    dir=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  fi
  echo "$dir"
}

case $action in
  start)
    if [ -n "${TEST_DATABASE_URL:-}" ] && .venv/bin/python -c "import psycopg,sys; psycopg.connect(sys.argv[1].replace('+psycopg',''), connect_timeout=3).close()" "$TEST_DATABASE_URL" 2>/dev/null; then
      echo "export TEST_DATABASE_URL='$TEST_DATABASE_URL'"
      exit 0
    fi
    bin=$(pg_bin)
    port=$(free_port)
    chmod 755 "$run_dir"
    mkdir -p "$data"
    [ "$(id -u)" -ne 0 ] || chown postgres: "$data"
    as_postgres "$bin/initdb" -D "$data/db" -U changeops --auth=trust -E UTF8 --no-locale >"$run_dir/postgres-initdb.log" 2>&1
    as_postgres "$bin/pg_ctl" -D "$data/db" -l "$data/server.log" -w -t 60 \
      -o "-p $port -k $data -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
      start >&2
    echo "$bin" > "$run_dir/postgres.bin"
    echo "PostgreSQL ready on 127.0.0.1:$port" >&2
    echo "export TEST_DATABASE_URL='postgresql://changeops@127.0.0.1:$port/postgres'"
    ;;
  stop)
    if [ -f "$run_dir/postgres.bin" ]; then
      as_postgres "$(cat "$run_dir/postgres.bin")/pg_ctl" -D "$data/db" -m immediate -w stop >/dev/null 2>&1 || true
    fi
    ;;
  *) echo "usage: $0 start|stop RUN_DIR" >&2; exit 2 ;;
esac
