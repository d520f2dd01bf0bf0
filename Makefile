# The two entry points: `make demo` and `make test`. Each installs what it needs.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test bench chart-readme docs constraints dist clean

$(STAMP): pyproject.toml
	@$(PYTHON) -m venv $(VENV) || { echo "error: could not create a virtual environment; install python3-venv (apt-get install python3-venv)" >&2; exit 1; }
	@$(PY) -m pip install -q --upgrade pip
	@$(PY) -m pip install -q -e '.[dev,simulator,web]'
	@touch $(STAMP)

demo: $(STAMP)
	@scripts/ensure-system-deps
	@$(VENV)/bin/kafka-jmx-sidecar demo

test: $(STAMP)
	@scripts/ensure-system-deps --test
	@# the real Kafka brokers and jmx_exporter releases, from Maven Central into ~/.cache (once)
	@$(PY) -m harness.programs fetch
	@# the project's bytecode, once: the tests start hundreds of Python processes, which would each
	@# compile what they import when PYTHONDONTWRITEBYTECODE is set (it only stops the writing)
	@$(PY) -m compileall -q -j 0 kafka_jmx_sidecar exporter mbeans harness tests bench >/dev/null
	@$(PY) -m pytest -q $(PYTEST_ARGS)

bench: $(STAMP)
	@scripts/ensure-system-deps --test
	@$(PY) -m harness.programs fetch
	@# every program in bench/, run as a module from here (modules without a __main__ guard are helpers)
	@for b in bench/*.py; do grep -q '__main__' $$b || continue; name=$$(basename $$b .py); \
		echo "== bench.$$name"; $(PY) -m bench.$$name || exit 1; done

# the values table of helm/kafka-jmx-sidecar/README.md, from values.yaml (a test checks it is current)
chart-readme: $(STAMP)
	@$(PY) scripts/chart-values-table

# the images' pinned dependencies, scripts/image/constraints.txt: the newest versions pyproject.toml's
# ranges allow, resolved in a fresh virtual environment with the image's Python (PYTHON=python3.11)
constraints:
	@$(PYTHON) scripts/constraints

# a release in dist/: the sdist, the wheel built from it, and the Helm chart's archive
dist: $(STAMP)
	@rm -rf dist
	@$(PY) -m build --quiet --outdir dist . && ls -1 dist/*
	@$(PY) scripts/package-chart dist

# docs/configuration.md, docs/metrics.md and the JSON Schemas, from the code's definitions (a test
# checks they are current)
docs: $(STAMP)
	@$(PY) scripts/generate-docs

clean:
	rm -rf $(VENV) .pytest_cache build dist *.egg-info
