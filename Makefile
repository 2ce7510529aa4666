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
SANDBOX_STAMP := $(VENV)/.sandbox
# Installs Debian packages when missing and possible (root with apt-get); never fails the build.
APT_INSTALL := DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o=Dpkg::Use-Pty=0

.PHONY: install submission test lint bench clean

# The harness itself is installed editable (its dependencies are the requirements above), so
# that `import evaluation` works anywhere with the venv's Python: in notebooks/, in a script
# outside the repository, in a Jupyter kernel.
$(STAMP): requirements.txt requirements-dev.txt requirements-reclist.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-deps -r requirements-reclist.txt
	$(PY) -m pip install --quiet --no-deps -e .
	touch $(STAMP)

# torch is optional (the torch path of topk_from_embeddings). The tests exercise it when the
# machine offers the CPU build (a local wheel; never the multi-GB CUDA download); else they skip.
$(TORCH_STAMP): $(STAMP)
	$(PY) -m pip install --quiet "torch==2.13.0+cpu" || echo "no local torch CPU wheel: torch tests will skip"
	touch $(TORCH_STAMP)

# The leaderboard service and its test tools (optional: `make submission` never installs them).
# When pip cannot install them, the server's tests skip with the reason.
$(SERVER_STAMP): $(STAMP) requirements-server.txt requirements-server-test.txt
	$(PY) -m pip install --quiet -r requirements-server-test.txt \
		|| echo "could not install requirements-server-test.txt: the server tests will skip"
	touch $(SERVER_STAMP)

# Ray, for the executor="ray" tests (optional: `make submission` never installs it).
# When pip cannot install it, the Ray tests skip with the reason.
$(RAY_STAMP): $(STAMP) requirements-ray.txt
	$(PY) -m pip install --quiet -r requirements-ray.txt \
		|| echo "could not install requirements-ray.txt: the Ray tests will skip"
	touch $(RAY_STAMP)

# faiss-cpu, for the device="faiss" tests of topk_from_embeddings (optional: `make submission`
# never installs it). When pip cannot install it, the faiss tests skip with the reason.
$(FAISS_STAMP): $(STAMP) requirements-faiss.txt
	$(PY) -m pip install --quiet -r requirements-faiss.txt \
		|| echo "could not install requirements-faiss.txt: the faiss tests will skip"
	touch $(FAISS_STAMP)

# implicit, for the ALS recipe's test and the baselines benchmark (optional: `make submission`
# never installs it). When pip cannot install it, the ALS test skips with the reason.
$(ALS_STAMP): $(STAMP) requirements-als.txt
	$(PY) -m pip install --quiet -r requirements-als.txt \
		|| echo "could not install requirements-als.txt: the ALS test will skip"
	touch $(ALS_STAMP)

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

# Debian's bubblewrap, the sandbox `reproduce` runs participants' code in (tests/test_sandbox.py
# and the hostile-checkout tests run it for real).
$(SANDBOX_STAMP): $(STAMP) requirements-reproduce.txt | $(POSTGRES_STAMP)  # one apt-get at a time
	$(PY) -m pip install --quiet -r requirements-reproduce.txt \
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

submission: install
	$(PY) submission.py $(ARGS)

test: install $(TORCH_STAMP) $(SERVER_STAMP) $(RAY_STAMP) $(FAISS_STAMP) $(ALS_STAMP) \
		$(BROWSER_STAMP) $(POSTGRES_STAMP) $(SANDBOX_STAMP)
	$(PY) -m ruff check .
	$(PY) -m pytest -q $(ARGS)

lint: install
	$(PY) -m ruff check .

bench: install $(SERVER_STAMP) $(POSTGRES_STAMP) $(FAISS_STAMP) $(ALS_STAMP)
	for b in benchmarks/bench_*.py; do $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache results .reclist
