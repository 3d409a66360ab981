#!/usr/bin/env bash
# Stop the local Neo4j and PostgreSQL servers.
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/dibench services down
