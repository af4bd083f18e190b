#!/usr/bin/env bash
# Run every benchmark in bench/ (each prints ratios against a baseline measured in the same run).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
ensure_venv "[test]"
eval "$(scripts/flink.sh install)"  # the Flink runtime bench/flink_gate.py checks with, in its own environment, once
for script in bench/[!_]*.py; do  # bench/_*.py are helpers
  echo "== $script"
  .venv/bin/python "$script"
done
