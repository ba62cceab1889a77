"""Rebuild a RocketMQ store's ``consumequeue/`` and ``index/`` on Spark, validate the Delta tables, audit expiry.

Tasks, in order (one run at a time per store)::

    check_settings >> commitlog_changed >> rebuild >> validate >> audit >> loss_check
                                                                        >> [unconsumed_loss, no_unconsumed_loss]

* ``check_settings`` resolves the settings and checks them (paths absolute, the store's ``commitlog/`` and the
  ``broker.conf`` readable, sizes and extra arguments well formed).  A setting a user must fix fails the run at
  once, without retries (``AirflowFailException``).
* ``commitlog_changed`` (short circuit) skips everything after it when the commitlog has not changed since the
  last successful run: the newest ``runs`` row of the tables is a ``rebuild`` of this store with the same broker
  settings, the ``segments`` it saw have the names, sizes and modification times of the store's segments now,
  ``OUT/consumequeue`` and ``OUT/index`` exist, and that run's tables passed validation
  (``TABLES/_validation/<tables run id>.json``).  The param ``force`` rebuilds anyway.
* ``rebuild`` spark-submits ``pipelines/spark_submit.py`` (``python -m pipelines rebuild`` arguments) with
  ``--overwrite``: the rebuild replaces ``OUT/consumequeue`` and ``OUT/index`` only once the new ones are
  complete, so a daily run replaces yesterday's output.  The Spark master is the Spark connection's
  (``spark_conn_id``: one Airflow connection per cluster).
* ``validate`` runs ``python -m pipelines validate``: with ``--engine spark --master <the connection's master>``
  when the Spark connection is a cluster (the tables read and reduced there, the suites on Great
  Expectations' Spark data source), else plain Python (``--engine arrow``); its failing expectations are
  logged, its result saved as ``TABLES/_validation/<tables run id>.json``, Data Docs written under
  ``TABLES/_data_docs`` (or the ``docs`` setting); failed expectations fail the run without retries.
* ``audit`` runs ``python -m pipelines audit --as-of <data interval end or run time>`` (plain Python) and saves
  the report as ``TABLES/_audit/<dag run id>.json``; when unconsumed messages would be lost at the next cleanup
  it logs a WARNING per consumer group, and ``loss_check`` branches to ``unconsumed_loss`` (logs the loss again,
  and fails the run when the param ``fail_on_loss`` is true), else to ``no_unconsumed_loss``.

Settings (``store``, ``out``, ``config`` required; paths local and absolute, or URIs)::

    store        broker store root (holds commitlog/)
    out          where consumequeue/ and index/ are written (laid out like a store root)
    config       broker.conf the broker ran with
    tables       Delta tables (default OUT/tables)
    docs         Data Docs folder (default TABLES/_data_docs)
    split_size   commitlog bytes per Spark task, e.g. 128m (default: the job's)
    py_files     zip of store_format/ and pipelines/ for the executors (default: none)
    extra_args   further rebuild arguments, shell-quoted (e.g. --with-body)

Two ways to give them:

* the DAG ``rocketmq_index_rebuild``: DAG params when triggering, else the Airflow Variables
  ``rocketmq_index_<setting>`` (read when a task runs); Spark connection ``spark_default`` (or the environment
  variable ``ROCKETMQ_INDEX_SPARK_CONN_ID``), schedule ``@daily`` (or ``ROCKETMQ_INDEX_SCHEDULE``);
* one DAG per store, ``rocketmq_index_rebuild__<name>``, from the JSON file named by the environment variable
  ``ROCKETMQ_INDEX_STORES``: ``{"<name>": {"store": ..., "out": ..., "config": ..., <other settings>,
  "spark_conn_id": "spark_default", "spark_conf": {...}, "schedule": "@daily", "rebuild_timeout_minutes": 360,
  "retry_delay_minutes": 10, "optimize": false, "vacuum_retain_hours": null}}``.  With ``optimize: true`` an
  ``optimize_tables`` task compacts the tables once they are validated (``python -m pipelines optimize``), with
  ``vacuum_retain_hours: H`` a ``vacuum_tables`` task then deletes the files of replaced versions older than H
  hours (``python -m pipelines vacuum --retain-hours H``; never those the newest complete run reads); both are
  off by default.  The settings become the DAG's param defaults (a trigger may still override
  them).

Parsing imports Airflow and the Spark provider only (no project code, no metadata database).  Tasks import
``store_format`` and ``pipelines`` from the installed package, or else from ``ROCKETMQ_INDEX_HOME`` (default:
this file's repository), and run ``python -m pipelines`` with the worker's interpreter.
"""
from __future__ import annotations

import datetime as dt
import json
import logging
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG, Param, Variable, task
from airflow.sdk.exceptions import AirflowException, AirflowFailException

log = logging.getLogger(__name__)

DAG_ID = "rocketmq_index_rebuild"
VARIABLE_PREFIX = "rocketmq_index_"
REPO_ROOT = Path(os.environ.get("ROCKETMQ_INDEX_HOME") or Path(__file__).resolve().parents[1])
APPLICATION = str(REPO_ROOT / "pipelines" / "spark_submit.py")
REQUIRED = ("store", "out", "config")
OPTIONAL = ("tables", "docs", "split_size", "py_files", "extra_args")
SETTINGS = REQUIRED + OPTIONAL
# rebuild arguments the DAG sets itself: extra_args may not repeat or contradict them
RESERVED_ARGS = ("--store", "--out", "--config", "--tables", "--no-tables", "--overwrite", "--engine", "--split-size",
                 "--master", "--json")
VALIDATION_DIR = "_validation"
AUDIT_DIR = "_audit"

DEFAULT_ARGS: dict[str, Any] = {
    "owner": "rocketmq",
    "retries": 1,
    "retry_delay": dt.timedelta(minutes=5),
    "execution_timeout": dt.timedelta(minutes=30),
}


# ---------------------------------------------------------------------------------------------
# helpers run inside tasks (project imports are lazy: parsing never imports them)


def _project() -> None:
    """Make ``store_format``/``pipelines`` importable when the worker runs from a checkout."""
    try:
        import pipelines  # noqa: F401
    except ImportError:
        sys.path.insert(0, str(REPO_ROOT))


def _is_uri(path: str) -> bool:
    return "://" in path


def _join(root: str, *parts: str) -> str:
    return "/".join([root.rstrip("/"), *parts])


def _exists(path: str, kind: str = "any") -> bool:
    """Whether a local path or URI exists (``kind``: any, file or dir)."""
    _project()
    import pyarrow.fs as pafs

    from store_format.store import resolve
    fs, p = resolve(path)
    info = fs.get_file_info(p)
    wanted = {"any": (pafs.FileType.File, pafs.FileType.Directory), "file": (pafs.FileType.File,),
              "dir": (pafs.FileType.Directory,)}[kind]
    return info.type in wanted


def _read_json(path: str) -> Any:
    _project()
    from store_format.store import read_text
    try:
        return json.loads(read_text(path))
    except Exception:  # missing or unreadable: the caller treats it as absent
        return None


def _write_json(path: str, value: Any) -> None:
    """Write JSON to a local path or URI, creating the folder."""
    _project()
    from store_format.store import resolve
    fs, p = resolve(path)
    fs.create_dir(p.rsplit("/", 1)[0], recursive=True)
    with fs.open_output_stream(p) as out:
        out.write(json.dumps(value, indent=2, default=str).encode())


def _file_name(text: str) -> str:
    """A run id made safe for a file name (``manual__2024-01-02T00:00:00+00:00`` keeps its shape)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "run"


def _settings_of(context: Any) -> dict[str, Any]:
    """The settings ``check_settings`` resolved for this run."""
    settings = context["ti"].xcom_pull(task_ids="check_settings")
    if not settings:
        raise AirflowException("check_settings returned no settings")
    return settings


def _pipelines(args: list[str], *, emit: Callable[[str], None], timeout: float | None = None
               ) -> tuple[int, list[str], list[str]]:
    """Run ``python -m pipelines ARGS`` with this interpreter; each stderr line goes to ``emit`` as it comes,
    stdout is returned.  Returns (exit code, stdout lines, stderr lines)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    cmd = [sys.executable, "-m", "pipelines", *args]
    log.info("running %s", shlex.join(cmd))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            cwd=str(REPO_ROOT))
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    err_lines = err.splitlines()
    for line in err_lines:
        emit(line)
    return proc.returncode, out.splitlines(), err_lines


def _error_line(lines: list[str]) -> str:
    errors = [ln for ln in lines if ln.startswith("error:")]
    return errors[-1] if errors else (lines[-1] if lines else "no message")


def _as_of(context: Any) -> dt.datetime:
    """The audit time: the end of the run's data interval, else (manual runs) the time the run was due."""
    end = context.get("data_interval_end")
    if end is None:
        end = context["dag_run"].run_after
    return end


# ---------------------------------------------------------------------------------------------
# the tasks


def check_settings(variables: bool, **context: Any) -> dict[str, Any]:
    """Resolve and check the settings; a setting a user must fix fails at once (no retry)."""
    params = context["params"]
    values: dict[str, str] = {}
    for name in SETTINGS:
        value = params.get(name)
        if (value is None or value == "") and variables:
            value = Variable.get(f"{VARIABLE_PREFIX}{name}", default=None)
        values[name] = "" if value is None else str(value).strip()
    missing = [n for n in REQUIRED if not values[n]]
    if missing:
        how = ("set the DAG params when triggering, or the Airflow Variables " if variables else
               "set them in the stores file (ROCKETMQ_INDEX_STORES), or as DAG params when triggering: ")
        names = ", ".join(f"{VARIABLE_PREFIX}{n}" if variables else n for n in missing)
        raise AirflowFailException(f"missing setting(s) {', '.join(missing)}: {how}{names}")
    values["tables"] = values["tables"] or _join(values["out"], "tables")
    for name in ("store", "out", "config", "tables", "docs", "py_files"):
        v = values[name]
        if v and not _is_uri(v) and not os.path.isabs(v):
            raise AirflowFailException(f"{name}={v!r} is a relative path: give an absolute path or a URI "
                                       "(tasks do not run in a folder you choose)")
    if values["docs"] and _is_uri(values["docs"]):
        raise AirflowFailException(f"docs={values['docs']!r}: Data Docs are written to a local folder")
    if _is_uri(values["tables"]) and not values["docs"]:
        raise AirflowFailException(f"tables={values['tables']!r} is not a local folder: set docs to a local folder "
                                   "for the Data Docs")
    _project()
    from store_format.errors import StoreError
    from store_format.store import load_config_for, open_store
    try:
        config = load_config_for(values["config"])
        store = open_store(values["store"], config)
    except StoreError as e:
        raise AirflowFailException(f"{e}") from None
    if store.broker_may_be_running():
        log.warning("%s/abort exists: a broker may be running on this store (or it crashed); the rebuild reads a "
                    "moving commitlog", values["store"])
    args = ["--store", values["store"], "--out", values["out"], "--config", values["config"],
            "--tables", values["tables"], "--overwrite"]
    if values["split_size"]:
        from pipelines.cli import split_size_arg
        try:
            split_size_arg(values["split_size"])
        except Exception as e:
            raise AirflowFailException(f"split_size: {e}") from None
        args += ["--split-size", values["split_size"]]
    try:
        extra = shlex.split(values["extra_args"])
    except ValueError as e:
        raise AirflowFailException(f"extra_args {values['extra_args']!r}: {e}") from None
    clash = sorted({a.split("=", 1)[0] for a in extra} & set(RESERVED_ARGS))
    if clash:
        raise AirflowFailException(f"extra_args may not contain {', '.join(clash)}: the DAG sets them "
                                   "(use the settings instead)")
    from pipelines.cli import build_parser
    try:
        build_parser().parse_args(["rebuild", *args, *extra])
    except SystemExit:
        raise AirflowFailException(f"extra_args {values['extra_args']!r} are not rebuild arguments "
                                   "(see python -m pipelines rebuild --help)") from None
    values["rebuild_args"] = args + extra  # type: ignore[assignment]
    log.info("settings: %s", json.dumps(values, indent=2))
    return values


def commitlog_changed(**context: Any) -> bool:
    """True (run the rest) unless the commitlog is as the last successful run saw it (see the module docstring)."""
    s = _settings_of(context)
    if context["params"].get("force"):
        log.info("force is set: rebuilding")
        return True
    reason = _unchanged_reason(s)
    if reason is None:
        return True
    log.info("skipping the rebuild, validation and audit: %s", reason)
    return False


def _unchanged_reason(s: dict[str, Any]) -> str | None:
    """Why the store is unchanged since the last successful run, or None when it must be rebuilt (logged)."""
    _project()
    from pipelines.tables.runs import snapshot
    from store_format.reput import resolve_broker_version
    from store_format.store import load_config_for, open_store

    snap = snapshot(s["tables"])   # the tables as readers see them: those of the latest complete run
    last = snap.run
    if last is None:
        log.info("no complete run in the tables under %s: first rebuild", s["tables"])
        return None
    if last["command"] != "rebuild":
        log.info("the newest run %s is a '%s' refresh, not a rebuild of the files", last["run_id"], last["command"])
        return None
    st = open_store(s["store"], load_config_for(s["config"]))
    where = st.uri if _is_uri(st.uri) else st.root
    if last["store"] != where:
        log.info("the newest run %s read %s, not %s", last["run_id"], last["store"], where)
        return None
    config = resolve_broker_version(st, load_config_for(s["config"])).as_properties()
    if json.loads(last["config"] or "{}") != config:
        log.info("the broker settings differ from those of run %s", last["run_id"])
        return None
    segments = snap.read_arrow("segments")
    seen: dict[str, tuple[int, int | None]] = {}
    for r in (segments.to_pylist() if segments is not None else []):
        if r["status"] == "live" and r["last_run"] == last["run_id"]:
            mtime = r["file_mtime"]
            seen[r["segment"]] = (r["file_size"], None if mtime is None else int(round(mtime.timestamp() * 1000)))
    now = {seg.name: (seg.size, seg.mtime_ms) for seg in st.segments}
    if now != seen:
        added, gone = sorted(set(now) - set(seen)), sorted(set(seen) - set(now))
        changed = sorted(n for n in set(now) & set(seen) if now[n] != seen[n])
        log.info("commitlog changed since run %s: %d new, %d gone, %d modified segment(s)%s", last["run_id"],
                 len(added), len(gone), len(changed), f" (first modified: {changed[0]})" if changed else "")
        return None
    for sub in ("consumequeue", "index"):
        if not _exists(_join(s["out"], sub), "dir"):
            log.info("%s is missing", _join(s["out"], sub))
            return None
    record = _read_json(_join(s["tables"], VALIDATION_DIR, f"{_file_name(last['run_id'])}.json"))
    if not record or not record.get("success"):
        log.info("the tables of run %s did not pass validation (or were never validated)", last["run_id"])
        return None
    return (f"the {len(now)} commitlog segment(s) have the names, sizes and modification times run "
            f"{last['run_id']} saw, and its tables passed validation")


def _validate_engine(spark_conn_id: str) -> list[str]:
    """``--engine spark --master URL`` when the Spark connection is a cluster, else ``--engine arrow``
    (:func:`pipelines.validate.engine.engine_for_master`)."""
    _project()
    from airflow.sdk import Connection

    from pipelines.validate.engine import engine_for_master, spark_master_url
    conn = Connection.get(spark_conn_id)
    master = spark_master_url(conn.conn_type, conn.host, conn.port)
    engine = engine_for_master(master)
    log.info("validate engine %s (Spark connection %s: %s)", engine, spark_conn_id, master)
    return ["--engine", engine] + (["--master", master] if engine == "spark" else [])


def validate(spark_conn_id: str = "spark_default", **context: Any) -> dict[str, Any]:
    """``python -m pipelines validate --json``: each failing expectation logged, the result saved next to the
    tables (``TABLES/_validation/<tables run id>.json``); failed expectations fail the run without retries.
    On Spark when the connection ``spark_conn_id`` is a cluster (:func:`_validate_engine`)."""
    s = _settings_of(context)
    args = ["validate", "--tables", s["tables"], "--json"] + (["--docs", s["docs"]] if s["docs"] else [])
    args += _validate_engine(spark_conn_id)
    code, out, err = _pipelines(args, emit=log.info)
    try:
        report = json.loads("\n".join(out)) if code in (0, 1) else None
    except ValueError:
        report = None
    if code == 2:
        raise AirflowFailException(f"validate could not run: {_error_line(err)}")
    if report is None:  # a crash (a traceback exits 1 too) or an unknown exit code: worth a retry
        raise AirflowException(f"python -m pipelines validate exited with {code}: {_error_line(err)}")
    tables_run = report.get("latest_run")
    verdict = "PASSED" if report["success"] else "FAILED"
    log.info("validation %s: %d of %d expectations hold (tables run %s)", verdict,
             report["expectations"] - report["failed"], report["expectations"], tables_run)
    for f in report["failures"]:
        log.error("%s", f["line"])
    anomalies = report.get("anomalies") or {}
    log.info("anomalies: %s", ", ".join(f"{k} {v}" for k, v in sorted(anomalies.items())) or "none")
    log.info("Data Docs: %s", report.get("docs"))
    record = dict(report, dag_id=context["dag"].dag_id, dag_run_id=context["run_id"], exit_code=code,
                  tables_run_id=tables_run, validated_at=dt.datetime.now(dt.timezone.utc).isoformat())
    if tables_run:
        path = _join(s["tables"], VALIDATION_DIR, f"{_file_name(tables_run)}.json")
        _write_json(path, record)
        log.info("validation result saved to %s", path)
    if not report["success"] or code != 0:
        lines = [f["line"] for f in report["failures"]] or [f"validate exited with {code}"]
        raise AirflowFailException(f"the tables of run {tables_run} fail validation (Data Docs: {report.get('docs')}):"
                                   "\n" + "\n".join(lines))
    return {k: record[k] for k in ("success", "expectations", "failed", "tables_run_id", "docs", "anomalies")}


def audit(**context: Any) -> dict[str, Any]:
    """``python -m pipelines audit``: report saved next to the tables; a WARNING per group that would lose messages."""
    s = _settings_of(context)
    as_of = _as_of(context)
    report = _join(s["tables"], AUDIT_DIR, f"{_file_name(context['run_id'])}.json")
    args = ["audit", "--tables", s["tables"], "--as-of", as_of.isoformat(), "--config", s["config"],
            "--store", s["store"], "--report", report, "--json"]
    code, out, err = _pipelines(args, emit=log.info)
    if code == 2:
        raise AirflowFailException(f"audit could not run: {_error_line(err)}")
    if code != 0:
        raise AirflowException(f"python -m pipelines audit exited with {code}: {_error_line(err)}")
    summary = json.loads("\n".join(out))
    log.info("audit report saved to %s", report)
    nc = summary.get("next_cleanup")
    log.info("as of %s, next cleanup %s: %d segment(s), %d consume queue file(s), %d index file(s) go",
             summary.get("as_of"), f"{nc['from']}..{nc['until']}" if nc else "none foreseen",
             len(summary.get("segments") or []), summary.get("consume_queue_files", 0), summary.get("index_files", 0))
    offsets_known = _exists(_join(s["store"], "config", "consumerOffset.json"), "file")
    if not offsets_known:
        log.warning("%s has no config/consumerOffset.json: the audit cannot tell which unconsumed messages the next "
                    "cleanup deletes", s["store"])
    for r in summary.get("unconsumed") or []:
        log.warning("UNCONSUMED MESSAGES WOULD BE LOST at the next cleanup (%s): group %s, topic %s, queue %s: "
                    "%d message(s), %d bytes behind committed offset %s", nc["from"] if nc else "?", r["group"],
                    r["topic"], r["queue_id"], r["messages"], r["bytes"], r["committed"])
    if summary.get("total_lost_messages"):
        log.warning("in all %d unconsumed message(s), %d bytes would be lost at the next cleanup",
                    summary["total_lost_messages"], summary["total_lost_bytes"])
    return {"report": report, "as_of": summary.get("as_of"), "next_cleanup": nc,
            "segments_at_next_cleanup": [x["segment"] for x in summary.get("segments") or []],
            "total_lost_messages": summary.get("total_lost_messages", 0),
            "total_lost_bytes": summary.get("total_lost_bytes", 0), "consumer_offsets_known": offsets_known,
            "unconsumed": [{k: r[k] for k in ("group", "topic", "queue_id", "committed", "messages", "bytes")}
                           for r in summary.get("unconsumed") or []]}


def _maintenance(command: str, extra: list[str], **context: Any) -> list[dict[str, Any]]:
    """``python -m pipelines optimize|vacuum --json`` on the validated tables; each table's line logged."""
    s = _settings_of(context)
    code, out, err = _pipelines([command, "--tables", s["tables"], "--json", *extra], emit=log.info)
    if code == 2:
        raise AirflowFailException(f"{command} could not run: {_error_line(err)}")
    if code != 0:
        raise AirflowException(f"python -m pipelines {command} exited with {code}: {_error_line(err)}")
    results = json.loads("\n".join(out))
    for r in results:
        log.info("%s: %s", command, r)
    return results


def optimize_tables(**context: Any) -> list[dict[str, Any]]:
    """Compact the tables' small files (readers see the same rows)."""
    return _maintenance("optimize", [], **context)


def vacuum_tables(retain_hours: int, **context: Any) -> list[dict[str, Any]]:
    """Delete the files of replaced table versions older than ``retain_hours`` (never those readers may open)."""
    return _maintenance("vacuum", ["--retain-hours", str(int(retain_hours))], **context)


def loss_check(**context: Any) -> str:
    """Branch: ``unconsumed_loss`` when the audit found messages the next cleanup takes from a consumer group."""
    figures = context["ti"].xcom_pull(task_ids="audit") or {}
    return "unconsumed_loss" if figures.get("total_lost_messages") else "no_unconsumed_loss"


def unconsumed_loss(**context: Any) -> dict[str, Any]:
    """Say (again) what would be lost; with ``fail_on_loss`` fail the run."""
    figures = context["ti"].xcom_pull(task_ids="audit")
    for r in figures["unconsumed"]:
        log.warning("consumer group %s would lose %d message(s) (%d bytes) of %s queue %s at the next cleanup",
                    r["group"], r["messages"], r["bytes"], r["topic"], r["queue_id"])
    message = (f"{figures['total_lost_messages']} unconsumed message(s), {figures['total_lost_bytes']} bytes, would "
               f"be lost at the next cleanup ({(figures['next_cleanup'] or {}).get('from')}); report: "
               f"{figures['report']}")
    log.warning("%s", message)
    if context["params"].get("fail_on_loss"):
        raise AirflowFailException(message)
    return figures


class RebuildSubmitOperator(SparkSubmitOperator):
    """``spark-submit pipelines/spark_submit.py`` with the arguments ``check_settings`` resolved for this run."""

    def execute(self, context: Any) -> None:
        settings = _settings_of(context)
        self.application_args = list(settings["rebuild_args"])
        self.py_files = settings["py_files"] or None
        return super().execute(context)


# ---------------------------------------------------------------------------------------------
# DAGs


def build_dag(dag_id: str, *, defaults: dict[str, Any] | None = None, variables: bool = True,
              spark_conn_id: str = "spark_default", spark_conf: dict[str, str] | None = None,
              schedule: str | None = "@daily", rebuild_timeout: dt.timedelta = dt.timedelta(hours=6),
              retry_delay: dt.timedelta | None = None, optimize: bool = False,
              vacuum_retain_hours: int | None = None) -> DAG:
    """One rebuild → validate → audit DAG; ``defaults`` are the params' defaults (settings of one store);
    ``retry_delay`` replaces the delays before retries (5 minutes, 10 for the rebuild, growing);
    ``optimize`` and ``vacuum_retain_hours`` add the maintenance tasks after ``validate`` (default: none)."""
    defaults = defaults or {}
    params = {
        name: Param(str(defaults.get(name, "")), type="string", description=text) for name, text in (
            ("store", "broker store root (holds commitlog/): absolute path or URI"),
            ("out", "where consumequeue/ and index/ are written"),
            ("config", "broker.conf the broker ran with"),
            ("tables", "Delta tables path (empty: OUT/tables)"),
            ("docs", "Data Docs folder (empty: TABLES/_data_docs)"),
            ("split_size", "commitlog bytes per Spark task, e.g. 128m (empty: the job's default)"),
            ("py_files", "zip of store_format/ and pipelines/ for the executors (empty: none)"),
            ("extra_args", "further rebuild arguments, shell-quoted"),
        )}
    params["force"] = Param(bool(defaults.get("force", False)), type="boolean",
                            description="rebuild even when the commitlog has not changed since the last good run")
    params["fail_on_loss"] = Param(bool(defaults.get("fail_on_loss", False)), type="boolean",
                                   description="fail the run when unconsumed messages would be lost at the next "
                                               "cleanup (default: warn)")
    with DAG(
        dag_id=dag_id,
        description="Rebuild consumequeue/ and index/ of a RocketMQ store from its commitlog, validate the tables, "
                    "audit expiry",
        schedule=schedule,
        start_date=dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc),
        catchup=False,
        max_active_runs=1,
        dagrun_timeout=rebuild_timeout + dt.timedelta(hours=3),
        default_args={**DEFAULT_ARGS, **({"retry_delay": retry_delay} if retry_delay is not None else {})},
        params=params,
        tags=["rocketmq", "spark", "data-quality"],
        doc_md=__doc__,
    ) as dag:
        settings = task(task_id="check_settings", retries=0,
                        execution_timeout=dt.timedelta(minutes=10))(check_settings)(variables=variables)
        changed = task.short_circuit(task_id="commitlog_changed",
                                     execution_timeout=dt.timedelta(minutes=15))(commitlog_changed)()
        rebuild = RebuildSubmitOperator(
            task_id="rebuild",
            application=APPLICATION,
            name=f"{dag_id}-rebuild",
            conn_id=spark_conn_id,
            conf=dict(spark_conf or {}),
            retries=2,
            retry_delay=retry_delay if retry_delay is not None else dt.timedelta(minutes=10),
            retry_exponential_backoff=2.0,
            execution_timeout=rebuild_timeout,
        )
        checked = task(task_id="validate", execution_timeout=dt.timedelta(hours=1))(validate)(
            spark_conn_id=spark_conn_id)
        audited = task(task_id="audit", execution_timeout=dt.timedelta(minutes=30))(audit)()
        branch = task.branch(task_id="loss_check", retries=0)(loss_check)()
        loss = task(task_id="unconsumed_loss", retries=0)(unconsumed_loss)()
        no_loss = EmptyOperator(task_id="no_unconsumed_loss")
        settings >> changed >> rebuild >> checked >> audited >> branch >> [loss, no_loss]
        last = checked   # maintenance only on validated tables, beside the audit
        if optimize:
            last = last >> task(task_id="optimize_tables", execution_timeout=dt.timedelta(hours=1))(optimize_tables)()
        if vacuum_retain_hours is not None:
            last >> task(task_id="vacuum_tables", execution_timeout=dt.timedelta(hours=1))(vacuum_tables)(
                retain_hours=int(vacuum_retain_hours))
    return dag


def _stores_file() -> dict[str, dict[str, Any]]:
    path = os.environ.get("ROCKETMQ_INDEX_STORES")
    if not path:
        return {}
    with open(path, encoding="utf-8") as f:
        stores = json.load(f)
    if not isinstance(stores, dict) or not all(isinstance(v, dict) for v in stores.values()):
        raise ValueError(f"{path}: expected {{\"<store name>\": {{\"store\": ..., \"out\": ..., \"config\": ...}}}}")
    bad = [n for n in stores if not re.fullmatch(r"[A-Za-z0-9_.-]+", n)]
    if bad:
        raise ValueError(f"{path}: store names may hold letters, digits, '_', '.', '-' only: {bad}")
    return stores


def _schedule(value: Any) -> str | None:
    return None if value in (None, "", "none", "None") else str(value)


dag = build_dag(DAG_ID, spark_conn_id=os.environ.get("ROCKETMQ_INDEX_SPARK_CONN_ID") or "spark_default",
                schedule=_schedule(os.environ.get("ROCKETMQ_INDEX_SCHEDULE", "@daily")))

for _name, _entry in _stores_file().items():
    globals()[f"dag_{_name}"] = build_dag(
        f"{DAG_ID}__{_name}", defaults=_entry, variables=False,
        spark_conn_id=_entry.get("spark_conn_id") or "spark_default", spark_conf=_entry.get("spark_conf"),
        schedule=_schedule(_entry.get("schedule", "@daily")),
        rebuild_timeout=dt.timedelta(minutes=float(_entry.get("rebuild_timeout_minutes", 360))),
        retry_delay=(dt.timedelta(minutes=float(_entry["retry_delay_minutes"])) if "retry_delay_minutes" in _entry
                     else None),
        optimize=bool(_entry.get("optimize", False)),
        vacuum_retain_hours=(None if _entry.get("vacuum_retain_hours") is None else int(_entry["vacuum_retain_hours"])))
