#!/usr/bin/env bash
# Set up and run the bot locally: .venv, an embedded SQLite database (var/changeops.db), and the bot
# together with the Slack emulator and its web page (the playground), with the example catalog loaded.
# When Java is present (and KAFKA_BOOTSTRAP_SERVERS / SCHEMA_REGISTRY_URL are not set), a local Kafka broker too,
# filled with the demo topics, and a Schema Registry (Apicurio, scripts/registry.sh). SIGTERM or SIGINT (Ctrl-C) to any part (make, this script, the playground, the broker, the registry) stops
# the whole. Arguments go to `bot playground` (e.g. --slack-port 8080); CHANGEOPS_VAR moves var/.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
ensure_venv ""
state=${CHANGEOPS_VAR:-var}
mkdir -p "$state"
export DATABASE_URL=${DATABASE_URL:-sqlite:///$state/changeops.db}
export CHANGEOPS_API_TOKEN=${CHANGEOPS_API_TOKEN:-playground-token-0123456789}
export SLI_POLL_SECONDS=${SLI_POLL_SECONDS:-5}  # the demo's lag is measured often: its page comes within a minute or two
.venv/bin/bot migrate
.venv/bin/bot catalog load examples/catalog.yaml
if ! .venv/bin/bot subject versions orders-value >/dev/null 2>&1; then  # the first start: two versions of the demo subject
  .venv/bin/bot subject import orders-value examples/schemas/orders.avsc examples/schemas/orders-v2.avsc
fi
options=(--stop-with $$)  # the playground ends with this script, even one killed outright
stops=()
trap 'for stop in "${stops[@]}"; do $stop || true; done' EXIT
if [ -z "${SCHEMA_REGISTRY_URL:-}" ] && command -v java >/dev/null 2>&1; then  # a real registry, started beside the broker
  rm -rf "$state/registry" && mkdir -p "$state/registry"
  stops+=("scripts/registry.sh stop $state/registry")
  scripts/registry.sh start "$state/registry" > "$state/registry/env" &
  registry=$!
fi
if [ -z "${KAFKA_BOOTSTRAP_SERVERS:-}" ] && command -v java >/dev/null 2>&1; then
  rm -rf "$state/kafka" && mkdir -p "$state/kafka"
  stops+=("scripts/kafka.sh stop $state/kafka")
  if kafka_env=$(scripts/kafka.sh start "$state/kafka"); then
    eval "$kafka_env"
    export KAFKA_BOOTSTRAP_SERVERS
    options+=(--seed-kafka --stop-with "$(cat "$state/kafka/kafka/pid")")
  else
    echo "The Kafka broker did not start (see $state/kafka/kafka): the playground runs without Kafka"
  fi
elif [ -z "${KAFKA_BOOTSTRAP_SERVERS:-}" ]; then
  echo "No Java here: the playground runs without Kafka and a Schema Registry (install OpenJDK 17 for alerts on lag, backfills, replays and registration)"
fi
if [ -n "${registry:-}" ]; then
  if wait "$registry"; then
    eval "$(cat "$state/registry/env")"
    export SCHEMA_REGISTRY_URL
    options+=(--stop-with "$(cat "$state/registry/registry/1/pid")")
    echo "Schema Registry (Apicurio, in memory): $SCHEMA_REGISTRY_URL — approved versions are registered there"
  else
    echo "The Schema Registry did not start (see $state/registry/registry/1/registry.log): the playground runs without one"
  fi
fi
echo "HTTP API token: $CHANGEOPS_API_TOKEN (try: CHANGEOPS_API_TOKEN=$CHANGEOPS_API_TOKEN .venv/bin/bot propose orders-value my.avsc)"
# In the background, so a signal to this script is handled at once (a foreground child would hold it back);
# the terminal stays its input.
.venv/bin/bot playground "${options[@]}" "$@" <&0 &
playground=$!
trap 'kill -TERM "$playground" 2>/dev/null || true' TERM INT HUP
while true; do
  wait "$playground" && status=0 || status=$?
  kill -0 "$playground" 2>/dev/null || break
done
exit "$status"
