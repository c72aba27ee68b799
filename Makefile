# The README's two commands: `make app` (install + start the app) and `make test` (install + run every test).
# Both install into a project virtualenv ($(VENV)), never into the interpreter that creates it, so they also work
# with a distribution's own python3 (PEP 668). `make app PY=python3.12` builds the virtualenv from another interpreter.
PY ?= python3
VENV ?= .venv
VPY := $(VENV)/bin/python
# Root installs Debian's packages directly; anyone else through sudo.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT := DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get
PYTEST_ARGS ?=
# Where `make app` listens: this machine only by default. `make app HOST=0.0.0.0` serves the network, and then the app
# needs sign-in (GET_EXPLORER_PASSWORD, or OpenID Connect in .streamlit/secrets.toml) or refuses to start.
HOST ?= 127.0.0.1

.PHONY: app test test-fast venv system-deps bench

system-deps:  ## Graphviz's dot for the tree diagram, Debian's chromium for browser tests
	@command -v dot >/dev/null && command -v chromium >/dev/null || \
	  ($(APT) update -qq && $(APT) install -y -qq graphviz chromium >/dev/null)

# The virtualenv is rebuilt when another interpreter than $(PY) made it (.made-by names the one that did).
# A distribution that splits venv/ensurepip out (Debian, Ubuntu) gets python3.X-venv from apt first.
venv:
	@want=$$($(PY) -c 'import os, sys; print(os.path.realpath(getattr(sys, "_base_executable", sys.executable)))') || \
	  { echo "make: '$(PY)' is not a Python interpreter; pass PY=python3.X"; exit 2; }; \
	if [ -x $(VPY) ] && [ "$$(cat $(VENV)/.made-by 2>/dev/null)" = "$$want" ]; then exit 0; fi; \
	echo "Creating $(VENV) with $$want"; rm -rf $(VENV); \
	if ! $(PY) -c 'import venv, ensurepip' 2>/dev/null; then \
	  pkg=$$($(PY) -c 'import sys; print("python3.%d-venv" % sys.version_info[1])'); \
	  $(APT) update -qq && ($(APT) install -y -qq $$pkg >/dev/null || $(APT) install -y -qq python3-venv >/dev/null); \
	fi; \
	$(PY) -m venv $(VENV) && echo "$$want" > $(VENV)/.made-by

# Installs are skipped while the requirements are older than the stamp inside the virtualenv.
$(VENV)/.installed-app: requirements.txt
	$(VPY) -m pip install -q -r requirements.txt
	touch $@

$(VENV)/.installed-dev: requirements.txt requirements-dev.txt
	$(VPY) -m pip install -q -r requirements-dev.txt
	touch $@ $(VENV)/.installed-app

app: system-deps venv
	@$(MAKE) --no-print-directory $(VENV)/.installed-app
	$(VPY) -m get_core.serve --host $(HOST)

test: system-deps venv
	@$(MAKE) --no-print-directory $(VENV)/.installed-dev
	$(VPY) -m pytest -q -rs $(PYTEST_ARGS)

test-fast: system-deps venv
	@$(MAKE) --no-print-directory $(VENV)/.installed-dev
	$(VPY) -m pytest -q -rs -m "not slow" $(PYTEST_ARGS)

bench: system-deps venv
	@$(MAKE) --no-print-directory $(VENV)/.installed-app
	$(VPY) -m bench.speed
