# make run   : rebuild a store (STORE=path, or a generated demo store) into OUT on local Spark
# make test  : lint (ruff, mypy) and the whole test suite, golden stores included
# make bench : pipelines.bench with BENCH_ARGS
SHELL := /bin/bash

PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
# written after a successful install; a newer pyproject.toml triggers a reinstall
STAMP := $(VENV)/.installed
# written after the kernels were compiled and the JVM class archive made (python -m pipelines.warm)
WARM := $(VENV)/.warmed

STORE ?=
OUT ?= demo/out
BENCH_ARGS ?=

.PHONY: venv java warm live-broker run test test-full bench clean

venv: $(STAMP)

$(VPY):
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(VPY)
	$(VPY) -m pip install --disable-pip-version-check -e '.[dev]'
	touch $@

# Spark needs a JVM: install Java 17 when none is on PATH
java:
	@if java -version >/dev/null 2>&1; then \
	  echo "java: $$(java -version 2>&1 | head -n 1)"; \
	else \
	  if [ "$$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi; \
	  $$sudo apt-get update && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y openjdk-17-jre-headless; \
	fi

# compile the numba kernels once (every Spark Python worker loads them from the cache) and write the
# class archive that starts local Spark JVMs faster; give this venv's spark-submit the project's log configuration
warm: $(WARM)

$(WARM): $(STAMP) pipelines/warm.py pipelines/log4j2.properties | java
	PYSPARK_PYTHON=$(abspath $(VPY)) $(VPY) -m pipelines.warm
	touch $@

# the live-broker test's Java program against RocketMQ's published jars (resolved from Maven Central the
# first time, then from the local Maven cache)
LIVE_STAMP := tests/live/.built
live-broker: $(LIVE_STAMP)

$(LIVE_STAMP): tests/live/pom.xml tests/live/rmq-4.9.8/pom.xml tests/live/rmq-5.5.0/pom.xml tests/live/rmq-5.5.1/pom.xml $(wildcard tests/live/src/*/*)
	@if command -v mvn >/dev/null 2>&1; then \
	  mvn -q -B -Dstyle.color=never package -f tests/live/pom.xml && touch $@; \
	else echo "mvn not found: the live-broker test will be skipped"; fi

# delta-spark's jars, fetched once from Maven Central into $(VENV)/delta-jars (python -m pipelines.delta_jars):
# local runs put them on Spark's classpath and write the tables with delta-spark; without them (no
# Maven, no network) the tables are written with delta-rs
DELTA_JARS := $(VENV)/delta-jars/.fetched
.PHONY: delta-jars
delta-jars: $(DELTA_JARS)
$(DELTA_JARS): | $(STAMP)
	$(VPY) -m pipelines.delta_jars && touch $@ || echo "delta jars: not fetched; the tables are written with delta-rs"
run test: delta-jars

# Spark's Python workers use the venv's interpreter
run test bench: export PYSPARK_PYTHON := $(abspath $(VPY))
run test bench: export PYSPARK_DRIVER_PYTHON := $(abspath $(VPY))

run: venv java warm
	$(VPY) -m pipelines demo $(if $(STORE),--store $(STORE),) --out $(OUT)

# the Data Docs test renders pages in headless Chromium (Debian package chromium); without it that test skips
test: venv java warm live-broker
	@if command -v chromium >/dev/null 2>&1; then \
	  echo "chromium: $$(chromium --version 2>/dev/null | head -n 1)"; \
	else \
	  if [ "$$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi; \
	  { $$sudo apt-get update && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium; } \
	    || echo "chromium could not be installed: the Data Docs browser test will be skipped"; \
	fi
	$(VPY) -m ruff check store_format pipelines tests
	$(VPY) -m mypy
	$(VPY) -m pytest -q

# everything, the longer variants too (tests marked full): more Airflow runs, cluster failure modes
test-full: export PIPELINES_FULL_SUITE := 1
test-full: test

bench: venv java warm harness
	$(VPY) -m pipelines.bench $(BENCH_ARGS)

# --- broker harness (tests/broker): the published RocketMQ store as the test oracle -------------
# make harness     : resolve the Maven dependencies once (online the first time, then from ~/.m2)
#                    and build offline; without a JDK or Maven one line says so (the tests skip)
# make conformance : the conformance tests with more scenarios (CONFORMANCE_SCENARIOS, CONFORMANCE_SEED)
.PHONY: harness conformance
HARNESS_POM := tests/broker/pom.xml
CONFORMANCE_SCENARIOS ?= 12
CONFORMANCE_SEED ?=

harness:
	@if ! command -v mvn >/dev/null 2>&1 || ! command -v javac >/dev/null 2>&1; then \
	  echo "harness: no JDK/Maven here: the broker conformance tests will be skipped"; \
	elif mvn -o -q -B -f $(HARNESS_POM) package >/dev/null 2>&1; then \
	  echo "harness: built (offline)"; \
	else \
	  mvn -q -B -f $(HARNESS_POM) package && echo "harness: dependencies resolved and built"; \
	fi

# make test builds it too
test: harness

conformance: export PYSPARK_PYTHON := $(abspath $(VPY))
conformance: export PYSPARK_DRIVER_PYTHON := $(abspath $(VPY))
conformance: venv java warm harness
	CONFORMANCE_SCENARIOS=$(CONFORMANCE_SCENARIOS) CONFORMANCE_SEED=$(CONFORMANCE_SEED) \
	  $(VPY) -m pytest -q -s tests/test_conformance_broker.py
# --- end broker harness ------------------------------------------------------------------------

# generated outputs and caches; keeps .venv and bench-data/
clean:
	rm -rf demo build dist *.egg-info .pytest_cache .hypothesis spark-warehouse metastore_db derby.log
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +
