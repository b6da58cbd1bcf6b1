# vaultmem: every target creates .venv and installs the project into it when needed.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-quick lint bench bench-quick bench-100k docs clean install
PREFIX ?= $(HOME)/.local

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,semantic]'
	touch $(STAMP)

# The main job on example-vault/: build its index, show status and answer a search.
# The demo's index goes to its own state folder beside the copy (not the user's state dir).
demo: export VAULTMEM_STATE_DIR = /tmp/vaultmem-demo-state
demo: $(STAMP)
	@rm -rf /tmp/vaultmem-demo /tmp/vaultmem-demo-state && cp -r example-vault /tmp/vaultmem-demo
	$(BIN)/vaultmem reconcile --vault /tmp/vaultmem-demo
	$(BIN)/vaultmem status --vault /tmp/vaultmem-demo
	$(BIN)/vaultmem search "how do I run the tests" --limit 3 --vault /tmp/vaultmem-demo
	$(BIN)/vaultmem backlinks "DuckDB" --vault /tmp/vaultmem-demo
	$(BIN)/vaultmem problems --vault /tmp/vaultmem-demo

# Puts `vaultmem` on PATH: a link from $(PREFIX)/bin (default ~/.local/bin) to .venv's command.
install: $(STAMP)
	mkdir -p $(PREFIX)/bin
	ln -sf $(abspath $(BIN))/vaultmem $(PREFIX)/bin/vaultmem
	@echo "Installed $(PREFIX)/bin/vaultmem; if 'vaultmem --version' is not found, add $(PREFIX)/bin to PATH."

test: $(STAMP)
	$(BIN)/ruff check vaultmem tests benchmarks
	$(BIN)/ruff format --check vaultmem tests benchmarks
	$(BIN)/mypy
	$(BIN)/pytest -n 2 -p no:cacheprovider

# The suite without the tests marked `slow` (property tests, killed processes, the watcher as a
# subprocess): for iterating. `make test` runs everything, lint and types included.
test-quick: $(STAMP)
	$(BIN)/pytest -n 2 -p no:cacheprovider -m "not slow"

lint: $(STAMP)
	$(BIN)/ruff check vaultmem tests benchmarks
	$(BIN)/ruff format --check vaultmem tests benchmarks
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python -m benchmarks.run

bench-quick: $(STAMP)
	$(BIN)/python -m benchmarks.run --quick

# Issue 14's scale report on 100,000 notes (~400 MB; not in CI): full, no-op, one edit, peak RSS.
bench-100k: $(STAMP)
	$(BIN)/python -m benchmarks.run --scale 100000

docs: $(STAMP)
	$(BIN)/python -m vaultmem.storage.schema > docs/schema.md
	$(BIN)/python -m tests.integration.test_architecture

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache benchmarks/out
