#!/usr/bin/env bash
# Start or stop a single-node Apache Kafka broker (KRaft, broker+controller) on 127.0.0.1.
#   scripts/kafka.sh start RUN_DIR   prints `export KAFKA_BOOTSTRAP_SERVERS=...`
#   scripts/kafka.sh stop RUN_DIR
#   scripts/kafka.sh restart RUN_DIR  stops it and starts it again on its storage and port
# The broker's jars come from Maven Central (scripts/kafka/pom.xml) into a cache folder, once.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
action=$1 run_dir=$2
version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' scripts/kafka/pom.xml)
cache=${CHANGEOPS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/changeops}/kafka-$version
kafka=$run_dir/kafka

launch() {  # start the broker of $kafka on $port and wait until it serves groups
  nohup java -Xms256m -Xmx768m -Dlog4j2.configurationFile="$kafka/log4j2.properties" \
    -cp "$cache/libs/*" kafka.Kafka "$kafka/server.properties" >"$kafka/stdout.log" 2>&1 &
  echo $! > "$kafka/pid"
  .venv/bin/python - "127.0.0.1:$port" "$(cat "$kafka/pid")" <<'PY' >&2
import os, sys, time
from confluent_kafka.admin import AdminClient
bootstrap, pid = sys.argv[1], int(sys.argv[2])
deadline = time.monotonic() + 90
while time.monotonic() < deadline:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        sys.exit("the Kafka broker exited during start-up; see its logs in the run folder")
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
        if admin.list_topics(timeout=1).brokers:
            # Groups work too: asking for a group creates the offsets topic; while its coordinators load, offset
            # commits come back refused (NOT_COORDINATOR) and the listing errs, so wait until the listing is clean.
            admin.describe_consumer_groups(["changeops-ready-probe"], request_timeout=5)["changeops-ready-probe"].result(timeout=10)
            if not admin.list_consumer_groups(request_timeout=5).result(timeout=10).errors:
                sys.exit(0)
    except Exception:
        pass
    time.sleep(0.2)
sys.exit("the Kafka broker did not answer within 90 s")
PY
  echo "Kafka $version ready on 127.0.0.1:$port in $(python3 -c "import time; print(f'{time.time() - $started:.1f}')") s" >&2
  echo "export KAFKA_BOOTSTRAP_SERVERS='127.0.0.1:$port'"
}

halt() {
  if [ -f "$kafka/pid" ]; then
    pid=$(cat "$kafka/pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$pid" 2>/dev/null || true
  fi
}

case $action in
  start)
    ensure_command java openjdk-17-jre-headless
    if [ ! -f "$cache/.complete" ]; then
      ensure_command mvn maven
      echo "fetching Apache Kafka $version from Maven Central into $cache" >&2
      rm -rf "$cache"
      mvn -q -B -f scripts/kafka/pom.xml dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$cache/libs" >&2
      touch "$cache/.complete"
    fi
    started=$(date +%s.%N)
    port=$(free_port) controller=$(free_port)
    mkdir -p "$kafka"
    cat > "$kafka/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$controller
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$controller
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$kafka/data
num.partitions=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=10
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=4
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
log.retention.check.interval.ms=2000
auto.create.topics.enable=true
PROPS
    cat > "$kafka/log4j2.properties" <<PROPS
rootLogger.level=WARN
rootLogger.appenderRef.file.ref=file
appender.file.type=File
appender.file.name=file
appender.file.fileName=$kafka/broker.log
appender.file.layout.type=PatternLayout
appender.file.layout.pattern=[%d] %p %m (%c)%n
PROPS
    # a random cluster id as Kafka makes them: never starting with "-", which the storage tool would take for an option
    cluster_id=$(python3 -c 'import base64, uuid
while (text := base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")).startswith("-"): pass
print(text)')
    if ! java -cp "$cache/libs/*" kafka.tools.StorageTool format -t "$cluster_id" -c "$kafka/server.properties" >"$kafka/format.log" 2>&1; then
      echo "formatting the broker's storage failed: see $kafka/format.log" >&2
      exit 1
    fi
    launch
    ;;
  stop) halt ;;
  restart)  # the same broker again, on its storage and ports: as after a crash or an upgrade
    [ -f "$kafka/server.properties" ] || { echo "no broker in $run_dir to restart" >&2; exit 1; }
    halt
    started=$(date +%s.%N)
    port=$(sed -n 's/^listeners=PLAINTEXT:\/\/127.0.0.1:\([0-9]*\),.*/\1/p' "$kafka/server.properties")
    launch
    ;;
  *) echo "usage: $0 start|stop|restart RUN_DIR" >&2; exit 2 ;;
esac
