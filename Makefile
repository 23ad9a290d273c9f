# The two commands: `make run` and `make test`. Both create .venv and install first.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8501
export LITELLM_LOCAL_MODEL_COST_MAP := True

.PHONY: run test fuzz bench install install-dev bytecode clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.runtime: requirements.txt pyproject.toml setup.py | $(BIN)/python
	$(BIN)/pip install --disable-pip-version-check -q -r requirements.txt
	$(BIN)/pip install --disable-pip-version-check -q --no-deps -e .
	touch $@

$(VENV)/.dev: requirements-dev.txt $(VENV)/.runtime
	$(BIN)/pip install --disable-pip-version-check -q -r requirements-dev.txt
	touch $@

install: $(VENV)/.runtime bytecode
install-dev: $(VENV)/.dev bytecode

# The project's own modules compiled as a wheel install would compile them: the editable install
# leaves none, and where PYTHONDONTWRITEBYTECODE is set every start recompiled them all (~0.3 s of
# CPU for the app and `stats`). Up-to-date files are skipped, so this costs nothing on a rerun.
bytecode: $(VENV)/.runtime
	$(BIN)/python -m compileall -q replay_core pages ui streamlit_app.py >/dev/null

run: install
	$(BIN)/agent-replay serve --demo --host $(HOST) --port $(PORT)

# The suite in three workers (pytest-xdist) on this 2-core machine: it is CPU-bound (Chromium, served apps and
# PostgreSQL beside the workers keep both cores busy), so a fourth worker only added contention: 540.7 s at -n 3
# against 581.6 s at -n 4 for the same tree, quiet (the tree before: 698 s at -n 6). Each worker has its own databases,
# Chromium and served apps, with their PostgreSQL connections (100 by default, for all of them). pytest keeps its
# rewritten test modules as bytecode, also where PYTHONDONTWRITEBYTECODE is set: a worker's collection
# then takes a third less time after the first run.
PYTEST := PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest
XDIST := -n 3 --dist worksteal

# polars in one thread in the tests and the apps they start: its pool (a thread per core) woke for each of the many
# small queries of the analytics tests, 14 % of their CPU, on cores the workers keep busy anyway (bench/RESULTS.md).
# Results do not depend on it: the product sorts what it groups.
test test-fast fuzz: export POLARS_MAX_THREADS := 1

test: install-dev
	bash scripts/test-services.sh
	$(PYTEST) $(XDIST)

# The inner loop: the tests tests/conftest.py does not mark slow. SQLite only, no browser, nothing
# served (not even in a thread) or started beside pytest, no load or fuzz test: neither PostgreSQL nor
# Chromium is needed. Three workers on this 2-core machine: two left a fifth of the cores idle (235.8 CPU-s
# in 151.8 s: tests waiting on their threads, write workers and timers), which a third fills (130.9 s, quiet,
# same tree), for 4 % more CPU (each worker's fixed cost: collection, litellm's import) and ~1 GB of memory.
.PHONY: test-fast
test-fast: install-dev
	$(PYTEST) -n 3 --dist worksteal -m "not slow"

# The fuzz tests of `make test` run longer: more examples, more seeds (figures in docs/security.md);
# then every property test at the `thorough` hypothesis profile (tests/conftest.py).
fuzz: install-dev
	bash scripts/test-services.sh
	FUZZ_EXAMPLES=$${FUZZ_EXAMPLES:-150} FUZZ_READER_EXAMPLES=$${FUZZ_READER_EXAMPLES:-200} FUZZ_SEEDS=$${FUZZ_SEEDS:-1,2,3} \
		FUZZ_BYTE_EXAMPLES=$${FUZZ_BYTE_EXAMPLES:-700} \
		$(PYTEST) -q -s tests/test_api_fuzz.py tests/test_import_mutations.py
	HYPOTHESIS_PROFILE=thorough $(PYTEST) $(XDIST) -q -m hypothesis

bench: install-dev
	bash scripts/test-services.sh
	$(BIN)/python bench/run_all.py

# The README's and docs' screenshots (docs/images/), drawn by Chromium from the demo runs: after a change
# to what a page shows. Needs /usr/bin/chromium and a colour emoji font (fonts-noto-color-emoji).
.PHONY: screenshots
screenshots: install-dev
	$(BIN)/python scripts/screenshots.py

# Hygiene: `make lint` checks the Python (ruff, mypy) and the browser scripts (Biome); `make fix` rewrites
# what the tools can mend themselves. Biome comes pinned from package-lock.json.
.PHONY: lint fix
node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

lint: $(VENV)/.dev node_modules/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	npx --no-install biome ci

fix: $(VENV)/.dev node_modules/.installed
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .
	npx --no-install biome check --write

clean:
	rm -rf $(VENV) .pytest_cache
