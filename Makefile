# The two commands a newcomer needs: `make dashboard` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# The runner works with any torch >= 2.4; the dashboard and the CPU tests need only a CPU
# build. Override for your GPU host, e.g. `make setup TORCH=torch==2.11.0`.
TORCH  ?= torch==2.13.0
SUDO   := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)
PORT   ?= 8501

.PHONY: setup dashboard test test-gpu lint typecheck bench-dashboard system-deps

$(VENV)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q "$(TORCH)"
	$(BIN)/pip install -q -r requirements.txt
	touch $@

setup: $(VENV)/.installed

## Start the dashboard on http://127.0.0.1:$(PORT) (an empty database gets the samples).
dashboard: setup
	$(BIN)/streamlit run app.py --server.port $(PORT)

# What the end-to-end, PostgreSQL and Slurm tests need from Debian: chromium (driven by
# Playwright, no browser download); when no PostgreSQL server answers on 127.0.0.1:5432,
# the server binaries for a throwaway cluster the tests start themselves; slurm-wlm and
# munge for the one-node Slurm the tests start (tests/slurm_cluster.py).
system-deps: setup
	@command -v chromium >/dev/null 2>&1 || { \
	  $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq chromium >/dev/null; }
	@PATH="$$PATH:/usr/sbin:/sbin"; command -v slurmctld >/dev/null 2>&1 && \
	  command -v munged >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && \
	  $(SUDO) apt-get install -y -qq slurm-wlm munge >/dev/null; }
	@$(BIN)/python -c "import socket; socket.create_connection(('127.0.0.1', 5432), 1)" \
	  2>/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { \
	  $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq postgresql >/dev/null; }

## Run the whole test suite (CPU; GPU tests skip without CUDA), then list the 15 slowest.
# One pytest worker per core (xdist), a test file to a worker: a module's server, browser
# or Slurm cluster starts once. Many tests wait on child processes; two cores halve it.
test: system-deps
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -n auto --dist loadfile --durations=15

## The type checker alone (mypy; pyproject.toml [tool.mypy] says what and how strictly).
typecheck: setup
	$(BIN)/mypy

## On a CUDA machine: only the GPU tests, one at a time (they time the GPU). torch and
## pytest are enough: modules that need the database or the dashboard skip without them.
test-gpu:
	python3 -m pytest -q -m gpu

bench-dashboard: setup
	$(BIN)/python bench/dashboard_bench.py
