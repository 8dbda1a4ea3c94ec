# Trace Studio. `make demo` runs everything on one machine; `make test` runs the fast tier of the suite.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
# The install is stamped with a digest of pyproject's sections other than [tool.*] (the build, the dependencies, the
# scripts): a change there installs again, an edit of the tools' settings (pytest markers, ruff, mypy) does not, and
# neither does a fresh clone's newer file time (the stamp has no file prerequisite: its name is the digest).
STAMP := $(VENV)/.installed-$(shell awk '/^\[/ { keep = !/^\[tool\./ } keep' pyproject.toml | sha256sum | cut -c1-12)
# `make demo PORT=8010` (and HOST=0.0.0.0 to serve beyond this machine) when 8000 is taken.
PORT ?= 8000
HOST ?= 127.0.0.1
DEMO_ENV := STUDIO_MODE=demo STUDIO_DEMO_PASSWORD=$${STUDIO_DEMO_PASSWORD:-demo-pass-1234} STUDIO_DATA_DIR=$(CURDIR)/var/demo

.PHONY: demo install test test-integration test-release test-integration-and-release test-all lint typecheck typecheck-js migrations-check bench-import compose-check clean

$(STAMP):
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip setuptools wheel
	$(PY) -m pip install --quiet -e '.[ml,tokens,test,lint]'
	touch $(STAMP)

install: $(STAMP)

demo: install
	$(DEMO_ENV) $(PY) manage.py migrate --noinput
	$(DEMO_ENV) $(PY) manage.py seed_demo
	@echo "Log in at http://$(HOST):$(PORT)/ as annotator, annotator2, lead or engineer (password: $${STUDIO_DEMO_PASSWORD:-demo-pass-1234})"
	$(DEMO_ENV) $(PY) manage.py runstudio --host $(HOST) --port $(PORT)

# The suite runs in parallel, one test process per core (pytest-xdist; tests/parallel.py gives each its own database,
# data folder and Redis database); a file's tests stay in one process, so module fixtures are made once.
# `make test TEST_PROCESSES=0` runs it in this process alone. The 15 slowest tests are listed at the end.
# At most 8: each process takes a Redis database of its own (tests/parallel.py), and a Redis server has 16.
# Three tiers, decided by markers in tests/tiers.py: `make test` (unit, service, API, node: minutes),
# `make test-integration` (browser, Celery workers, servers and other child processes) and `make test-release`
# (the full stack, its outages, LLaMA-Factory). `.ci/run` runs all three; `make test-all` too.
TEST_PROCESSES ?= $(shell n=$$(nproc 2>/dev/null || echo 2); [ $$n -gt 8 ] && n=8; echo $$n)
PYTEST := $(PY) -m pytest -q -n $(TEST_PROCESSES) --dist loadfile --durations=15

test: install
	$(PYTEST) --tier test $(PYTEST_ARGS)

test-integration: install
	$(PYTEST) --tier integration $(PYTEST_ARGS)

test-release: install
	$(PYTEST) --tier release $(PYTEST_ARGS)

# The two later tiers in one run, as .ci/run takes them: the test processes, their browsers and live servers start
# once, and the short files of both fill in while the long ones end (tests/schedule.py).
test-integration-and-release: install
	$(PYTEST) --tier integration --tier release $(PYTEST_ARGS)

test-all: test test-integration-and-release

# ruff (lint and format; the rules, the complexity ceiling and line length are in pyproject.toml), then TypeScript's
# checker on the page's JavaScript (typecheck-js). `make typecheck` is mypy with django-stubs on every production
# package, migrations aside; studio/, every app's services and selectors, the grammar and the importers must annotate
# every function (pyproject.toml's [tool.mypy] and its overrides).
lint: install typecheck-js
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# Every module in static/js (// @ts-check, JSDoc types) through tsc, as tsconfig.json says, emitting nothing; tsc's
# version is pinned in tests/typescript/package.json and installed once with npm into var/typescript.
typecheck-js: install
	$(PY) -m tests.typescript

typecheck: install
	$(VENV)/bin/mypy

# A model change without its migration fails here, not in production.
migrations-check: install
	$(PY) manage.py makemigrations --check --dry-run

bench-import: install
	$(PY) bench/import.py $(BENCH_ARGS)

# `config -q` checks the file; it needs STUDIO_SECRET_KEY set, never its value, so a throwaway one is lent to the
# check when none is set (the stack itself still refuses to start without a real key).
compose-check:
	STUDIO_SECRET_KEY="$${STUDIO_SECRET_KEY:-compose-check-only-not-a-secret}" docker-compose -f docker-compose.yml config -q

clean:
	rm -rf var/ staticfiles/ .pytest_cache
