#!/usr/bin/env bash
# The README's test command: install what is missing, start the services, run the tests,
# and stop the services even when tests fail.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh || exit 1
started_here=0
if ! .venv/bin/dibench services status | grep -q "neo4j .*up" ; then started_here=1; fi
.venv/bin/dibench services up || exit 1
cleanup() { if [ "$started_here" = 1 ] || [ "${CI:-}" = "true" ]; then .venv/bin/dibench services down; fi; }
trap cleanup EXIT
.venv/bin/python scripts/typecheck.py || { echo "mypy failed"; exit 1; }
# two test processes (DIBENCH_TEST_WORKERS; 0 runs them in this one), each test file whole in one of
# them; every process after the first starts servers of its own (tests/conftest.py)
.venv/bin/pytest -q -n "${DIBENCH_TEST_WORKERS:-2}" --dist loadfile "$@"
