# memlane — the two commands of the README quickstart, and friends.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test install dev-install lint typecheck bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Bytecode is compiled up front: hooks start on every prompt, and with
# PYTHONDONTWRITEBYTECODE set Python would otherwise recompile memlane each time.
install: $(BIN)/python
	$(BIN)/pip install --quiet -e .
	$(BIN)/python -m compileall -q src/memlane

dev-install: $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev,postgres]'
	$(BIN)/python -m compileall -q src/memlane

## make demo: install memlane in a venv and run the guided demo on the embedded default
demo: install
	$(BIN)/memlane demo

## make test: install everything the tests need (incl. PostgreSQL and Chromium) and run them all
test: dev-install
	bash scripts/test.sh

lint:
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

typecheck:
	$(BIN)/mypy --strict src/memlane

## make bench [BENCH_ARGS="--workdir DIR --vectors DIR"]: every benchmark, into BENCHMARKS.md
## (PostgreSQL only with MEMLANE_TEST_PG_DSN set and `make dev-install` done)
bench: install
	$(BIN)/python benchmarks/run_all.py --markdown BENCHMARKS.md $(BENCH_ARGS)

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache
