# Every target sets itself up: a fresh clone needs only `make submission` or `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
TORCH_STAMP := $(VENV)/.torch

.PHONY: install submission test lint bench clean

$(STAMP): requirements.txt requirements-dev.txt requirements-reclist.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-deps -r requirements-reclist.txt
	touch $(STAMP)

# torch is optional (the torch path of topk_from_embeddings). The tests exercise it when the
# machine offers the CPU build (a local wheel; never the multi-GB CUDA download); else they skip.
$(TORCH_STAMP): $(STAMP)
	$(PY) -m pip install --quiet "torch==2.13.0+cpu" || echo "no local torch CPU wheel: torch tests will skip"
	touch $(TORCH_STAMP)

install: $(STAMP)

submission: install
	$(PY) submission.py $(ARGS)

test: install $(TORCH_STAMP)
	$(PY) -m ruff check .
	$(PY) -m pytest -q $(ARGS)

lint: install
	$(PY) -m ruff check .

bench: install
	for b in benchmarks/bench_*.py; do $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache results .reclist
