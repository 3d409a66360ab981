#!/usr/bin/env bash
# Start the local Neo4j and PostgreSQL servers (installing them first if needed).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
exec .venv/bin/dibench services up
