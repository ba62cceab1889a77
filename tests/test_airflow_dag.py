"""The Airflow DAG: it parses, its task graph is as designed, and ``dag.test()`` runs it for real.

Every Airflow call runs in a child process with ``AIRFLOW_HOME`` in a temporary folder and a SQLite
metadata database (``airflow db migrate``): Airflow configures itself and its logging once per
process, and the task logs (``dag.test()`` prints them) are what some tests read.  The rebuild task
spark-submits with the venv's ``spark-submit`` (``.venv/bin`` first on ``PATH``) to the master of
the Spark connection ``rocketmq_test_spark`` (``local[2]``, from an ``AIRFLOW_CONN_*`` variable).

The runs against generated stores (tiny: 1 MiB segments, a few thousand messages) go in order:
clean store (everything runs, artifacts left), same store again (skipped after
``commitlog_changed``), a segment touched (rebuilt over the previous output), and a store with a
flipped body byte (fails at ``validate``, the failing expectation in the log).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
DAG_FOLDER = REPO_ROOT / "airflow_dags"
DAG_FILE = DAG_FOLDER / "rocketmq_index_rebuild.py"
DAG_ID = "rocketmq_index_rebuild"
CONN_ID = "rocketmq_test_spark"
MESSAGES = 3000
GROUP = "demo-consumer"
LMQ_CASE = "lmq-4.9.8"
DAY_MS = 86_400_000
CHAIN = ["check_settings", "commitlog_changed", "rebuild", "validate", "audit", "loss_check"]
AFTER_SHORT_CIRCUIT = ["rebuild", "validate", "audit", "loss_check", "unconsumed_loss", "no_unconsumed_loss"]

DESCRIBE = r"""
import json, sys
from airflow.dag_processing.dagbag import DagBag
bag = DagBag(dag_folder=sys.argv[1])
out = {"import_errors": {k: str(v) for k, v in bag.import_errors.items()}, "dags": {}}
for dag_id, dag in bag.dags.items():
    tasks = {}
    for t in dag.tasks:
        timeout = t.execution_timeout
        tasks[t.task_id] = {
            "upstream": sorted(t.upstream_task_ids), "downstream": sorted(t.downstream_task_ids),
            "classes": [c.__name__ for c in type(t).__mro__], "retries": t.retries,
            "execution_timeout": timeout.total_seconds() if timeout else None,
            "application": getattr(t, "application", None), "conn_id": getattr(t, "_conn_id", None),
            "conf": getattr(t, "conf", None)}
    out["dags"][dag_id] = {"schedule": dag.schedule, "max_active_runs": dag.max_active_runs,
                           "params": {k: dag.params[k] for k in dag.params}, "tasks": tasks,
                           "dagrun_timeout": dag.dagrun_timeout.total_seconds() if dag.dagrun_timeout else None}
print("DESCRIBE " + json.dumps(out, default=str))
"""

RUN = r"""
import json, sys
from airflow.dag_processing.dagbag import DagBag
bag = DagBag(dag_folder=sys.argv[1])
dag = bag.dags[sys.argv[2]]
dr = dag.test(run_conf=json.loads(sys.argv[3]))
tasks = {ti.task_id: {"state": str(ti.state.value if hasattr(ti.state, "value") else ti.state),
                      "try_number": ti.try_number} for ti in dr.get_task_instances()}
state = dr.state.value if hasattr(dr.state, "value") else dr.state
print("DAG_TEST_RESULT " + json.dumps({"state": str(state), "run_id": dr.run_id, "tasks": tasks}))
"""


# ---------------------------------------------------------------------------------------------
# stores and the Airflow home


def _store_config():
    from store_format.config import load_broker_config
    from store_format.sample import DEMO_BROKER_CONF
    # the demo settings with 1 MiB segments: a few thousand messages fill two segments
    return load_broker_config(DEMO_BROKER_CONF, mappedFileSizeCommitLog=1 << 20)


def _make_store(root: Path) -> Path:
    from store_format.sample import generate_sample_store, write_broker_conf
    config = _store_config()
    generate_sample_store(str(root), config, messages=MESSAGES, body_size=256, seed=7)
    write_broker_conf(str(root / "broker.conf"), config)
    return root


def _first_record_with_body(store: Path) -> int:
    from store_format.corruption import read_record_head
    offset = 0
    while True:
        head = read_record_head(store, offset)
        if head["bodyLength"] > 0:
            return offset
        offset += head["totalSize"]


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Path]]:
    """A clean demo store whose first segment is old enough to go at the next cleanup while a consumer
    group has not read it, a copy with one body byte flipped, and the golden light queue store."""
    base = tmp_path_factory.mktemp("stores")
    demo = _make_store(base / "demo" / "store")
    segments = sorted((demo / "commitlog").iterdir())
    assert len(segments) >= 2, "the demo store should span two segments (the last one is never deleted)"
    old = time.time() - 5 * DAY_MS / 1000  # beyond fileReservedTime (72 h)
    os.utime(segments[0], (old, old))
    (demo / "config").mkdir()
    (demo / "config" / "consumerOffset.json").write_text(json.dumps(
        {"offsetTable": {f"SampleTopic0@{GROUP}": {"0": 0, "1": 0, "2": 0, "3": 0}}}))
    corrupt = _make_store(base / "corrupt" / "store")
    from store_format.corruption import flip_body_byte
    flip_body_byte(corrupt, _first_record_with_body(corrupt))
    named = [("demo", demo), ("corrupt", corrupt)]
    from conftest import GOLDEN_DIR
    if (GOLDEN_DIR / LMQ_CASE).is_dir():   # a broker-written store with light queues (multi-dispatch)
        lmq = base / "lmq" / "store"
        shutil.copytree(GOLDEN_DIR / LMQ_CASE / "store", lmq)
        shutil.copy(GOLDEN_DIR / LMQ_CASE / "broker.conf", lmq / "broker.conf")
        named.append(("lmq", lmq))
    out = {}
    for name, store in named:
        out[name] = {"store": store, "out": store.parent / "out", "config": store / "broker.conf",
                     "tables": store.parent / "out" / "tables"}
    return out


@pytest.fixture(scope="module")
def airflow_env(tmp_path_factory: pytest.TempPathFactory, stores: dict[str, dict[str, Path]]) -> dict[str, str]:
    """Environment of the Airflow child processes; the metadata database is migrated once."""
    home = tmp_path_factory.mktemp("airflow_home")
    stores_file = home / "stores.json"
    stores_file.write_text(json.dumps({
        name: {"store": str(s["store"]), "out": str(s["out"]), "config": str(s["config"]), "spark_conn_id": CONN_ID,
               "spark_conf": {"spark.ui.enabled": "false"}, "schedule": None,
               # a failure meant to be retried is retried 3 s later, not minutes (a retry is no hang)
               "retry_delay_minutes": 0.05,
               # the maintenance tasks after validate, on the light queue store (which runs them)
               **({"optimize": True, "vacuum_retain_hours": 0} if name == "lmq" else {})}
        for name, s in stores.items()}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "ROCKETMQ_INDEX_"))}
    env.update({
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAG_FOLDER),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
        f"AIRFLOW_CONN_{CONN_ID.upper()}": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        "ROCKETMQ_INDEX_STORES": str(stores_file),
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    })
    done = subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return env


def _describe(env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", DESCRIBE, str(DAG_FOLDER)], env=env, capture_output=True, text=True,
                          timeout=300)
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith("DESCRIBE ")), None)
    assert line is not None, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(line[len("DESCRIBE "):])


def _dag_test(env: dict[str, str], dag_id: str, conf: dict[str, Any], log_file: Path) -> tuple[dict[str, Any], str]:
    """``dag.test()`` in a child process: the run's states, and its log (task logs included)."""
    with open(log_file, "w") as log:  # written as it runs: readable even when the run times out
        try:
            subprocess.run([sys.executable, "-c", RUN, str(DAG_FOLDER), dag_id, json.dumps(conf)], env=env,
                           stdout=log, stderr=subprocess.STDOUT, text=True, timeout=900)
        except subprocess.TimeoutExpired:
            pytest.fail(f"dag.test() of {dag_id} took over 15 minutes; log: {log_file}")
    text = log_file.read_text()
    line = next((ln for ln in text.splitlines() if ln.startswith("DAG_TEST_RESULT ")), None)
    assert line is not None, f"dag.test() did not finish (log: {log_file}):\n{text[-5000:]}"
    return json.loads(line[len("DAG_TEST_RESULT "):]), text


def _states(result: dict[str, Any]) -> dict[str, str]:
    return {t: v["state"] for t, v in result["tasks"].items()}


# ---------------------------------------------------------------------------------------------
# parsing and the task graph


@pytest.fixture(scope="module")
def described(airflow_env: dict[str, str]) -> dict[str, Any]:
    return _describe(airflow_env)


def test_dag_folder_imports_without_errors(described: dict[str, Any], stores: dict) -> None:
    assert described["import_errors"] == {}
    assert sorted(described["dags"]) == [DAG_ID] + sorted(f"{DAG_ID}__{name}" for name in stores)
    assert {"corrupt", "demo"} <= set(stores)


def test_dag_folder_imports_without_a_stores_file(airflow_env: dict[str, str]) -> None:
    env = {k: v for k, v in airflow_env.items() if k != "ROCKETMQ_INDEX_STORES"}
    described = _describe(env)
    assert described["import_errors"] == {}
    assert list(described["dags"]) == [DAG_ID]
    assert described["dags"][DAG_ID]["schedule"] == "@daily"


def test_task_graph(described: dict[str, Any]) -> None:
    for dag_id, dag in described["dags"].items():
        tasks = dag["tasks"]
        maintenance = ["optimize_tables", "vacuum_tables"] if dag_id == f"{DAG_ID}__lmq" else []
        assert sorted(tasks) == sorted(CHAIN + ["unconsumed_loss", "no_unconsumed_loss"] + maintenance), dag_id
        if maintenance:   # after validate, beside the audit: optimize, then vacuum
            assert tasks["validate"]["downstream"] == ["audit", "optimize_tables"]
            assert tasks["optimize_tables"]["downstream"] == ["vacuum_tables"]
            assert tasks["vacuum_tables"]["upstream"] == ["optimize_tables"]
            assert all("PythonOperator" in tasks[t]["classes"] for t in maintenance)
        for before, after in zip(CHAIN, CHAIN[1:]):
            if before != "validate" or not maintenance:
                assert tasks[before]["downstream"] == [after], (dag_id, before)
            assert tasks[after]["upstream"] == [before], (dag_id, after)
        assert tasks["check_settings"]["upstream"] == []
        assert tasks["loss_check"]["downstream"] == ["no_unconsumed_loss", "unconsumed_loss"]
        assert tasks["unconsumed_loss"]["downstream"] == tasks["no_unconsumed_loss"]["downstream"] == []
        # one run at a time per store, and no run without an end
        assert dag["max_active_runs"] == 1 and dag["dagrun_timeout"]

        assert "ShortCircuitOperator" in tasks["commitlog_changed"]["classes"]
        assert "BranchPythonOperator" in tasks["loss_check"]["classes"]
        rebuild = tasks["rebuild"]
        assert "SparkSubmitOperator" in rebuild["classes"]
        assert Path(rebuild["application"]) == REPO_ROOT / "pipelines" / "spark_submit.py"
        assert Path(rebuild["application"]).is_file()
        # validation and audit are plain Python, not spark-submit
        for name in ("validate", "audit"):
            assert "SparkSubmitOperator" not in tasks[name]["classes"]
            assert "PythonOperator" in tasks[name]["classes"]
        # a user error fails at once; the Spark job retries, every task has a time limit
        assert tasks["check_settings"]["retries"] == 0
        assert tasks["validate"]["retries"] >= 1 and tasks["audit"]["retries"] >= 1
        assert rebuild["retries"] >= 1
        assert all(t["execution_timeout"] for t in tasks.values() if "EmptyOperator" not in t["classes"])
    dags = described["dags"]
    assert dags[DAG_ID]["tasks"]["rebuild"]["conn_id"] == "spark_default"
    assert dags[f"{DAG_ID}__demo"]["tasks"]["rebuild"]["conn_id"] == CONN_ID
    assert dags[f"{DAG_ID}__demo"]["tasks"]["rebuild"]["conf"] == {"spark.ui.enabled": "false"}
    assert dags[f"{DAG_ID}__demo"]["schedule"] is None
    assert dags[f"{DAG_ID}__demo"]["params"]["store"].endswith("demo/store")
    assert dags[DAG_ID]["params"]["store"] == ""


@pytest.mark.parametrize("conn, master, engine", [
    (("spark", "local[2]", None), "local[2]", "arrow"),
    (("spark", "local", None), "local", "arrow"),
    (("spark", "local[*]", None), "local[*]", "arrow"),
    (("spark", "yarn", None), "yarn", "spark"),
    (("spark", "spark://master", 7077), "spark://master:7077", "spark"),
    (("spark", "master", 7077), "spark://master:7077", "spark"),
    (("k8s", "https://api.cluster", 6443), "k8s://https://api.cluster:6443", "spark"),
    (("spark", "local-cluster[2,1,1024]", None), "local-cluster[2,1,1024]", "spark"),
])
def test_validate_engine_follows_the_spark_connection(conn: tuple, master: str, engine: str) -> None:
    """The validate task's engine: Spark when the Spark connection is a cluster, Arrow on a local master
    (the master read from the connection as the Spark provider's spark-submit hook reads it)."""
    from pipelines.validate.engine import engine_for_master, spark_master_url
    assert spark_master_url(*conn) == master
    assert engine_for_master(master) == engine
    assert engine_for_master(None) == "arrow"
    assert "_validate_engine(spark_conn_id)" in DAG_FILE.read_text()


def test_dag_source_keeps_to_airflow_3_and_public_means() -> None:
    source = DAG_FILE.read_text()
    for banned in ("schedule_interval", "execution_date", "_connection", "airflow.models", "settings.Session"):
        assert banned not in source, banned


# ---------------------------------------------------------------------------------------------
# dag.test() runs




@pytest.mark.full
@pytest.mark.slow
def test_missing_setting_fails_at_once_without_retry(airflow_env: dict[str, str], tmp_path: Path) -> None:
    result, log = _dag_test(airflow_env, DAG_ID, {}, tmp_path / "missing.log")
    states = _states(result)
    assert result["state"] == "failed"
    assert states["check_settings"] == "failed" and result["tasks"]["check_settings"]["try_number"] == 1
    assert all(states[t] == "upstream_failed" for t in CHAIN[1:])
    assert "missing setting(s) store, out, config" in log and "rocketmq_index_store" in log


@pytest.mark.full
@pytest.mark.slow
def test_relative_path_fails_at_once(airflow_env: dict[str, str], stores: dict, tmp_path: Path) -> None:
    demo = stores["demo"]
    conf = {"store": "store", "out": str(tmp_path / "out"), "config": str(demo["config"])}
    result, log = _dag_test(airflow_env, DAG_ID, conf, tmp_path / "relative.log")
    assert result["state"] == "failed" and result["tasks"]["check_settings"]["try_number"] == 1
    assert "store='store' is a relative path" in log


@pytest.fixture(scope="module")
def clean_run(airflow_env: dict[str, str], stores: dict, tmp_path_factory: pytest.TempPathFactory
              ) -> tuple[dict[str, Any], str]:
    return _dag_test(airflow_env, f"{DAG_ID}__demo", {}, tmp_path_factory.mktemp("logs") / "clean.log")


@pytest.mark.slow
@pytest.mark.spark
def test_clean_store_runs_and_leaves_the_artifacts(clean_run: tuple[dict[str, Any], str], stores: dict) -> None:
    from pipelines.delta import read_arrow
    from store_format.reput import rebuild_in_memory
    from store_format.store import open_store

    result, log = clean_run
    states = _states(result)
    assert result["state"] == "success", states
    assert all(states[t] == "success" for t in CHAIN), states
    demo = stores["demo"]
    out, tables = demo["out"], demo["tables"]

    # spark-submit to the connection's master, replacing earlier output
    app = REPO_ROOT / "pipelines" / "spark_submit.py"
    assert (f"spark-submit --master local[2] --conf spark.ui.enabled=false --name {DAG_ID}__demo-rebuild {app} "
            f"--store {demo['store']} --out {out} --config {demo['config']} --tables {tables} --overwrite") in log

    # the rebuilt files are the reference rebuild's, byte for byte
    config = _store_config()
    ref = rebuild_in_memory(open_store(str(demo["store"]), config), config)
    cq = {str(p.relative_to(out / "consumequeue")): p.read_bytes()
          for p in (out / "consumequeue").rglob("*") if p.is_file()}
    assert cq == ref.consumequeue
    assert [(p.name, p.read_bytes()) for p in sorted((out / "index").iterdir())] == list(ref.index)

    # the tables, published by the rebuild (not a local engine run)
    runs = read_arrow(str(tables), "runs")
    assert runs is not None and runs.num_rows == 1 and runs["command"].to_pylist() == ["rebuild"]
    run_id = runs["run_id"][0].as_py()
    assert read_arrow(str(tables), "messages", ["commitlog_offset"]).num_rows >= MESSAGES

    # the validation result and the Data Docs
    record = json.loads((tables / "_validation" / f"{run_id}.json").read_text())
    assert record["success"] is True and record["tables_run_id"] == run_id
    assert any((tables / "_data_docs").rglob("index.html"))

    # the audit report: the first segment goes at the next cleanup and the group has read none of it
    reports = list((tables / "_audit").glob("*.json"))
    assert len(reports) == 1
    report = json.loads(reports[0].read_text())
    first = sorted(p.name for p in (demo["store"] / "commitlog").iterdir())[0]
    assert [s["segment"] for s in report["segments"]] == [first]
    assert report["total_lost_messages"] > 0 and report["total_lost_bytes"] > 0
    assert {r["group"] for r in report["unconsumed"]} == {GROUP}
    # ... which is visible: the loss branch ran, and the log warns
    assert states["unconsumed_loss"] == "success" and states["no_unconsumed_loss"] == "skipped"
    assert "UNCONSUMED MESSAGES WOULD BE LOST" in log
    assert f"{report['total_lost_messages']} unconsumed message(s)" in log


@pytest.mark.full
@pytest.mark.slow
@pytest.mark.spark
def test_unchanged_store_skips_the_rebuild(clean_run: tuple[dict[str, Any], str], airflow_env: dict[str, str],
                                           stores: dict, tmp_path: Path) -> None:
    from pipelines.delta import read_arrow

    assert clean_run[0]["state"] == "success"
    demo = stores["demo"]
    before = {p: p.stat().st_mtime_ns for p in (demo["out"] / "index").iterdir()}
    result, log = _dag_test(airflow_env, f"{DAG_ID}__demo", {}, tmp_path / "unchanged.log")
    states = _states(result)
    assert result["state"] == "success", states
    assert states["check_settings"] == states["commitlog_changed"] == "success"
    assert all(states[t] == "skipped" for t in AFTER_SHORT_CIRCUIT), states
    assert "skipping the rebuild" in log
    assert read_arrow(str(demo["tables"]), "runs").num_rows == 1
    assert {p: p.stat().st_mtime_ns for p in (demo["out"] / "index").iterdir()} == before


@pytest.mark.full
@pytest.mark.slow
@pytest.mark.spark
def test_changed_store_is_rebuilt_over_the_previous_output(clean_run: tuple[dict[str, Any], str],
                                                           airflow_env: dict[str, str], stores: dict,
                                                           tmp_path: Path) -> None:
    from pipelines.delta import read_arrow

    assert clean_run[0]["state"] == "success"
    demo = stores["demo"]
    last = sorted((demo["store"] / "commitlog").iterdir())[-1]
    os.utime(last)  # the broker wrote to the last segment
    result, log = _dag_test(airflow_env, f"{DAG_ID}__demo", {}, tmp_path / "changed.log")
    states = _states(result)
    assert result["state"] == "success", states
    assert all(states[t] == "success" for t in CHAIN), states
    assert "1 modified segment(s)" in log
    assert read_arrow(str(demo["tables"]), "runs").num_rows == 2
    assert len(list((demo["tables"] / "_audit").glob("*.json"))) == 2


@pytest.mark.full
@pytest.mark.slow
@pytest.mark.spark
def test_force_rebuilds_and_fail_on_loss_fails_the_run(clean_run: tuple[dict[str, Any], str],
                                                      airflow_env: dict[str, str], tmp_path: Path) -> None:
    assert clean_run[0]["state"] == "success"
    result, log = _dag_test(airflow_env, f"{DAG_ID}__demo", {"force": True, "fail_on_loss": True},
                            tmp_path / "force.log")
    states = _states(result)
    assert result["state"] == "failed", states
    assert all(states[t] == "success" for t in CHAIN), states  # unchanged store, rebuilt all the same
    assert states["unconsumed_loss"] == "failed" and result["tasks"]["unconsumed_loss"]["try_number"] == 1
    assert "force is set: rebuilding" in log and "would be lost at the next cleanup" in log


@pytest.mark.full
@pytest.mark.slow
@pytest.mark.spark
def test_corrupted_store_fails_at_validate(airflow_env: dict[str, str], stores: dict, tmp_path: Path) -> None:
    result, log = _dag_test(airflow_env, f"{DAG_ID}__corrupt", {}, tmp_path / "corrupt.log")
    states = _states(result)
    assert result["state"] == "failed", states
    assert states["rebuild"] == "success"
    # a failed expectation is not retried
    assert states["validate"] == "failed" and result["tasks"]["validate"]["try_number"] == 1
    assert states["audit"] == "upstream_failed"
    tables = stores["corrupt"]["tables"]
    records = [json.loads(p.read_text()) for p in (tables / "_validation").glob("*.json")]
    assert len(records) == 1 and records[0]["success"] is False and records[0]["exit_code"] == 1
    # the reason, in the task log: the failing expectation, and the anomaly behind it
    assert "fail validation" in log and "FAIL " in log
    assert "crc_mismatch" in log


@pytest.mark.full
@pytest.mark.slow
@pytest.mark.spark
def test_light_queue_store_passes_validate(airflow_env: dict[str, str], stores: dict, tmp_path: Path) -> None:
    """A broker with light queues: the rebuild writes their consume queue files, the expiry audit lists
    them, and validate counts their units in the tables too (green; it failed every run before)."""
    if "lmq" not in stores:
        pytest.skip(f"no golden {LMQ_CASE} store")
    result, log = _dag_test(airflow_env, f"{DAG_ID}__lmq", {}, tmp_path / "lmq.log")
    states = _states(result)
    assert states["validate"] == "success", log[-5000:]
    # its optional maintenance ran after validate: compaction, then a vacuum that keeps the run readable
    assert states["optimize_tables"] == "success" and states["vacuum_tables"] == "success", log[-5000:]
    tables = stores["lmq"]["tables"]
    records = [json.loads(p.read_text()) for p in (tables / "_validation").glob("*.json")]
    assert len(records) == 1 and records[0]["success"] is True
    assert any(p.name.startswith("%LMQ%") for p in (stores["lmq"]["out"] / "consumequeue").iterdir())
