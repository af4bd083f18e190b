#!/usr/bin/env bash
# Install a Flink runtime for the release gate (`bot gate job`) and the Flink operations: PyFlink in a virtualenv of its
# own (it pins numpy, pyarrow and Apache Beam versions the bot does not share), the Kafka connector and Avro format jars
# and the State Processor API from Maven Central, in a cache folder, once per version.
#   scripts/flink.sh install [VERSION] [--connector NAME]...   prints `export CHANGEOPS_FLINK_ROOT=...` (the folder that
#       holds the runtimes). The release gate checks a table whose connector the runtime lacks with a type-only stand-in;
#       --connector adds the official connector's jars from Maven Central so its options are checked too: a name below
#       (jdbc) or GROUP:ARTIFACT:VERSION (Doris, Iceberg, a CDC connector: the jar its project publishes for Flink VERSION).
#   scripts/flink.sh versions            the versions this script installs
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
root=${CHANGEOPS_FLINK_ROOT:-${CHANGEOPS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/changeops}/flink}
# Flink version -> the Kafka connector release built for it
declare -A connector=([2.3.0]=5.0.0-2.2)
# Flink version -> the JDBC connector release built for it: its core, then the dialects (those Maven Central serves)
declare -A jdbc=([2.3.0]=4.0.0-2.0)
jdbc_dialects="postgres mysql oracle sqlserver db2"

# install_connector HOME VERSION NAME: the official jars of connector NAME into HOME/connectors/NAME
install_connector() {
  local home=$1 version=$2 name=$3 dir artifact
  case $name in
    jdbc)
      dir=$home/connectors/jdbc
      [ -f "$dir/.complete" ] && return 0
      rm -rf "$dir"; mkdir -p "$dir"
      mvn -q -B dependency:copy -Dartifact="org.apache.flink:flink-connector-jdbc-core:${jdbc[$version]}" -DoutputDirectory="$dir" >&2
      for dialect in $jdbc_dialects; do
        artifact=org.apache.flink:flink-connector-jdbc-$dialect:${jdbc[$version]}
        mvn -q -B dependency:copy -Dartifact="$artifact" -DoutputDirectory="$dir" > /dev/null 2>&1 \
          || echo "the JDBC dialect '$dialect' could not be fetched from Maven Central for Flink $version ($artifact): not installed" >&2
      done
      ;;
    *:*:*)
      dir=$home/connectors/$(echo "$name" | cut -d: -f2)
      [ -f "$dir/.complete" ] && return 0
      rm -rf "$dir"; mkdir -p "$dir"
      mvn -q -B dependency:copy -Dartifact="$name" -DoutputDirectory="$dir" >&2 \
        || { rm -rf "$dir"; echo "could not fetch $name from Maven Central" >&2; return 1; }
      ;;
    *)
      echo "unknown connector '$name': name one of jdbc, or its jar as GROUP:ARTIFACT:VERSION" >&2
      return 2
      ;;
  esac
  touch "$dir/.complete"
  echo "connector $name installed into $dir: the release gate now checks its options" >&2
}

case ${1:-} in
  versions)
    printf '%s\n' "${!connector[@]}"
    ;;
  install)
    shift
    version=2.3.0; connectors=()
    while [ $# -gt 0 ]; do
      case $1 in
        --connector) [ -n "${2:-}" ] || { echo "--connector needs a NAME" >&2; exit 2; }; connectors+=("$2"); shift 2 ;;
        --connector=*) connectors+=("${1#--connector=}"); shift ;;
        -*) echo "unknown option $1 (usage: scripts/flink.sh install [VERSION] [--connector NAME]...)" >&2; exit 2 ;;
        *) version=$1; shift ;;
      esac
    done
    [ -n "${connector[$version]:-}" ] || { echo "Flink $version is not supported (supported: ${!connector[*]})" >&2; exit 2; }
    home=$root/flink-$version
    if [ ! -f "$home/.complete" ]; then
      ensure_command java openjdk-17-jre-headless
      ensure_command mvn maven
      echo "installing PyFlink $version and its jars into $home" >&2
      rm -rf "$home"
      mkdir -p "$home"
      python3 -m venv "$home/venv" >&2 || { ensure_command false python3-venv; python3 -m venv "$home/venv" >&2; }
      "$home/venv/bin/python" -m pip install -q --disable-pip-version-check "apache-flink==$version" >&2
      mvn -q -B -f scripts/flink/pom.xml dependency:copy-dependencies -DexcludeTransitive=true -DoutputDirectory="$home/jars" \
        -Dflink.version="$version" -Dkafka.connector.version="${connector[$version]}" >&2
      touch "$home/.complete"
    fi
    # The State Processor API and the small program that copies a savepoint without some operators' state (backfills)
    stamp=$(cat scripts/flink/RemoveOperators.java scripts/flink/TypeOnlyConnector.java | sha256sum | cut -c1-16)
    if [ ! -f "$home/tools/.complete-$stamp" ]; then
      ensure_command javac openjdk-17-jdk-headless
      rm -rf "$home/tools"
      mkdir -p "$home/tools/classes"
      mvn -q -B dependency:copy -Dartifact="org.apache.flink:flink-state-processor-api:$version" -DoutputDirectory="$home/tools" >&2
      pyflink=$("$home/venv/bin/python" -c 'import os, pyflink; print(os.path.dirname(pyflink.__file__))')
      javac -nowarn -cp "$pyflink/lib/*:$home/tools/*" -d "$home/tools/classes" scripts/flink/RemoveOperators.java >&2
      # The release gate's type-only stand-in for connectors the runtime lacks, a table factory in a jar of its own
      rm -rf "$home/gate" && mkdir -p "$home/gate/classes/META-INF/services"
      javac -nowarn -cp "$pyflink/lib/*" -d "$home/gate/classes" scripts/flink/TypeOnlyConnector.java >&2
      echo changeops.flink.TypeOnlyConnector > "$home/gate/classes/META-INF/services/org.apache.flink.table.factories.Factory"
      jar cf "$home/gate/changeops-type-only.jar" -C "$home/gate/classes" . && rm -rf "$home/gate/classes"
      awk '/^ *all:/ {sub(/^ *all: */, ""); print; exit}' "$pyflink/conf/config.yaml" > "$home/tools/java-opts"  # Flink's own JVM options
      echo "$pyflink/lib" > "$home/tools/flink-lib"
      touch "$home/tools/.complete-$stamp"
    fi
    for name in "${connectors[@]}"; do install_connector "$home" "$version" "$name" || exit $?; done
    echo "export CHANGEOPS_FLINK_ROOT=$root"
    ;;
  cluster)
    # A standalone Flink cluster on 127.0.0.1 from the installed runtime's own scripts (start-cluster.sh), with its
    # configuration, logs, pid files, checkpoints and savepoints in DIR, on free ports.
    #   scripts/flink.sh cluster start DIR [VERSION]   prints `export FLINK_REST_URL=... FLINK_SAVEPOINT_DIR=...`
    #   scripts/flink.sh cluster stop DIR
    action=${2:-}; dir=${3:-}
    [ -n "$dir" ] || { echo "usage: scripts/flink.sh cluster start|stop DIR [VERSION]" >&2; exit 2; }
    dir=$(mkdir -p "$dir/flink" && cd "$dir/flink" && pwd)
    if [ "$action" = stop ]; then
      [ -f "$dir/home" ] || exit 0
      FLINK_CONF_DIR=$dir/conf "$(cat "$dir/home")/bin/stop-cluster.sh" > "$dir/stop.log" 2>&1 || true
      for pid in $(cat "$dir"/*.pid 2>/dev/null); do kill "$pid" 2>/dev/null || true; done
      exit 0
    fi
    [ "$action" = start ] || { echo "usage: scripts/flink.sh cluster start|stop DIR [VERSION]" >&2; exit 2; }
    version=${4:-2.3.0}
    ensure_command curl curl
    eval "$("$0" install "$version")"
    home=$("$CHANGEOPS_FLINK_ROOT/flink-$version/venv/bin/python" -c 'import os, pyflink; print(os.path.dirname(pyflink.__file__))')
    echo "$home" > "$dir/home"
    mkdir -p "$dir/conf" "$dir/log" "$dir/savepoints" "$dir/checkpoints"
    cp "$home/conf/"log4j*.properties "$dir/conf/" 2>/dev/null || true
    [ -f "$dir/conf/log4j.properties" ] || cat > "$dir/conf/log4j.properties" <<'LOG'
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = MainAppender
appender.main.name = MainAppender
appender.main.type = File
appender.main.fileName = ${sys:log.file}
appender.main.layout.type = PatternLayout
appender.main.layout.pattern = %d{yyyy-MM-dd HH:mm:ss,SSS} %-5p %-60c %x - %m%n
LOG
    rest=$(free_port)
    opts=$(awk '/^ *all:/ {sub(/^ *all: */, ""); print; exit}' "$home/conf/config.yaml")
    cat > "$dir/conf/config.yaml" <<CONF
env.java.opts.all: $opts
env.log.dir: $dir/log
env.pid.dir: $dir
jobmanager.bind-host: 127.0.0.1
jobmanager.rpc.address: 127.0.0.1
jobmanager.rpc.port: $(free_port)
jobmanager.memory.process.size: 1024m
taskmanager.bind-host: 127.0.0.1
taskmanager.host: 127.0.0.1
taskmanager.rpc.port: $(free_port)
taskmanager.data.port: $(free_port)
taskmanager.numberOfTaskSlots: 16
taskmanager.memory.process.size: 2048m
blob.server.port: $(free_port)
rest.address: 127.0.0.1
rest.bind-address: 127.0.0.1
rest.port: $rest
parallelism.default: 1
state.savepoints.dir: file://$dir/savepoints
execution.checkpointing.dir: file://$dir/checkpoints
metrics.fetcher.update-interval: 2000
CONF
    echo "localhost:$rest" > "$dir/conf/masters"
    echo "localhost" > "$dir/conf/workers"
    started=$SECONDS
    FLINK_CONF_DIR=$dir/conf "$home/bin/start-cluster.sh" > "$dir/start.log" 2>&1 \
      || { cat "$dir/start.log" >&2; echo "Flink did not start (see $dir/log)" >&2; exit 1; }
    for _ in $(seq 1 240); do  # ready when a task manager has registered its slots
      if curl -fsS "http://127.0.0.1:$rest/overview" 2>/dev/null | grep -q '"slots-total":[1-9]'; then
        echo "Flink $version ready on 127.0.0.1:$rest in $((SECONDS - started)) s" >&2
        echo "export FLINK_REST_URL=http://127.0.0.1:$rest FLINK_SAVEPOINT_DIR=$dir/savepoints"
        exit 0
      fi
      sleep 0.5
    done
    tail -20 "$dir"/log/*.log >&2 || true
    echo "Flink did not become ready (see $dir/log)" >&2
    exit 1
    ;;
  *)
    echo "usage: scripts/flink.sh install [VERSION] [--connector NAME]... | versions | cluster start|stop DIR [VERSION]" >&2
    exit 2
    ;;
esac
