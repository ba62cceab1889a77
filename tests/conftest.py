"""Shared fixtures: one local Spark session for the whole run, and the broker-written golden stores."""
from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

REPO_ROOT = Path(__file__).resolve().parents[1]
GOLDEN_DIR = REPO_ROOT.parent / "shared" / "golden"

# tests marked ``full`` (longer variants of what the default suite already covers: more scenarios,
# more Airflow runs, more cluster failure modes) run with PIPELINES_FULL_SUITE=1 (``make test-full``)
FULL_SUITE = os.environ.get("PIPELINES_FULL_SUITE", "") not in ("", "0")

SPARK_MASTER = "local[2]"
SPARK_APP_NAME = "rocketmq-offline-index-tests"
SPARK_TEST_CONF = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.driver.memory": "2g",
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if FULL_SUITE:
        return
    skip = pytest.mark.skip(reason="longer variant: runs with PIPELINES_FULL_SUITE=1 (make test-full)")
    for item in items:
        if item.get_closest_marker("full") is not None:
            item.add_marker(skip)


# seconds per test module (setup, call and teardown of its tests; a session fixture's work, such as the DLedger
# stores the broker writes once, counts for the module whose test first asked for it): printed at the end of the run,
# so that the suite's 20-minute budget can be kept module by module
_MODULE_SECONDS: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    module = report.nodeid.split("::", 1)[0]
    _MODULE_SECONDS[module] = _MODULE_SECONDS.get(module, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    if "broker_harness" in sys.modules:
        summary = sys.modules["broker_harness"].prewrite_summary()
        if summary:
            terminalreporter.write_line(summary)
    if not _MODULE_SECONDS:
        return
    ranked = sorted(_MODULE_SECONDS.items(), key=lambda kv: -kv[1])
    terminalreporter.write_sep("=", f"slowest {min(20, len(ranked))} modules (of {len(ranked)}, "
                                    f"{sum(_MODULE_SECONDS.values()):.0f} s in tests)")
    for module, seconds in ranked[:20]:
        terminalreporter.write_line(f"{seconds:8.1f}s  {module}")


@pytest.fixture(autouse=True)
def _big_store_dropped(request: pytest.FixtureRequest) -> Iterator[None]:
    """A ``big_store`` test's ``tmp_path`` (stores of gigabytes) is deleted when it ends, passed or failed: pytest
    keeps every tmp_path of a run, and a few such stores would fill the disk, where the broker then deletes files
    (its forced clean) and the next scenarios are not what they mean."""
    yield
    tmp = getattr(request.node, "funcargs", {}).get("tmp_path")
    if request.node.get_closest_marker("big_store") is not None and tmp is not None:
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture
def dledger_written(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The DLedger scenario of the test's ``name`` (else ``line``) parameter as the broker wrote it: every scenario of
    :mod:`broker_dledger_runs` written, and rebuilt, once a pytest session (the DLedger broker modules use it through
    ``pytest.mark.usefixtures``)."""
    from broker_dledger_runs import written_run
    return written_run(request, tmp_path_factory)


# shared fixtures whose stores the broker writes once a session, for the modules that use them: fixture name ->
# (module, attribute) of their broker_harness.Stores
_SHARED_STORES = {"dledger_written": ("broker_dledger_runs", "STORES")}


def _stores_of(item: pytest.Item) -> list:
    """The broker stores ``item``'s module writes (every ``broker_harness.Stores`` at its module level) and those of
    the shared fixtures it uses."""
    import importlib

    import broker_harness as bh
    found = [v for v in vars(item.module).values() if isinstance(v, bh.Stores)] if item.module else []
    for fixture, (module, attr) in _SHARED_STORES.items():
        if fixture in getattr(item, "fixturenames", ()):
            found.append(getattr(importlib.import_module(module), attr))
    return found


@pytest.fixture(scope="session", autouse=True)
def _broker_stores_beforehand(request: pytest.FixtureRequest,
                              tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The broker writes the stores of the run's broker modules in the background, one set after the other in the
    order the run reaches them (broker_harness.prewrite): their writers wait out the stores' shutdown sleeps while
    the tests before them run. Not begun ones are dropped at the end of the run."""
    import broker_harness as bh
    sets, seen = [], set()
    for item in request.session.items:
        if item.get_closest_marker("skip") is not None:
            continue
        for stores in _stores_of(item):
            if stores.key() not in seen:
                seen.add(stores.key())
                sets.append((stores, tmp_path_factory.mktemp("beforehand")))
    if sets and bh.missing_tools() is None:
        bh.prewrite(sets)
    yield
    bh.stop_prewriting()


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """A ``local[2]`` session whose Python workers run this interpreter, stopped after the run; with
    delta-spark's jars when they are cached (``make delta-jars``: :mod:`pipelines.delta_jars`), in
    this one JVM."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pipelines.delta_jars import WRITER_CONF
    from pipelines.session import build_spark_session

    # the context gets delta-spark's cached jars (a local run's --table-writer delta-spark), so that
    # tests/test_delta_spark.py can switch this one session to it; the other tables tests write
    # through delta-rs, a local run's default
    session = build_spark_session(master=SPARK_MASTER, app_name=SPARK_APP_NAME,
                                  extra_conf={**SPARK_TEST_CONF, WRITER_CONF: "delta-spark"})
    session.conf.set(WRITER_CONF, "delta-rs")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def golden_dir() -> Path:
    """``../shared/golden`` beside the repository: one folder per broker-written case."""
    if not GOLDEN_DIR.is_dir():
        pytest.skip(f"no golden stores at {GOLDEN_DIR}: put the shared/ folder beside the repository")
    return GOLDEN_DIR


@pytest.fixture(scope="session")
def golden_rebuilt(spark, golden_dir, tmp_path_factory):
    """``rebuilt(case)``: the folder of the case's Spark rebuild from its commitlog and broker.conf,
    with the Delta tables in ``tables/`` beside ``consumequeue/`` and ``index/``, made once per run
    (the golden test checks its files against the broker's; the answer tests read its tables)."""
    from pipelines.rebuild import run_rebuild
    from store_format.config import load_broker_config

    done: dict[str, tuple[Path, object]] = {}

    def rebuilt(case: str) -> tuple[Path, object]:
        if case not in done:
            out = tmp_path_factory.mktemp(f"golden-{case}") / "out"
            config = load_broker_config((golden_dir / case / "broker.conf").read_text())
            # small splits force resynchronization inside every segment
            split = 96 * 1024 if case.startswith("corrupt") else 384 * 1024
            summary = run_rebuild(str(golden_dir / case / "store"), str(out), config, spark=spark, split_size=split,
                                  tables=str(out / "tables"))
            done[case] = (out, summary)
        return done[case]

    return rebuilt


@pytest.fixture()
def small_store(tmp_path: Path) -> Path:
    """A 300-message sample store with small file sizes and its broker.conf, in ``tmp_path/store``."""
    from store_format.config import load_broker_config
    from store_format.sample import generate_sample_store, write_broker_conf

    root = tmp_path / "store"
    config = load_broker_config("mappedFileSizeCommitLog=1048576\nmappedFileSizeConsumeQueue=6000\n"
                                "maxHashSlotNum=100\nmaxIndexNum=400\n")
    generate_sample_store(str(root), config, messages=300, body_size=64)
    write_broker_conf(str(root / "broker.conf"), config)
    return root
