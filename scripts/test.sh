#!/usr/bin/env bash
# Run the whole test suite with every real dependency it needs: a PostgreSQL server
# (pgvector) on 127.0.0.1 and Debian's Chromium for the dashboard tests. Then check that
# the run left no process behind (scripts/leftovers.py).
#
# Exit status: pytest's when pytest fails; otherwise 1 when stopping PostgreSQL failed or
# a process of the run outlived it, else 0. Arguments go to pytest.
#
#   MEMLANE_TEST_PG_DSN=postgresql://...   use that server; start none
#   MEMLANE_TEST_NO_CHROMIUM=1             do not install Chromium (browser tests skip,
#                                          or fail under CI=true)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${VENV:-.venv}/bin

# Every process started from here on inherits the marker; the leftover check finds them by it.
MEMLANE_TEST_RUN="$(date +%Y%m%d%H%M%S)-$$-$RANDOM"
export MEMLANE_TEST_RUN

if [ -z "${MEMLANE_TEST_NO_CHROMIUM:-}" ]; then
  if ! bash scripts/install_chromium.sh; then
    echo "test.sh: Chromium is not installed; the browser tests will skip (fail under CI=true)" >&2
  fi
fi

PG_DIR=""
stop_pg() {
  local dir=$PG_DIR
  PG_DIR=""
  [ -n "$dir" ] || return 0
  "$BIN/python" scripts/pg_server.py stop --dir "$dir" --remove
}
trap 'stop_pg || true' EXIT  # interrupted runs; a normal run stops the server below
if [ -z "${MEMLANE_TEST_PG_DSN:-}" ]; then
  PG_DIR=$(mktemp -d /tmp/memlane-pg.XXXXXX)
  MEMLANE_TEST_PG_DSN=$("$BIN/python" scripts/pg_server.py start --dir "$PG_DIR" | tail -n 1)
  export MEMLANE_TEST_PG_DSN
fi

status=0
"$BIN/python" -m pytest -n 2 -q --durations=10 "$@" || status=$?

cleanup=0
if ! stop_pg; then
  echo "test.sh: stopping PostgreSQL failed (see above)" >&2
  cleanup=1
fi
"$BIN/python" scripts/leftovers.py --marker "$MEMLANE_TEST_RUN" || cleanup=1

if [ "$status" -eq 0 ] && [ "$cleanup" -ne 0 ]; then
  echo "test.sh: the tests passed but the run did not clean up after itself" >&2
  status=1
fi
exit "$status"
