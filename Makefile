# Faultline: `make help` lists the targets.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.DEFAULT_GOAL := help

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	@touch $(STAMP)

venv: $(STAMP) ## Create the virtualenv in .venv with every dependency

PORT ?= 8000
# make run's own settings: plain HTTP on localhost, /metrics for localhost, notification links to this server, e-mail
# printed to the terminal (no mail server here).
RUN_ENV := DJANGO_SECURE_COOKIES=0 FAULTLINE_METRICS_NETWORKS=$${FAULTLINE_METRICS_NETWORKS:-127.0.0.1/32,::1/128} \
	FAULTLINE_BASE_URL=$${FAULTLINE_BASE_URL:-http://localhost:$(PORT)} \
	DJANGO_EMAIL_BACKEND=$${DJANGO_EMAIL_BACKEND:-django.core.mail.backends.console.EmailBackend}

run: $(STAMP) ## Run Faultline on http://localhost:8000 (PORT=8001 for another) with demo data (SQLite in var/, tasks in-process)
	$(BIN)/python manage.py migrate --noinput -v0
	$(BIN)/python manage.py collectstatic --noinput -v0
	$(RUN_ENV) $(BIN)/python manage.py load_demo --if-empty
	$(BIN)/python manage.py demo_login --url http://localhost:$(PORT)
	$(RUN_ENV) $(BIN)/python manage.py serve 127.0.0.1:$(PORT)  # periodic tasks in a thread

# Tests use PostgreSQL (pytest-django creates test_<name>) and Redis (the worker test's broker).
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/faultline

test: $(STAMP) ## Run the test suite (starts PostgreSQL, Redis, Slurm and Prometheus, installs Chromium, when missing)
	scripts/services.sh
	scripts/browser.sh
	scripts/slurm.sh
	PYTHON=$(BIN)/python scripts/prometheus.sh
	DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} $(BIN)/pytest

screenshots: $(STAMP) ## Refresh the page screenshots in docs/screenshots/ (the browser tests take them)
	scripts/services.sh
	scripts/browser.sh
	FAULTLINE_SCREENSHOTS=docs/screenshots DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} $(BIN)/pytest pages/tests/test_browser.py pages/tests/test_patterns_browser.py

prod-check: $(STAMP) ## Production check: gunicorn, a worker and beat (DEBUG=0) on PostgreSQL and Redis: upload, analysis, page, static
	scripts/services.sh
	FAULTLINE_PROD_CHECK=1 DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} $(BIN)/pytest -q -p no:randomly triage/tests/test_production.py

lint: $(STAMP) ## Lint: ruff (format and rules), the layers (import-linter), no import cycle, one name per thing
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/python scripts/check_architecture.py

bench: $(STAMP) ## Run the benchmarks (results belong in docs/performance.md)
	@command -v rg >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ripgrep
	$(BIN)/python bench/engine.py
	$(BIN)/python bench/flight_recorder.py
	scripts/services.sh
	$(BIN)/python bench/pipeline.py
	$(BIN)/python bench/pages.py

score: $(STAMP) ## Score the engine on ../shared/scenarios/dev, real-dev and scenarios/holdout; fails below their floors where the log shows the cause (1.00, 1.00, 0.80)
	PYTHON=$(BIN)/python scripts/score.sh

.PHONY: help venv run test screenshots prod-check lint bench score
