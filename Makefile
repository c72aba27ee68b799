# The README's two commands: `make app` (install + start the app) and `make test` (install + run every test).
PY ?= python3
PIP ?= $(PY) -m pip

.PHONY: app test install install-dev system-deps bench

system-deps:  ## Graphviz's dot for the tree diagram, Debian's chromium for browser tests
	@command -v dot >/dev/null && command -v chromium >/dev/null || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz chromium >/dev/null)

install: system-deps
	$(PIP) install -q -r requirements.txt

install-dev: system-deps
	$(PIP) install -q -r requirements-dev.txt

app: install
	$(PY) -m streamlit run app.py

test: install-dev
	$(PY) -m pytest -q

bench: install
	$(PY) bench/speed.py
