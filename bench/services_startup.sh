#!/usr/bin/env bash
# Measures, on this machine: time from nothing to both servers answering (Maven and PyPI downloads
# included, into scratch caches), restart time, and the resident memory of both servers at idle.
# Uses its own state folder and ports so it never touches a running dibench.
set -euo pipefail
cd "$(dirname "$0")/.."
SCRATCH="$(mktemp -d /var/tmp/dibench-startup.XXXX)"
export DIBENCH_STATE_DIR="$SCRATCH/state" DIBENCH_NEO4J_BOLT_PORT=17687 DIBENCH_NEO4J_URI=bolt://127.0.0.1:17687 \
       DIBENCH_PG_PORT=15432 DIBENCH_DATABASE_URL=postgresql+psycopg://dibench@127.0.0.1:15432/dibench
t0=$(date +%s.%N)
python3 -m venv "$SCRATCH/venv"
"$SCRATCH/venv/bin/pip" install -q --no-cache-dir -e ".[dev]" >/dev/null
t1=$(date +%s.%N)
mvn -q -B -Dmaven.repo.local="$SCRATCH/m2" -f scripts/neo4j/pom.xml dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$DIBENCH_STATE_DIR/neo4j/lib"
t2=$(date +%s.%N)
"$SCRATCH/venv/bin/dibench" services up >/dev/null
t3=$(date +%s.%N)
sleep 20
rss() { ps -o rss= -p "$1" | awk '{printf "%.0f", $1/1024}'; }
neo_pid=$(cat "$DIBENCH_STATE_DIR/neo4j/neo4j.pid")
pg_pid=$(head -1 "$DIBENCH_STATE_DIR/postgres/data/postmaster.pid")
pg_rss=$(ps -o rss= --ppid "$pg_pid" | awk '{s+=$1} END {printf "%.0f", s/1024}')
neo_mem=$(rss "$neo_pid"); pg_mem=$(( $(rss "$pg_pid") + pg_rss ))
"$SCRATCH/venv/bin/dibench" services down >/dev/null
t4=$(date +%s.%N)
"$SCRATCH/venv/bin/dibench" services up >/dev/null
t5=$(date +%s.%N)
"$SCRATCH/venv/bin/dibench" services down >/dev/null
printf 'python deps (PyPI, no cache)   %6.1f s\n' "$(echo "$t1 - $t0" | bc)"
printf 'neo4j jars (Maven Central)     %6.1f s\n' "$(echo "$t2 - $t1" | bc)"
printf 'first start (initdb + both up) %6.1f s\n' "$(echo "$t3 - $t2" | bc)"
printf 'fresh total to both answering  %6.1f s\n' "$(echo "$t3 - $t0" | bc)"
printf 'restart (down->up answering)   %6.1f s\n' "$(echo "$t5 - $t4" | bc)"
printf 'idle RSS: neo4j %s MiB, postgres (all backends) %s MiB\n' "$neo_mem" "$pg_mem"
rm -rf "$SCRATCH"
