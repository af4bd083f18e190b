#!/usr/bin/env bash
# Install a Flink runtime for the release gate (`bot gate job`): PyFlink in a virtualenv of its own (it pins numpy,
# pyarrow and Apache Beam versions the bot does not share) and the Kafka connector and Avro format jars from Maven
# Central, in a cache folder, once per version.
#   scripts/flink.sh install [VERSION]   prints `export CHANGEOPS_FLINK_ROOT=...` (the folder that holds the runtimes)
#   scripts/flink.sh versions            the versions this script installs
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
root=${CHANGEOPS_FLINK_ROOT:-${CHANGEOPS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/changeops}/flink}
# Flink version -> the Kafka connector release built for it
declare -A connector=([2.3.0]=5.0.0-2.2)

case ${1:-} in
  versions)
    printf '%s\n' "${!connector[@]}"
    ;;
  install)
    version=${2:-2.3.0}
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
    echo "export CHANGEOPS_FLINK_ROOT=$root"
    ;;
  *)
    echo "usage: scripts/flink.sh install [VERSION] | versions" >&2
    exit 2
    ;;
esac
