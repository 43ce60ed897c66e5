# sdckit: the two set-up commands.  `make demo` and `make test` each create .venv on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench screenshots clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m sdckit.demo

test: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/python -m pytest -n 2 -q

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

# the pictures of docs/ui/ (the browser tests take them on the way; tests alone write nothing)
screenshots: $(STAMP)
	SDCKIT_SCREENSHOTS=1 $(BIN)/python -m pytest -q tests/ui

bench: $(STAMP)
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
