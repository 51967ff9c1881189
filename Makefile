# Every target sets up .venv first; nothing depends on what was installed by hand.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
VENV_SDK3 := .venv-sdk3
STAMP_SDK3 := $(VENV_SDK3)/.installed
# Bytecode caches (gitignored) spare each xdist worker and every process a test starts compiling the
# project and rewriting the tests' asserts again.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup setup-sdk3 test test-suite test-sdk3 test-fast demo bench bench-trainer bench-scheduler bench-simulate bench-estimates bench-placement bench-warm-pools bench-pass-cost bench-cold-import bench-kueue lint clean

# --no-compile: Python compiles the modules a process imports on first use (bytecode caches on, see
# above), which is a fraction of the CPU of compiling every installed file up front.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	$(PY) -m pip install --no-compile -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

# SageMaker SDK v3 client tests need their own environment: the two SDK majors cannot share one.
# Its editable install keeps its egg-info inside .venv-sdk3 (setuptools reads DIST_EXTRA_CONFIG),
# away from the one .venv's writes in the tree, so the two environments can install side by side.
$(STAMP_SDK3): pyproject.toml
	$(PYTHON) -m venv $(VENV_SDK3)
	printf '[egg_info]\negg_base = $(VENV_SDK3)\n' > $(VENV_SDK3)/egg-info.cfg
	$(VENV_SDK3)/bin/python -m pip install --upgrade pip
	DIST_EXTRA_CONFIG=$(VENV_SDK3)/egg-info.cfg $(VENV_SDK3)/bin/python -m pip install --no-compile \
		-e '.[local,sdk3]' 'pytest>=8' 'pytest-timeout>=2.3' 'hypothesis>=6.100'
	touch $(STAMP_SDK3)

setup-sdk3: $(STAMP_SDK3)

# Four workers on two cores (the end-to-end tests spend much of their time waiting on processes and
# clocks), one test file each at a time (module-scoped local stacks stay in one process), in the
# order tests/conftest.py gives (files with slow tests first), not xdist's most-tests-first.
PYTEST := $(PY) -m pytest -n 4 --dist loadfile --no-loadscope-reorder

# Everything side by side, each target's output shown whole when it ends: the two environments
# install together, then lint and the SDK v3 tests run beside the suite, filling the time its
# workers wait on processes and clocks. Any failure fails `make test`.
test:
	$(MAKE) -j3 --output-sync=target lint test-sdk3 test-suite

test-suite: setup
	$(PYTEST)

test-sdk3: setup-sdk3
	$(VENV_SDK3)/bin/python -m pytest tests/client_sdk3

# The quick subset: three workers on two cores (its local SageMaker tests wait on clocks), each
# stealing tests from the others when it runs out, so they finish together (no module-scoped local
# stacks here, which `make test` keeps in one worker with --dist loadfile).
test-fast: setup
	HYPOTHESIS_PROFILE=fast $(PY) -m pytest -n 3 --dist worksteal -m "not slow"

lint: setup
	$(VENV)/bin/cfn-lint template.yaml
	$(VENV)/bin/ruff check functions client tests bench trainer
	$(VENV)/bin/ruff format --check functions client tests bench trainer
	$(VENV)/bin/mypy

demo: setup
	$(VENV)/bin/smq local demo

BENCH_JSON := .bench
BENCH_TARGETS := bench-scheduler bench-simulate bench-estimates bench-placement bench-warm-pools bench-trainer bench-pass-cost bench-cold-import bench-kueue

bench: $(BENCH_TARGETS)

bench-scheduler: setup
	$(PY) bench/bench_scheduler.py

bench-simulate: setup
	$(PY) bench/bench_simulate.py --json $(BENCH_JSON)/simulate.json

bench-estimates: setup
	$(PY) bench/bench_estimates.py --json $(BENCH_JSON)/estimates.json

bench-placement: setup
	$(PY) bench/bench_placement.py --json $(BENCH_JSON)/placement.json

bench-warm-pools: setup
	$(PY) bench/bench_warm_pools.py --json $(BENCH_JSON)/warm_pools.json

bench-trainer: setup
	$(PY) bench/bench_trainer.py

bench-pass-cost: setup
	$(PY) bench/bench_pass_cost.py --json $(BENCH_JSON)/pass_cost.json
	$(PY) bench/bench_fleet_pass.py --json $(BENCH_JSON)/fleet_pass.json

bench-cold-import: setup
	$(PY) bench/bench_cold_import.py --json $(BENCH_JSON)/cold_import.json

bench-kueue: setup
	$(PY) bench/bench_kueue_load.py --json $(BENCH_JSON)/kueue_load.json

clean:
	rm -rf $(VENV) $(VENV_SDK3) .pytest_cache .hypothesis .smq-local .bench
