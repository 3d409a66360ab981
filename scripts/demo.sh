#!/usr/bin/env bash
# The README's main command: install, start the services and run the demo domain end to end.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
.venv/bin/dibench services up
exec .venv/bin/dibench demo "$@"
