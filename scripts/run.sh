#!/usr/bin/env bash
# Set up and run the bot locally: .venv, an embedded SQLite database (var/changeops.db), and the bot
# together with the Slack emulator and its web page (the playground), with the example catalog loaded.
# When Java is present (and KAFKA_BOOTSTRAP_SERVERS is not set), a local Kafka broker too, filled with the
# demo topics; it stops when the playground does. Arguments go to `bot playground` (e.g. --slack-port 8080).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
ensure_venv ""
mkdir -p var
export DATABASE_URL=${DATABASE_URL:-sqlite:///var/changeops.db}
export CHANGEOPS_API_TOKEN=${CHANGEOPS_API_TOKEN:-playground-token-0123456789}
.venv/bin/bot migrate
.venv/bin/bot catalog load examples/catalog.yaml
if ! .venv/bin/bot subject versions orders-value >/dev/null 2>&1; then  # the first start: two versions of the demo subject
  .venv/bin/bot subject import orders-value examples/schemas/orders.avsc examples/schemas/orders-v2.avsc
fi
seed=()
if [ -z "${KAFKA_BOOTSTRAP_SERVERS:-}" ] && command -v java >/dev/null 2>&1; then
  rm -rf var/kafka && mkdir -p var/kafka
  trap 'scripts/kafka.sh stop var/kafka' EXIT
  eval "$(scripts/kafka.sh start var/kafka)"
  export KAFKA_BOOTSTRAP_SERVERS
  seed=(--seed-kafka)
elif [ -z "${KAFKA_BOOTSTRAP_SERVERS:-}" ]; then
  echo "No Java here: the playground runs without Kafka (install OpenJDK 17 for alerts on lag, backfills and replays)"
fi
echo "HTTP API token: $CHANGEOPS_API_TOKEN (try: CHANGEOPS_API_TOKEN=$CHANGEOPS_API_TOKEN .venv/bin/bot propose orders-value my.avsc)"
.venv/bin/bot playground "${seed[@]}" "$@"
