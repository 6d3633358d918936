#!/usr/bin/env bash
# Run the whole test suite with every real dependency it needs: a PostgreSQL
# server (pgvector) on 127.0.0.1 and Debian's Chromium for the dashboard tests.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${VENV:-.venv}/bin

if [ -x scripts/install_chromium.sh ]; then
  bash scripts/install_chromium.sh
fi

PG_DIR=""
cleanup() {
  if [ -n "$PG_DIR" ]; then "$BIN/python" scripts/pg_server.py stop --dir "$PG_DIR" >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT
if [ -f scripts/pg_server.py ] && [ -z "${MEMLANE_TEST_PG_DSN:-}" ]; then
  PG_DIR=$(mktemp -d /tmp/memlane-pg.XXXXXX)
  export MEMLANE_TEST_PG_DSN=$("$BIN/python" scripts/pg_server.py start --dir "$PG_DIR" | tail -n 1)
fi

"$BIN/python" -m pytest -n 2 -q "$@"
