#!/usr/bin/env bash
# Install everything dibench needs on a fresh Debian machine, idempotently:
#   PostgreSQL (Debian packages), JDK 17 + Maven (Debian packages), Neo4j 5.26 jars (Maven Central),
#   bubblewrap, chromium + chromium-driver (Debian packages), a Python virtual environment with dibench and its dependencies (PyPI).
# Nothing is downloaded at run time after this.
set -euo pipefail
cd "$(dirname "$0")/.."
STATE="${DIBENCH_STATE_DIR:-$PWD/.dibench}"
VENV="${DIBENCH_VENV:-$PWD/.venv}"
log() { printf '\033[1m[install]\033[0m %s\n' "$*"; }

need_pkgs=()
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need_pkgs+=(postgresql postgresql-contrib)
[ -x /usr/lib/jvm/java-17-openjdk-amd64/bin/java ] || need_pkgs+=(openjdk-17-jre-headless)
command -v mvn >/dev/null 2>&1 || need_pkgs+=(maven)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need_pkgs+=(python3-venv)
# bubblewrap gives every command-agent attempt a sandbox of its own (evaluation/sandbox.py).
command -v bwrap >/dev/null 2>&1 || need_pkgs+=(bubblewrap)
# Headless Chromium renders the HTML report in its test.
[ -x /usr/bin/chromium ] || need_pkgs+=(chromium)
# Its WebDriver drives the review app in the browser tests (tests/test_review_browser.py).
[ -x /usr/bin/chromedriver ] || need_pkgs+=(chromium-driver)
if [ ${#need_pkgs[@]} -gt 0 ]; then
  log "apt-get install ${need_pkgs[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
fi
# The Debian package starts a default cluster on 5432; dibench runs its own cluster, so stop that one.
if command -v pg_lsclusters >/dev/null 2>&1 && pg_lsclusters -h 2>/dev/null | grep -q online; then
  pg_lsclusters -h | awk '$4=="online"{print $1, $2}' | while read -r v c; do pg_ctlcluster "$v" "$c" stop || true; done
fi

LIB="$STATE/neo4j/lib"
if ! ls "$LIB"/neo4j-server-5.26.*.jar >/dev/null 2>&1; then
  log "Neo4j 5.26 Community jars from Maven Central -> $LIB"
  (umask 077 && mkdir -p "$LIB")  # the state folder is owner-only from the start
  mvn -q -B -f scripts/neo4j/pom.xml dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$LIB"
fi

if [ ! -x "$VENV/bin/python" ]; then
  log "python virtual environment -> $VENV"
  python3 -m venv "$VENV"
fi
stamp="$VENV/.dibench-installed"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  log "pip install -e .[dev]"
  "$VENV/bin/pip" install -q --upgrade pip >/dev/null
  # setuptools says "Editable installation." on every editable install, as a warning: a notice.
  PYTHONWARNINGS="ignore:Editable installation" "$VENV/bin/pip" install -q -e ".[dev]"
  touch "$stamp"
fi
# MetricFlow, the independent judge of rule-free gold, in an environment of its own
# (scripts/metricflow-requirements.txt says why): tests/test_metricflow_agreement.py runs it.
MFVENV="$STATE/metricflow-venv"
if [ ! -f "$MFVENV/.dibench-installed" ] || [ scripts/metricflow-requirements.txt -nt "$MFVENV/.dibench-installed" ]; then
  log "MetricFlow environment -> $MFVENV"
  (umask 077 && mkdir -p "$STATE")
  python3 -m venv "$MFVENV"
  "$MFVENV/bin/pip" install -q -r scripts/metricflow-requirements.txt
  touch "$MFVENV/.dibench-installed"
fi
# The install's own secrets (made on first use), and the `.env` docker-compose.yml reads them from.
if [ ! -f .env ]; then
  log "secrets -> $STATE/secrets, .env (owner-only)"
  (umask 077 && "$VENV/bin/dibench" services credentials --compose-env > .env)
fi
log "done"
