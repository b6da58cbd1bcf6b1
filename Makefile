# vaultmem: every target creates .venv and installs the project into it when needed.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-quick lint bench bench-quick bench-100k docs clean install jieba-words
PREFIX ?= $(HOME)/.local

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,semantic]'
	touch $(STAMP)

# The demo's own environment: vaultmem alone (editable, so it shows this tree), no dev tools
# and no semantic extra.
DEMO_VENV := .venv-demo
DEMO_STAMP := $(DEMO_VENV)/.installed

$(DEMO_STAMP): pyproject.toml
	test -x $(DEMO_VENV)/bin/python || $(PY) -m venv $(DEMO_VENV)
	$(DEMO_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(DEMO_VENV)/bin/python -m pip install --quiet -e .
	touch $(DEMO_STAMP)

# The main job on example-vault/: build its index, show status and answer a search, on a copy
# in a new temporary folder, its index in a state folder beside it (both paths are printed;
# nothing else is written).
demo: $(DEMO_STAMP)
	@tmp=$$(mktemp -d) && vault=$$tmp/example-vault && cp -r example-vault "$$vault" \
	&& export VAULTMEM_STATE_DIR=$$tmp/state \
	&& echo "A copy of example-vault/ in $$vault, its index under $$tmp/state" \
	&& $(DEMO_VENV)/bin/vaultmem reconcile --vault "$$vault" \
	&& $(DEMO_VENV)/bin/vaultmem status --vault "$$vault" \
	&& $(DEMO_VENV)/bin/vaultmem search "how do I run the tests" --limit 3 --vault "$$vault" \
	&& $(DEMO_VENV)/bin/vaultmem backlinks "DuckDB" --vault "$$vault" \
	&& $(DEMO_VENV)/bin/vaultmem problems --vault "$$vault"

# Puts `vaultmem` on PATH: a venv of its own with a non-editable install of this tree in
# $(PREFIX)/share/vaultmem (default ~/.local/share/vaultmem), and a link to its command in
# $(PREFIX)/bin. Run it again after changing the code.
INSTALL_VENV = $(PREFIX)/share/vaultmem/venv
install:
	$(PY) -m venv --clear $(INSTALL_VENV)
	$(INSTALL_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(INSTALL_VENV)/bin/python -m pip install --quiet .
	mkdir -p $(PREFIX)/bin
	ln -sf $(INSTALL_VENV)/bin/vaultmem $(PREFIX)/bin/vaultmem
	@echo "Installed vaultmem in $(INSTALL_VENV) (not editable: run make install again after a change);"
	@echo "the command is $(PREFIX)/bin/vaultmem; if 'vaultmem --version' is not found, add $(PREFIX)/bin to PATH."

# --dist worksteal: a worker that runs out of tests takes the other's queue, so a long test
# late in the run no longer leaves a core idle (wall time ~ the tests' summed time / 2).
test: $(STAMP)
	$(BIN)/ruff check vaultmem tests benchmarks
	$(BIN)/ruff format --check vaultmem tests benchmarks
	$(BIN)/mypy
	$(BIN)/pytest -n 2 --dist worksteal -p no:cacheprovider

# The suite without the tests marked `slow` (property tests, killed processes, the watcher as a
# subprocess): for iterating. `make test` runs everything, lint and types included.
test-quick: $(STAMP)
	$(BIN)/pytest -n 2 --dist worksteal -p no:cacheprovider -m "not slow"

lint: $(STAMP)
	$(BIN)/ruff check vaultmem tests benchmarks
	$(BIN)/ruff format --check vaultmem tests benchmarks
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python -m benchmarks.run

bench-quick: $(STAMP)
	$(BIN)/python -m benchmarks.run --quick

# Issue 28's targets at 10,000 and 100,000 notes (~400 MB; not in CI): the full build against the
# floor and FTS5, no-op, one edit, watch latency and a burst of 500, peak RSS, the upgrade row.
bench-100k: $(STAMP)
	$(BIN)/python -m benchmarks.run --scale 10000 --scale 100000

docs: $(STAMP)
	$(BIN)/python -m vaultmem.storage.schema > docs/schema.md
	$(BIN)/python -m vaultmem.adapters.reference docs/cli.md
	$(BIN)/python -m tests.integration.test_architecture

# vaultmem/core/jieba-words.bin again from jieba 0.42.1's dict.txt (the dictionary rjieba builds
# in; pip fetches the sdist from the package index, its hash checked): only if rjieba's changes.
JIEBA_SHA256 := 055ca12f62674fafed09427f176506079bc135638a14e23e25be909131928db2
jieba-words: $(STAMP)
	tmp=$$(mktemp -d) && \
	$(BIN)/python -m pip download --quiet --no-deps --no-binary :all: jieba==0.42.1 -d $$tmp && \
	echo "$(JIEBA_SHA256)  $$tmp/jieba-0.42.1.tar.gz" | sha256sum -c - && \
	tar -xzf $$tmp/jieba-0.42.1.tar.gz -C $$tmp jieba-0.42.1/jieba/dict.txt && \
	$(BIN)/python -m vaultmem.core.jieba_slice $$tmp/jieba-0.42.1/jieba/dict.txt && \
	rm -rf $$tmp

clean:
	rm -rf $(VENV) $(DEMO_VENV) .pytest_cache .mypy_cache .ruff_cache benchmarks/out
