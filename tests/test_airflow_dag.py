"""The Airflow DAG parses, has the designed tasks, and renders the spark-submit commands the jobs expect.

Airflow is loaded in this process with ``AIRFLOW_HOME`` in a temporary folder; parsing needs no
metadata database, and the Spark connection comes from an ``AIRFLOW_CONN_*`` variable.
"""
from __future__ import annotations

import copy
import datetime as dt
import logging
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
DAG_FILE = REPO_ROOT / "airflow_dags" / "rocketmq_index_rebuild.py"
DAG_ID = "rocketmq_index_rebuild"
CONNECTION_MASTER = "spark://spark-master.example:7077"
AS_OF = dt.datetime(2024, 1, 2, tzinfo=dt.timezone.utc)


@pytest.fixture(scope="module")
def dagbag(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    home = tmp_path_factory.mktemp("airflow_home")
    # importing Airflow configures logging for the whole process; put the root logger back afterwards so
    # that later log calls (py4j's at exit) do not go to a stream pytest has closed
    root_handlers, root_level = logging.root.handlers[:], logging.root.level
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AIRFLOW_HOME", str(home))
        mp.setenv("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
        mp.setenv("AIRFLOW__CORE__DAGS_FOLDER", str(DAG_FILE.parent))
        mp.setenv("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", f"sqlite:///{home / 'airflow.db'}")
        mp.setenv("AIRFLOW_CONN_SPARK_DEFAULT", f'{{"conn_type": "spark", "host": "{CONNECTION_MASTER}"}}')
        mp.delenv("ROCKETMQ_INDEX_HOME", raising=False)
        mp.delenv("ROCKETMQ_INDEX_SCHEDULE", raising=False)
        try:
            from airflow.dag_processing.dagbag import DagBag
        except ImportError:  # Airflow < 3.1
            from airflow.models.dagbag import DagBag  # type: ignore[no-redef, unused-ignore]
        yield DagBag(dag_folder=str(DAG_FILE))
    logging.root.handlers[:] = root_handlers
    logging.root.setLevel(root_level)


@pytest.fixture(scope="module")
def dag(dagbag: Any) -> Any:
    assert dagbag.import_errors == {}
    return dagbag.dags[DAG_ID]


class _Variables:
    """``var.value`` of a template context, backed by a dict."""

    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)


def _submit_commands(dag: Any, monkeypatch: pytest.MonkeyPatch, params: dict[str, Any],
                     variables: dict[str, str] | None = None) -> dict[str, list[str]]:
    """Render and execute every task with ``spark-submit`` replaced by recording its command line."""
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    commands: dict[str, list[str]] = {}
    task_id = ""

    def record(self: SparkSubmitHook, application: str = "", **kwargs: Any) -> None:
        commands[task_id] = self._build_spark_submit_command(application)

    monkeypatch.setattr(SparkSubmitHook, "submit", record)
    context = {
        "params": {**dag.params, **params},
        "var": {"value": _Variables(variables or {}), "json": _Variables({})},
        "data_interval_end": AS_OF,
        "dag_run": SimpleNamespace(run_after=AS_OF),
        "ds_nodash": "20240102",
    }
    for task_id in ("rebuild", "audit_expiry"):
        task = copy.deepcopy(dag.get_task(task_id))  # rendering and execute change the task's fields
        task.render_template_fields(context)
        task.execute(context)
    return commands


def _after(command: list[str], flag: str) -> str:
    return command[command.index(flag) + 1]


def test_dag_file_imports_without_errors(dagbag: Any) -> None:
    assert dagbag.import_errors == {}
    assert list(dagbag.dags) == [DAG_ID]


def test_tasks_and_dependencies(dag: Any) -> None:
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    assert sorted(dag.task_ids) == ["audit_expiry", "rebuild"]
    rebuild, audit = dag.get_task("rebuild"), dag.get_task("audit_expiry")
    assert isinstance(rebuild, SparkSubmitOperator) and isinstance(audit, SparkSubmitOperator)
    assert rebuild.upstream_task_ids == set() and rebuild.downstream_task_ids == {"audit_expiry"}
    assert audit.upstream_task_ids == {"rebuild"} and audit.downstream_task_ids == set()


def test_daily_schedule_and_params(dag: Any) -> None:
    assert dag.schedule == "@daily"
    assert set(dag.params) >= {"store", "out", "config", "tables", "spark_master", "split_size", "py_files",
                                "extra_args"}


def test_spark_submit_application_is_the_repo_job(dag: Any) -> None:
    for task_id in ("rebuild", "audit_expiry"):
        application = Path(dag.get_task(task_id).application)
        assert application == REPO_ROOT / "pipelines" / "spark_submit.py"
        assert application.is_file(), f"{application} is missing"
    args = dag.get_task("rebuild").application_args
    for flag in ("--store", "--out", "--config", "--tables"):
        assert flag in args
    audit_args = dag.get_task("audit_expiry").application_args
    assert audit_args[0] == "audit" and "--tables" in audit_args and "--as-of" in audit_args
    assert "data_interval_end" in _after(audit_args, "--as-of")


def test_rendered_commands_from_params(dag: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    params = {"store": "s3://bucket/store", "out": "s3://bucket/out", "config": "s3://bucket/broker.conf",
              "tables": "s3://bucket/tables", "spark_master": "local[4]", "split_size": 67108864,
              "py_files": "s3://bucket/rocketmq_offline_index.zip", "extra_args": "--no-strict --label 'a b'"}
    commands = _submit_commands(dag, monkeypatch, params)
    rebuild, audit = commands["rebuild"], commands["audit_expiry"]
    app = str(REPO_ROOT / "pipelines" / "spark_submit.py")
    assert rebuild[0] == "spark-submit" and _after(rebuild, "--master") == "local[4]"
    assert _after(rebuild, "--py-files") == "s3://bucket/rocketmq_offline_index.zip"
    assert rebuild[rebuild.index(app) + 1:] == [
        "--store", "s3://bucket/store", "--out", "s3://bucket/out", "--config", "s3://bucket/broker.conf",
        "--tables", "s3://bucket/tables", "--split-size", "67108864", "--no-strict", "--label", "a b"]
    assert _after(audit, "--master") == "local[4]"
    assert audit[audit.index(app) + 1:] == ["audit", "--tables", "s3://bucket/tables",
                                            "--as-of", "2024-01-02T00:00:00+00:00"]


def test_rendered_commands_from_variables(dag: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    variables = {"rocketmq_index_store": "/data/store", "rocketmq_index_out": "/data/out",
                 "rocketmq_index_config": "/data/broker.conf", "rocketmq_index_tables": "/data/tables"}
    commands = _submit_commands(dag, monkeypatch, {}, variables)
    rebuild = commands["rebuild"]
    # no master setting: the Spark connection's; empty optional settings are left out
    assert _after(rebuild, "--master") == CONNECTION_MASTER
    assert "--py-files" not in rebuild and "--split-size" not in rebuild
    assert rebuild[-8:] == ["--store", "/data/store", "--out", "/data/out", "--config", "/data/broker.conf",
                            "--tables", "/data/tables"]


def test_rendering_leaves_the_dag_unchanged(dag: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    before = list(dag.get_task("rebuild").application_args)
    _submit_commands(dag, monkeypatch, {"store": "/s", "out": "/o", "config": "/b.conf", "tables": "/t"})
    assert dag.get_task("rebuild").application_args == before


def test_missing_required_setting_fails_with_what_to_set(dag: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    params = {"out": "/o", "config": "/b.conf", "tables": "/t"}
    with pytest.raises(ValueError, match="--store has no value.*rocketmq_index_store"):
        _submit_commands(dag, monkeypatch, params)
