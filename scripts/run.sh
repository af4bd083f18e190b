#!/usr/bin/env bash
# Set up and run the bot locally: .venv, an embedded SQLite database (var/changeops.db), and the bot
# together with the Slack emulator (the playground). Type /schema help at the prompt.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
ensure_venv ""
mkdir -p var
export DATABASE_URL=${DATABASE_URL:-sqlite:///var/changeops.db}
.venv/bin/bot migrate
exec .venv/bin/bot playground "$@"
