#!/usr/bin/env bash
# Start or stop Apicurio Registry (a Schema Registry with the Confluent API, in memory) on 127.0.0.1.
#   scripts/registry.sh start RUN_DIR [COUNT]   prints `export SCHEMA_REGISTRY_URL=...` (the first) and
#                                               `export SCHEMA_REGISTRY_URLS='...'` (all COUNT, space-separated)
#   scripts/registry.sh stop RUN_DIR
# The build comes from Maven Central into a cache folder, once. It runs on the newest Java on the machine:
# Apicurio 3.3.3 needs Java 21 or newer, 2.6.13.Final runs on Java 17 (REGISTRY_JAVA=/path/to/java picks one).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
ensure_command curl curl
action=$1 run_dir=$2 count=${3:-1}
run_dir=$(mkdir -p "$run_dir" && cd "$run_dir" && pwd)  # absolute: each registry starts in a folder of its own
cache_root=${CHANGEOPS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/changeops}
registry=$run_dir/registry

# The major version of a java binary (17, 21, 25, ...).
java_major() {
  "$1" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java\.specification\.version = \([0-9]*\).*/\1/p' | head -1
}

# The newest java binary here: JAVA_HOME's, the one on PATH, and those under /usr/lib/jvm.
newest_java() {
  local best="" best_major=0 candidate major
  for candidate in "${JAVA_HOME:-/nonexistent}/bin/java" "$(command -v java || true)" /usr/lib/jvm/*/bin/java; do
    [ -x "$candidate" ] || continue
    major=$(java_major "$candidate")
    [ -n "$major" ] && [ "$major" -gt "$best_major" ] && best=$candidate best_major=$major
  done
  echo "$best $best_major"
}

case $action in
  start)
    command -v java >/dev/null 2>&1 || [ -n "$(ls /usr/lib/jvm/*/bin/java 2>/dev/null)" ] || ensure_command java openjdk-17-jre-headless
    if [ -n "${REGISTRY_JAVA:-}" ]; then  # a chosen java binary instead of the newest
      java=$REGISTRY_JAVA major=$(java_major "$REGISTRY_JAVA")
    else
      read -r java major <<<"$(newest_java)"
    fi
    if [ -z "$java" ] || [ "$major" -lt 17 ]; then
      echo "Apicurio Registry needs Java 17 or newer (21 or newer for 3.x); the newest Java here is ${major:-none}." >&2
      echo "Install one (Debian: apt-get install openjdk-17-jre-headless) or set JAVA_HOME to it." >&2
      exit 3
    fi
    version=3.3.3
    [ "$major" -ge 21 ] || version=2.6.13.Final
    home=$cache_root/apicurio-registry-$version
    if [ ! -f "$home/.complete" ]; then
      ensure_command mvn maven
      echo "fetching Apicurio Registry $version from Maven Central into $home" >&2
      rm -rf "$home" && mkdir -p "$home"
      mvn -q -B dependency:copy -Dartifact="io.apicurio:apicurio-registry-app:$version:tar.gz:all" -DoutputDirectory="$home" >&2
      tar -xzf "$home"/apicurio-registry-app-*.tar.gz -C "$home" && rm -f "$home"/apicurio-registry-app-*.tar.gz
      touch "$home/.complete"
    fi
    jar=$home/quarkus-run.jar  # 3.x; 2.x ships a runner jar
    [ -f "$jar" ] || jar=$(ls "$home"/*-runner.jar)
    started=$(date +%s.%N)
    urls=()
    for n in $(seq 1 "$count"); do
      dir=$registry/$n port=$(free_port) management=$(free_port)
      mkdir -p "$dir"
      # In memory; the management port off the shared default (9000, all interfaces); the same schema written
      # differently keeps its id (as Confluent's registry does); subjects may be deleted (the tests clear them).
      (cd "$dir" && exec nohup "$java" -Xms64m -Xmx512m -XX:TieredStopAtLevel=1 \
        -Dquarkus.http.host=127.0.0.1 -Dquarkus.http.port="$port" \
        -Dquarkus.management.host=127.0.0.1 -Dquarkus.management.port="$management" \
        -Dquarkus.log.level=WARN -Dquarkus.http.access-log.enabled=false \
        -Dapicurio.ccompat.use-canonical-hash=true -Dregistry.ccompat.use-canonical-hash=true \
        -Dapicurio.rest.deletion.group.enabled=true -Dapicurio.rest.deletion.artifact.enabled=true \
        -Dapicurio.rest.deletion.artifact-version.enabled=true \
        -Dregistry.rest.artifact.deletion.enabled=true \
        -jar "$jar" >"$dir/registry.log" 2>&1) &
      echo $! > "$dir/pid"
      urls+=("http://127.0.0.1:$port/apis/ccompat/v7")
    done
    for n in $(seq 1 "$count"); do
      url=${urls[$((n - 1))]} pid=$(cat "$registry/$n/pid")
      for _ in $(seq 1 450); do
        kill -0 "$pid" 2>/dev/null || { echo "Apicurio Registry exited during start-up; see $registry/$n/registry.log" >&2; exit 1; }
        curl -sf -o /dev/null "$url/subjects" && break
        sleep 0.2
      done
      curl -sf -o /dev/null "$url/subjects" || { echo "Apicurio Registry did not answer within 90 s; see $registry/$n/registry.log" >&2; exit 1; }
    done
    echo "Apicurio Registry $version (Java $major) x$count ready in $(python3 -c "import time; print(f'{time.time() - $started:.1f}')") s" >&2
    echo "export SCHEMA_REGISTRY_URL='${urls[0]}'"
    echo "export SCHEMA_REGISTRY_URLS='${urls[*]}'"
    ;;
  stop)
    for pidfile in "$registry"/*/pid; do
      [ -f "$pidfile" ] || continue
      pid=$(cat "$pidfile")
      kill "$pid" 2>/dev/null || true
    done
    for pidfile in "$registry"/*/pid; do
      [ -f "$pidfile" ] || continue
      pid=$(cat "$pidfile")
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
      kill -9 "$pid" 2>/dev/null || true
    done
    ;;
  *) echo "usage: $0 start RUN_DIR [COUNT] | stop RUN_DIR" >&2; exit 2 ;;
esac
