#!/usr/bin/env bash
# Set up and run the bot locally: .venv, an embedded SQLite database (var/changeops.db), and the bot
# together with the Slack emulator (the playground), with the example catalog loaded. Type /schema help.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
ensure_venv ""
mkdir -p var
export DATABASE_URL=${DATABASE_URL:-sqlite:///var/changeops.db}
export CHANGEOPS_API_TOKEN=${CHANGEOPS_API_TOKEN:-playground-token-0123456789}
.venv/bin/bot migrate
.venv/bin/bot catalog load examples/catalog.yaml
.venv/bin/bot subject import orders-value examples/schemas/orders.avsc
echo "HTTP API token: $CHANGEOPS_API_TOKEN (try: CHANGEOPS_API_TOKEN=$CHANGEOPS_API_TOKEN .venv/bin/bot propose orders-value my.avsc)"
exec .venv/bin/bot playground "$@"
