# Two entry points: `make demo` (the main job) and `make test` (the whole suite).
# Each creates the virtual environment it needs on first use.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# pytest processes for `make test`: one per core of the two-core CI machine; files stay whole.
# The thread tests then run alone: they watch every thread of their process and its CPU share,
# and a worker's own I/O thread, or the other worker's load, is not theirs to see.
TEST_WORKERS ?= 2

.PHONY: demo test test-quick lint bench heat-env clean

$(STAMP): pyproject.toml setup.py shoal/numpy/_held_slots.c shoal/_slot_makers.c shoal/_slot_offset.h shoal/engine/node/schedule/_repeat_walk.c shoal/engine/node/run/_tile_loops.c
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m shoal.demo

test: $(STAMP)
	$(PY) -m ruff check shoal tests benchmarks examples
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --ignore=tests/threads
	$(PY) -m pytest tests/threads

test-quick: $(STAMP)
	$(PY) -m pytest -m "not full"

lint: $(STAMP)
	$(PY) -m ruff check shoal tests benchmarks examples

bench: $(STAMP)
	$(PY) -m shoal.bench

# Heat (and PyTorch) for benchmarks/cluster_network.py, in an environment of their own
heat-env:
	sh benchmarks/heat_env.sh

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
