# Two commands on a fresh machine: `make demo` and `make test`. Both install what they need.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
E2E_STAMP := $(VENV)/.installed-e2e
UV_INSTALL = $(BIN)/uv pip install --quiet --python $(BIN)/python --compile-bytecode --require-hashes
UV_COMPILE = $(BIN)/uv pip compile --quiet --no-header --annotation-style line --generate-hashes $(UV_ARGS)

.PHONY: lock demo test lint unit integration binaries kserve-binaries observability-tools generate generate-check helm-lint chart-deps vendor-kserve-crds chart-inputs venv-e2e bench bench-scale bench-profile clean image e2e demo-cluster

HELM = $(shell dev/build-controlplane.sh helm)/helm
KSERVE_SRC ?= $(wildcard ../shared/crds/kserve)
CHART := charts/provider-kserve
# The chart's gitignored inputs, each named by one file its script writes (touched after it ran):
# vendored when missing or when what pins them changed (`make chart-deps vendor-kserve-crds`
# vendors them again anyway).
# Not again on every `make e2e`: .ci/run runs it beside `make test`, whose chart tests read them.
CHART_DEPS := $(CHART)/charts/cert-manager/templates/crds.yaml
KSERVE_FILES := $(CHART)/files/kserve/llmisvcconfigs.yaml

# Third-party packages from the lock file (exact versions and hashes, the ones CI and the image
# use), then the project itself without resolving anything again. uv installs them: a fresh clone
# makes this venv (so does `tilt up`'s), and uv does it in 21 s where pip took 47 (bytecode
# compiled in both). uv itself is pinned and hash-checked (requirements/uv.lock), installed by the
# venv's own pip, which is used for nothing else.
$(STAMP): pyproject.toml requirements/dev.lock requirements/uv.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --require-hashes --no-deps -r requirements/uv.lock
	$(UV_INSTALL) -r requirements/dev.lock
	$(BIN)/uv pip install --quiet --python $(BIN)/python --no-deps -e .
	touch $(STAMP)

## lock: re-resolve pyproject.toml's dependencies into requirements/{runtime,dev,e2e}.lock, the e2e
## model server's into dev/modelserver/requirements.lock, the vLLM CPU image's (with its
## overrides.txt) into dev/vllm-cpu/requirements.lock and requirements/uv.in into uv.lock (uv;
## every lock with the hashes of its files; the versions already locked are kept unless
## UV_ARGS=--upgrade)
lock: $(STAMP)
	$(UV_COMPILE) pyproject.toml --python-version 3.11 -o requirements/runtime.lock
	$(UV_COMPILE) pyproject.toml --extra dev --extra bench --python-version 3.11 -o requirements/dev.lock
	$(UV_COMPILE) pyproject.toml --extra dev --extra bench --extra e2e --python-version 3.11 \
		-o requirements/e2e.lock
	$(UV_COMPILE) dev/modelserver/requirements.in --python-version 3.11 -o dev/modelserver/requirements.lock
	$(UV_COMPILE) dev/vllm-cpu/requirements.in --override dev/vllm-cpu/overrides.txt --python-version 3.11 \
		--python-platform x86_64-unknown-linux-gnu -o dev/vllm-cpu/requirements.lock
	$(UV_COMPILE) requirements/uv.in -o requirements/uv.lock

venv: $(STAMP)

binaries:
	dev/build-controlplane.sh controlplane

## kserve-binaries: KServe's manager and llmisvc, kwok, kube-scheduler (built once, cached; cold ~5 min)
kserve-binaries: binaries
	dev/build-controlplane.sh scheduler >/dev/null
	dev/build-controlplane.sh kwok >/dev/null
	dev/build-controlplane.sh kserve >/dev/null

## observability-tools: Jaeger v2, prometheus and promtool (built once, cached; cold ~5 + ~1 min after kwok)
observability-tools:
	dev/build-controlplane.sh jaeger >/dev/null
	dev/build-controlplane.sh prometheus >/dev/null

## demo: a local cluster with the real KServe controllers, the CRDs, the provider, examples/ applied;
## prints each Instance going Provisioning -> Ready, then the objects and status
demo: $(STAMP) kserve-binaries
	dev/build-controlplane.sh jaeger >/dev/null
	$(BIN)/python dev/scripts/demo.py

## test: lint, type-check and every test (unit + integration on a real kube-apiserver/etcd, and on the
## real KServe controllers)
test: $(STAMP) kserve-binaries observability-tools lint
	$(BIN)/pytest -q

## e2e: (root) a real node (containerd, kubelet, kube-proxy) + control plane, the image, `helm install`
## as the chart README says, and the in-cluster checks; KServe's manager serving a model the test
## trains (scikit-learn, the e2e extra) from a PersistentVolume; the Tilt dev loop (`tilt ci`, live
## update, `tilt down`; the no-root target as an unprivileged user); the host is left as it was.
## In file order: each e2e module is one user's story (serve, then rename, then suspend), its steps
## sharing the served model, and each package's stories share one node; `make test` runs in a random order
## The tools its stories need later (KServe's controllers, Jaeger, Prometheus, tilt) are built when
## first needed, tilt beside the first stories (tests/e2e/conftest.py)
e2e: $(E2E_STAMP) binaries chart-inputs
	dev/build-controlplane.sh node >/dev/null
	$(BIN)/pytest -q -m e2e -p no:randomly tests/e2e

venv-e2e: $(E2E_STAMP)
$(E2E_STAMP): $(STAMP) requirements/e2e.lock
	$(UV_INSTALL) -r requirements/e2e.lock
	touch $(E2E_STAMP)

## demo-cluster: (root) the same cluster with KServe's controllers, the provider deployed by the chart
## and examples/ applied, and a tiny LLM (the vLLM CPU image) answering a chat request; runs until
## Ctrl-C (DEMO_ARGS=--once: print and stop), then restores the host
demo-cluster: $(STAMP) binaries chart-inputs image
	dev/build-controlplane.sh node >/dev/null
	dev/build-controlplane.sh kserve >/dev/null
	$(BIN)/python dev/scripts/demo_cluster.py $(DEMO_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check src tests dev bench
	$(BIN)/ruff format --check src tests dev bench
	$(BIN)/mypy
	PYTHONPATH=dev $(BIN)/lint-imports --no-cache

unit: $(STAMP)
	$(BIN)/pytest -q tests/unit

integration: $(STAMP) kserve-binaries observability-tools
	$(BIN)/pytest -q -m integration

## image: the provider image from dev/Dockerfile with buildah (no Docker, no registry; root), plus the
## node's pause image: build/image/provider-kserve-<version>.{docker,oci}.tar
image:
	dev/build-image.sh all

## generate: definition/ + parameter models + rbac.py -> generated chart files and published schemas
generate: $(STAMP)
	$(BIN)/provider-kserve generate

generate-check: $(STAMP)
	$(BIN)/provider-kserve generate --check

## vendor-kserve-crds: KServe v0.20.0 CRDs -> chart crds/, presets -> files/kserve/ (checksummed, gitignored)
vendor-kserve-crds:
	KSERVE_SRC=$(KSERVE_SRC) $(CHART)/hack/vendor-kserve.sh
$(KSERVE_FILES): $(CHART)/hack/vendor-kserve.sh $(wildcard $(CHART)/hack/kserve-*.sha256)
	KSERVE_SRC=$(KSERVE_SRC) $(CHART)/hack/vendor-kserve.sh
	touch $@

## chart-deps: the KServe and cert-manager subcharts, vendored from their Go modules (no registry)
chart-deps:
	$(CHART)/hack/vendor-chart-deps.sh
$(CHART_DEPS): $(CHART)/Chart.yaml $(CHART)/hack/vendor-chart-deps.sh
	$(CHART)/hack/vendor-chart-deps.sh
	touch $@
## chart-inputs: both, unless vendored already
chart-inputs: $(CHART_DEPS) $(KSERVE_FILES)

helm-lint: $(KSERVE_FILES)
	$(HELM) lint charts/provider-kserve

## bench: the runtime alone, in-process; bench-scale: the real provider at 1000/10000 Instances beside
## its null-provider floor, every target in one table, the figures in bench-figures/ (docs/performance.md);
## bench-profile: py-spy on the provider converging 1000 llm Instances (the converge process's profile
## summarised)
bench: $(STAMP) binaries
	$(BIN)/python bench/converge_null.py 100 1000

bench-scale: $(STAMP) binaries
	$(BIN)/python bench/scale.py --out bench-results.json --figures bench-figures

bench-profile: $(STAMP) binaries
	rm -f bench-profile.*
	BENCH_PROFILE=$(CURDIR)/bench-profile $(BIN)/python bench/scale.py --topologies llm --sizes 1000 --no-churn
	$(BIN)/python bench/profile_summary.py bench-profile.scale-llm-1000.0

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
