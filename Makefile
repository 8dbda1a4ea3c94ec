# Trace Studio. `make demo` runs everything on one machine; `make test` runs the suite.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | sha256sum | cut -c1-12)
DEMO_ENV := STUDIO_MODE=demo STUDIO_DEMO_PASSWORD=$${STUDIO_DEMO_PASSWORD:-demo-pass-1234} STUDIO_DATA_DIR=$(CURDIR)/var/demo

.PHONY: demo install test test-fast bench-import compose-check clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip setuptools wheel
	$(PY) -m pip install --quiet -e '.[ml,test]'
	touch $(STAMP)

install: $(STAMP)

demo: install
	$(DEMO_ENV) $(PY) manage.py migrate --noinput
	$(DEMO_ENV) $(PY) manage.py seed_demo
	@echo "Log in at http://127.0.0.1:8000/ as annotator, lead or engineer (password: $${STUDIO_DEMO_PASSWORD:-demo-pass-1234})"
	$(DEMO_ENV) $(PY) manage.py runstudio --host 127.0.0.1 --port 8000

test: install
	$(PY) -m pytest -q $(PYTEST_ARGS)

test-fast: install
	$(PY) -m pytest -q -m "not browser and not worker" $(PYTEST_ARGS)

bench-import: install
	$(PY) bench/import.py $(BENCH_ARGS)

compose-check:
	docker-compose -f docker-compose.yml config -q

clean:
	rm -rf var/ staticfiles/ .pytest_cache
