# Two commands on a fresh machine: `make demo` and `make test`. Both install what they need.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint unit integration binaries generate generate-check helm-lint chart-deps vendor-kserve-crds bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

binaries:
	dev/build-controlplane.sh controlplane

## demo: a local control plane, the CRDs, the provider, examples/ applied; prints objects and status
demo: $(STAMP) binaries
	$(BIN)/python dev/demo.py

## test: lint, type-check and every test (unit + integration on a real kube-apiserver/etcd)
test: $(STAMP) binaries lint
	$(BIN)/pytest -q

lint: $(STAMP)
	$(BIN)/ruff check src tests dev bench
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest -q tests/unit

integration: $(STAMP) binaries
	$(BIN)/pytest -q -m integration

generate: $(STAMP)
	$(BIN)/provider-kserve generate

generate-check: $(STAMP)
	$(BIN)/provider-kserve generate --check

bench: $(STAMP) binaries
	$(BIN)/python bench/converge_null.py 100 1000

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
