# Every target sets itself up: a fresh clone needs only `make submission` or `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install submission test lint bench clean

$(STAMP): requirements.txt requirements-dev.txt requirements-reclist.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-deps -r requirements-reclist.txt
	touch $(STAMP)

install: $(STAMP)

submission: install
	$(PY) submission.py $(ARGS)

test: install
	$(PY) -m ruff check .
	$(PY) -m pytest -q $(ARGS)

lint: install
	$(PY) -m ruff check .

bench: install
	for b in benchmarks/bench_*.py; do $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache results .reclist
