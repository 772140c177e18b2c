# All set-up happens here, so a fresh machine needs only Python 3.11+, Go 1.26+
# and make: `make test` creates the virtual environment, builds the control
# plane (cached outside the clone) and runs every test, integration included.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml constraints.txt | sha256sum | cut -c1-12)

.PHONY: tools e2e node test unit integration chaos differential lint format controlplane demo bench bench-simulate bench-autoscale venv clean

venv: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[test,lint,bench,release]'
	@rm -f $(VENV)/.installed-*
	@touch $@

controlplane:
	@hack/build-controlplane.sh >/dev/null

# helm (hack/helm, helm.sh/helm/v4) and krew with its manifest validator
# (hack/krew, sigs.k8s.io/krew), built from their pinned modules and cached in
# ~/.cache/pyscheduler/helm and .../krew like the control plane: the Helm chart
# and krew manifest tests use them (they build them when missing, too).
tools:
	@nice -n 10 hack/build-helm.sh >/dev/null
	@nice -n 10 hack/build-krew.sh >/dev/null

# kubelet + kube-proxy for the end-to-end suite only (issue 26); never needed by
# `make test`. Cached like the control plane, in ~/.cache/pyscheduler/node.
node:
	@nice -n 10 hack/build-node.sh >/dev/null

test: venv controlplane
	-@$(MAKE) --no-print-directory tools  # a failed build: those tests fail, saying so
	$(BIN)/pytest

# The end-to-end suite (issue 26): as root on Debian 12, installs containerd,
# runc, the CNI plugins, buildah, debootstrap and prometheus when missing, builds
# the Dockerfile's image, runs a real node, applies manifests/ and scrapes it
# with Prometheus; tears everything down. `make test` skips tests/e2e.
e2e: venv controlplane node
	@hack/e2e/setup-host.sh
	PYSCHEDULER_E2E=1 $(BIN)/pytest tests/e2e -x

unit: venv
	$(BIN)/pytest tests/unit

integration: venv controlplane
	-@$(MAKE) --no-print-directory tools
	$(BIN)/pytest tests/integration

# The chaos suite at full size (500 pods on 50 nodes per scenario) and the fuzz
# tests with 20x the examples; `make test` runs both at a short size.
chaos: venv controlplane
	PYSCHEDULER_FUZZ_EXAMPLES=2000 $(BIN)/pytest tests/unit/fuzz
	PYSCHEDULER_CHAOS_FULL=1 $(BIN)/pytest tests/integration/chaos

# Ours against upstream kube-scheduler on randomized workloads, longer than the
# default run: e.g. make differential DIFF_SEEDS=200 DIFF_PODS=100
DIFF_SEEDS ?= 100
DIFF_PODS ?= 50
differential: venv controlplane
	PYSCHEDULER_DIFF_SEEDS=$(DIFF_SEEDS) PYSCHEDULER_DIFF_PODS=$(DIFF_PODS) \
		$(BIN)/pytest tests/integration/test_differential.py

demo: venv controlplane
	PYTHONPATH=. $(BIN)/python examples/demo.py
	PYTHONPATH=. $(BIN)/python examples/autoscale_demo.py

# pyscheduler against upstream kube-scheduler and the ceiling binder
# (SchedulingBasic, 5000 nodes, both modes, 3 rounds); results go to
# bench/results/, then `python -m bench.publish` updates docs/benchmarks.md;
# e.g. make bench BENCH_ARGS="--workload scale"
# Measure on a release build of Python (docs/benchmarks.md, "Which Python"), e.g.
# make bench PYTHON=/usr/bin/python3.11 VENV=$HOME/.cache/pyscheduler/venv-release
# Then simulate's pure decision throughput on the same workload (no API server).
bench: venv controlplane
	PYTHONPATH=. $(BIN)/python -m bench.run $(BENCH_ARGS)
	PYTHONPATH=. $(BIN)/python -m bench.simulate $(SIM_BENCH_ARGS)

# simulate alone: e.g. make bench-simulate SIM_BENCH_ARGS="--nodes 500 --pods 1000"
bench-simulate: venv
	PYTHONPATH=. $(BIN)/python -m bench.simulate $(SIM_BENCH_ARGS)

# AutoscaleEnforcer: VM pods over 500 nodes while agents send 1000 requests/s
# (pyscheduler only); AUTOSCALE_BENCH_ARGS="--nodes 50 --vms 200 --rate 300" for a quick run.
bench-autoscale: venv controlplane
	PYTHONPATH=. $(BIN)/python -m bench.autoscale $(AUTOSCALE_BENCH_ARGS)

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

format: venv
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
