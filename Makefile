# Every target sets itself up: a fresh clone needs only `make submission` or `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
TORCH_STAMP := $(VENV)/.torch
SERVER_STAMP := $(VENV)/.server
RAY_STAMP := $(VENV)/.ray
FAISS_STAMP := $(VENV)/.faiss
ALS_STAMP := $(VENV)/.als
BROWSER_STAMP := $(VENV)/.browser
POSTGRES_STAMP := $(VENV)/.postgres
DOCS_STAMP := $(VENV)/.docs
# Debian's python3 (PEP 668) refuses `pip install --user` even as root, so when uv is not on the
# PATH it is installed once with pip into a venv of its own (UV_HOME) and used from there.
UV_HOME ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/evalrs/uv
# `make test` runs the suite on this many processes (pytest-xdist; 0: in one process). The
# suite is safe in parallel: servers listen on free ports, caches and temporary files are per
# test session, which xdist makes per worker. Three processes on a 2-core machine: much of the
# suite waits (on servers, subprocesses, sandboxes, timeouts), and a third process fills that
# time (measured on 2 quiet cores: 6 min 6 s against 6 min 46 s with two, the same CPU).
# --dist worksteal: each process starts with its share of the suite, in order (a module's
# tests and fixtures stay together), and one that runs out takes half of another's queue: the
# run does not end on one process while the others idle (with the default --dist load, one
# idled for the last 7 % of a measured run).
PYTEST_WORKERS ?= 3
# OpenBLAS's threads spin after each call before they sleep, 2^28 cycles by default (about 0.1 s):
# with three test processes and the processes they start on 2 cores, that spinning takes the
# cores from the tests (measured: 624 against 689 CPU-s for the whole suite, and 5 min 43 s against
# 6 min 44 s). 2^4 cycles: the threads sleep at once. The number of threads, hence every result's
# bits, stays the same.
BLAS_SPIN ?= 4
# The suite writes bytecode even where the environment says not to (PYTHONDONTWRITEBYTECODE
# cleared for pytest and what it starts): each xdist process would otherwise rewrite every test
# module's asserts again, and each of the suite's hundreds of Python subprocesses compile the
# harness's modules again (-20 % CPU on the subprocess-heavy tests, ~10 s per process at
# collection). The bytecode lands in __pycache__ folders, which git ignores.
# The optional torch CPU build is a local wheel (never the multi-GB CUDA download from PyPI).
TORCH_WHEELS ?= /opt/wheels
SANDBOX_STAMP := $(VENV)/.sandbox
# Installs Debian packages when missing and possible (root with apt-get); never fails the build.
APT_INSTALL := DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o=Dpkg::Use-Pty=0

.PHONY: install submission test lint docs bench dist clean \
	server ray faiss als torch docs-deps browser postgres sandbox

# The environment is built with uv (seconds from a warm cache) and with pip only when uv cannot
# be had. uv reads no pip.conf: it installs from PyPI, plus what a recipe adds with --find-links.
# UV is found (or bootstrapped) once, the first time a recipe asks for it.
# Where Python writes no bytecode of its own (PYTHONDONTWRITEBYTECODE set), uv compiles it at
# install, as pip always does: else every start would compile each imported module again.
# Elsewhere Python caches the modules it imports, once: compiling all of an 850 MB venv up
# front would cost ~30 s of a first score that needs a fraction of them. `make test` never
# compiles at install: the suite writes the bytecode of what it imports whatever the
# environment says (see `test`), and compiling the whole environment with every optional part
# (~17,000 files, ~2 CPU-minutes) would cost a fresh clone's `make test` a minute of its 2 cores.
UV_COMPILE := $(if $(PYTHONDONTWRITEBYTECODE),$(if $(filter test,$(MAKECMDGOALS)),,\
	--compile-bytecode))
UV = $(eval UV := $(shell command -v uv 2>/dev/null || { [ -x "$(UV_HOME)/bin/uv" ] || \
	{ $(PYTHON) -m venv "$(UV_HOME)" && "$(UV_HOME)/bin/python" -m pip install --quiet uv; } \
	>&2; } && [ -x "$(UV_HOME)/bin/uv" ] && echo "$(UV_HOME)/bin/uv"))$(UV)
MAKE_VENV = $(if $(UV),$(UV) venv --quiet --allow-existing --python $(PYTHON) $(VENV),\
	$(PYTHON) -m venv $(VENV) && $(PY) -m pip install --quiet --upgrade pip)
PIP_INSTALL = $(if $(UV),$(UV) pip install --quiet $(UV_COMPILE) --python $(PY),\
	$(PY) -m pip install --quiet)

# The harness is installed editable with its runtime dependencies and the contributors' tools
# (pyproject.toml's [project] dependencies and its "dev" extra), so that `import evaluation`
# works anywhere with the venv's Python: in notebooks/, in a script outside the repository, in a
# Jupyter kernel. requirements.txt too: the participant's model's own dependencies go there
# (a reproduction installs them from it). reclist==2.1.0 comes last, without its dependencies
# (requirements-reclist.txt): its 2023 pins (gensim, pyarrow, matplotlib) do not import under
# NumPy 2; what its core needs is among the harness's dependencies.
#
# `make test` needs every extra: it installs them in this same step, one resolution and one
# build of the editable package instead of seven (each costs ~3 CPU-s and ~10 s on 2 cores).
# $(EXTRAS_DONE) lists the extras that are in; an optional part's recipe below installs its extra
# only when it is missing from that list. When one of them cannot be installed, the combined step
# fails and falls back to the harness alone: each part then tries its own and says why it skips.
TEST_EXTRAS := server server-test ray faiss als docs reproduce
EXTRAS_DONE := $(VENV)/.extras
INSTALL_EXTRAS := $(if $(filter test,$(MAKECMDGOALS)),$(TEST_EXTRAS))
comma := ,
$(STAMP): pyproject.toml requirements.txt requirements-reclist.txt
	$(MAKE_VENV)
	rm -f $(EXTRAS_DONE)
	$(if $(INSTALL_EXTRAS),$(PIP_INSTALL) -e ".[$(subst $(eval) ,$(comma),dev $(INSTALL_EXTRAS))]" \
		-r requirements.txt && printf '%s\n' $(INSTALL_EXTRAS) > $(EXTRAS_DONE) || \
		{ echo "could not install every extra at once: installing them one by one"; \
		$(PIP_INSTALL) -e ".[dev]" -r requirements.txt; },\
	$(PIP_INSTALL) -e ".[dev]" -r requirements.txt)
	$(PIP_INSTALL) --no-deps -r requirements-reclist.txt
	touch $(STAMP)

# True when the harness's own step installed extra $(1) already.
HAS_EXTRA = grep -qsx '$(1)' $(EXTRAS_DONE)

# Each optional part below is an extra of pyproject.toml installed into the venv with the
# harness (`make server`, `make ray`, ...), or a Debian package; `make submission` installs none
# of them and `make test` installs them all. When one cannot be installed, its tests skip and
# say why.

# torch is optional (the torch path of topk_from_embeddings). The tests exercise it when the
# machine offers the CPU build (a local wheel; never the multi-GB CUDA download); else they skip.
$(TORCH_STAMP): $(STAMP)
	$(PIP_INSTALL) $(if $(wildcard $(TORCH_WHEELS)),--find-links $(TORCH_WHEELS)) "torch==2.13.0+cpu" \
		|| echo "no local torch CPU wheel: torch tests will skip"
	touch $(TORCH_STAMP)

# The leaderboard service (the "server" extra) and its test tools (the "server-test" extra).
$(SERVER_STAMP): $(STAMP)
	$(call HAS_EXTRA,server) || $(PIP_INSTALL) -e ".[server,server-test]" \
		|| echo "could not install the server and server-test extras: the server tests will skip"
	touch $(SERVER_STAMP)

# Ray, for EvalRSRunner(..., executor="ray") and its tests (the "ray" extra).
$(RAY_STAMP): $(STAMP)
	$(call HAS_EXTRA,ray) || $(PIP_INSTALL) -e ".[ray]" \
		|| echo "could not install the ray extra: the Ray tests will skip"
	touch $(RAY_STAMP)

# faiss-cpu, for topk_from_embeddings(..., device="faiss") and its tests (the "faiss" extra).
$(FAISS_STAMP): $(STAMP)
	$(call HAS_EXTRA,faiss) || $(PIP_INSTALL) -e ".[faiss]" \
		|| echo "could not install the faiss extra: the faiss tests will skip"
	touch $(FAISS_STAMP)

# implicit, for the ALS recipe, its test and the baselines benchmark (the "als" extra).
$(ALS_STAMP): $(STAMP)
	$(call HAS_EXTRA,als) || $(PIP_INSTALL) -e ".[als]" \
		|| echo "could not install the als extra: the ALS test will skip"
	touch $(ALS_STAMP)

# MkDocs, Material and mkdocstrings, for the documentation site (the "docs" extra).
$(DOCS_STAMP): $(STAMP)
	$(call HAS_EXTRA,docs) || $(PIP_INSTALL) -e ".[docs]"
	touch $(DOCS_STAMP)

# Debian's chromium + chromium-driver for the board page's browser test.
$(BROWSER_STAMP): $(STAMP)
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then \
		echo "chromium and chromedriver found"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing chromium and chromium-driver with apt-get"; \
		{ apt-get update -qq && $(APT_INSTALL) chromium chromium-driver >/dev/null; } \
			|| echo "apt-get could not install chromium: the browser tests will skip"; \
	else \
		echo "chromium/chromedriver missing and not root with apt-get: the browser tests will skip"; \
	fi
	touch $(BROWSER_STAMP)

# Debian's PostgreSQL binaries (the tests start their own server with initdb/pg_ctl).
$(POSTGRES_STAMP): $(STAMP) | $(BROWSER_STAMP)  # one apt-get at a time under make -j
	@if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null; then \
		echo "PostgreSQL binaries found"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing postgresql with apt-get"; \
		{ apt-get update -qq && $(APT_INSTALL) postgresql >/dev/null; } \
			|| echo "apt-get could not install postgresql: the PostgreSQL tests will skip"; \
	else \
		echo "PostgreSQL (initdb) missing and not root with apt-get: the PostgreSQL tests will skip"; \
	fi
	touch $(POSTGRES_STAMP)

# Debian's bubblewrap, the sandbox `reproduce` runs participants' code in, and uv, which builds
# the reproduction's environments (the "reproduce" extra): tests/reproduce/test_sandbox.py and
# the hostile-checkout tests run them for real.
$(SANDBOX_STAMP): $(STAMP) | $(POSTGRES_STAMP)  # one apt-get at a time
	$(call HAS_EXTRA,reproduce) || $(PIP_INSTALL) -e ".[reproduce]" \
		|| echo "could not install uv: reproduction environments are built with pip"
	@if command -v bwrap >/dev/null; then \
		echo "bubblewrap found"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing bubblewrap with apt-get"; \
		{ apt-get update -qq && $(APT_INSTALL) bubblewrap >/dev/null; } \
			|| echo "apt-get could not install bubblewrap: the sandbox tests will skip"; \
	else \
		echo "bubblewrap (bwrap) missing and not root with apt-get: the sandbox tests will skip"; \
	fi
	touch $(SANDBOX_STAMP)

install: $(STAMP)

# One optional part each, into .venv (what `make test` installs them all for).
server: $(SERVER_STAMP)
ray: $(RAY_STAMP)
faiss: $(FAISS_STAMP)
als: $(ALS_STAMP)
torch: $(TORCH_STAMP)
docs-deps: $(DOCS_STAMP)
browser: $(BROWSER_STAMP)
postgres: $(POSTGRES_STAMP)
sandbox: $(SANDBOX_STAMP)

submission: install
	$(PY) submission.py $(ARGS)

# mypy and the documentation site are made beside the tests, their output kept and printed
# after the tests' (the suite leaves about a third of the 2 cores idle while it waits on
# servers, subprocesses and sandboxes: the two checks' ~50 s of CPU fill it). The target fails
# when any of the four fails, and says which.
CHECKS_LOG := $(VENV)/.checks
test: install $(TORCH_STAMP) $(SERVER_STAMP) $(RAY_STAMP) $(FAISS_STAMP) $(ALS_STAMP) \
		$(BROWSER_STAMP) $(POSTGRES_STAMP) $(SANDBOX_STAMP) $(DOCS_STAMP)
	$(PY) -m ruff check .
	@echo "mypy and the docs site run beside the tests; their output follows the tests'"
	@PYTHONDONTWRITEBYTECODE= $(PY) -m mypy > $(CHECKS_LOG).mypy 2>&1 & mypy=$$!; \
	PYTHONDONTWRITEBYTECODE= NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --quiet \
		> $(CHECKS_LOG).docs 2>&1 & \
	docs=$$!; \
	PYTHONDONTWRITEBYTECODE= OPENBLAS_THREAD_TIMEOUT=$(BLAS_SPIN) \
		$(PY) -m pytest -q -n $(PYTEST_WORKERS) --dist worksteal $(ARGS); \
	tests=$$?; wait $$mypy; typed=$$?; wait $$docs; site=$$?; \
	echo "--- mypy (exit $$typed)"; cat $(CHECKS_LOG).mypy; \
	echo "--- mkdocs build --strict (exit $$site)"; cat $(CHECKS_LOG).docs; \
	[ $$tests -eq 0 ] || echo "the tests failed (exit $$tests)"; \
	[ $$tests -eq 0 ] && [ $$typed -eq 0 ] && [ $$site -eq 0 ]

# The documentation site, built into site/ with warnings as errors (a broken link, a docstring
# mkdocstrings cannot read, a page missing from the nav). NO_MKDOCS_2_WARNING: Material's
# banner about its successor, printed on every build.
docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --quiet

# ruff, then mypy over the files [tool.mypy] names in pyproject.toml
lint: install
	$(PY) -m ruff check .
	$(PY) -m mypy

bench: install $(SERVER_STAMP) $(POSTGRES_STAMP) $(FAISS_STAMP) $(ALS_STAMP)
	for b in benchmarks/bench_*.py; do $(PY) $$b || exit 1; done

# The sdist and the wheel, built into dist/ by uv (isolated: setuptools from the package index
# or uv's cache), or by pip (the wheel only) when uv cannot be had.
dist: install
	$(if $(UV),$(UV) build --quiet --out-dir dist,$(PY) -m pip wheel --quiet --no-deps -w dist .)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache results .reclist site dist build \
		*.egg-info
