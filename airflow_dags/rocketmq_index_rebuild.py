"""Daily offline rebuild of a RocketMQ store's ``consumequeue/`` and ``index/``, then the expiry audit.

``rebuild`` spark-submits ``pipelines/spark_submit.py`` (the arguments of ``python -m pipelines rebuild``);
``audit_expiry`` spark-submits ``pipelines/spark_submit.py audit --tables PATH --as-of <data interval end>``.

Settings: each is a DAG param (set when triggering), or else the Airflow Variable ``rocketmq_index_<name>``:

    store         broker store root (holds commitlog/)                   required
    out           where consumequeue/ and index/ are written             required
    config        broker.conf the broker ran with                        required
    tables        Delta tables path (published by rebuild, audited)      required
    spark_master  master URL; empty: the Spark connection's (spark_default)
    split_size    bytes of commitlog per split; empty: the job's default
    py_files      zip of store_format/ and pipelines/ for the executors; empty: none
    extra_args    further rebuild arguments, shell-quoted

Environment (read when the file is parsed): ``ROCKETMQ_INDEX_HOME`` the checkout holding ``pipelines/``
(default: this file's repository), ``ROCKETMQ_INDEX_SCHEDULE`` (default ``@daily``).

Parsing imports Airflow and the Spark provider only; Variables are read when a task runs, through templates.
"""
from __future__ import annotations

import datetime as dt
import os
import shlex
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

try:
    from airflow.sdk import DAG, Param
except ImportError:  # Airflow 2
    from airflow import DAG  # type: ignore[no-redef, unused-ignore]
    from airflow.models.param import Param  # type: ignore[no-redef]

DAG_ID = "rocketmq_index_rebuild"
VARIABLE_PREFIX = "rocketmq_index_"
REPO_ROOT = Path(os.environ.get("ROCKETMQ_INDEX_HOME") or Path(__file__).resolve().parents[1])
APPLICATION = str(REPO_ROOT / "pipelines" / "spark_submit.py")


def setting(name: str) -> str:
    """Template of a setting: the DAG param when non-empty, else the Airflow Variable, else empty."""
    return f"{{{{ params.{name} or var.value.get('{VARIABLE_PREFIX}{name}', '') }}}}"


def _option_value(args: list[str], flag: str) -> str:
    """The argument after ``flag`` (empty when the flag or its value is missing)."""
    i = args.index(flag) if flag in args else len(args)
    return args[i + 1] if i + 1 < len(args) else ""


def _option_args(args: list[str]) -> list[str]:
    """Rendered arguments with ``--flag ''`` pairs (optional settings left empty) taken out."""
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("--") and i + 1 < len(args) and not args[i + 1].strip():
            i += 2
            continue
        out.append(arg)
        i += 1
    return out


class PipelinesSubmitOperator(SparkSubmitOperator):
    """``SparkSubmitOperator`` for ``pipelines/spark_submit.py``.

    Adds a templated ``master`` (empty: the Spark connection's), a templated shell-quoted ``extra_args``
    appended to the arguments, and checks that the ``required`` options rendered to a value.
    """

    template_fields = (*SparkSubmitOperator.template_fields, "master", "extra_args")

    def __init__(self, *, master: str = "", extra_args: str = "", required: tuple[str, ...] = (),
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.master = master
        self.extra_args = extra_args
        self.required = required

    def execute(self, context: Any) -> None:
        args = [str(a) for a in self.application_args or []]
        for name in self.required:
            flag = f"--{name.replace('_', '-')}"
            if not _option_value(args, flag).strip():
                raise ValueError(f"{flag} has no value: set the DAG param {name!r} when triggering, "
                                 f"or the Airflow Variable {VARIABLE_PREFIX}{name}")
        self.application_args = _option_args(args) + shlex.split(self.extra_args or "")
        self.py_files = self.py_files or None
        return super().execute(context)

    def _get_hook(self) -> Any:
        hook = super()._get_hook()
        if self.master:
            # SparkSubmitHook takes --master from its connection only; this overrides it per run
            hook._connection["master"] = self.master
        return hook


with DAG(
    dag_id=DAG_ID,
    description="Rebuild consumequeue/ and index/ of a RocketMQ store from its commitlog, then audit expiry",
    schedule=os.environ.get("ROCKETMQ_INDEX_SCHEDULE", "@daily"),
    start_date=dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 1, "retry_delay": dt.timedelta(minutes=10)},
    params={
        "store": Param("", type="string", description="broker store root (holds commitlog/)"),
        "out": Param("", type="string", description="output root for consumequeue/ and index/"),
        "config": Param("", type="string", description="broker.conf the broker ran with"),
        "tables": Param("", type="string", description="Delta tables path"),
        "spark_master": Param("", type="string", description="Spark master URL; empty: the Spark connection's"),
        "split_size": Param("", type=["string", "integer"], description="commitlog bytes per split; empty: default"),
        "py_files": Param("", type="string", description="zip of store_format/ and pipelines/; empty: none"),
        "extra_args": Param("", type="string", description="further rebuild arguments, shell-quoted"),
    },
    tags=["rocketmq", "spark"],
) as dag:
    rebuild = PipelinesSubmitOperator(
        task_id="rebuild",
        application=APPLICATION,
        name="rocketmq-index-rebuild-{{ ds_nodash }}",
        master=setting("spark_master"),
        py_files=setting("py_files"),
        application_args=[
            "--store", setting("store"),
            "--out", setting("out"),
            "--config", setting("config"),
            "--tables", setting("tables"),
            "--split-size", setting("split_size"),
        ],
        extra_args=setting("extra_args"),
        required=("store", "out", "config", "tables"),
    )

    audit_expiry = PipelinesSubmitOperator(
        task_id="audit_expiry",
        application=APPLICATION,
        name="rocketmq-index-audit-{{ ds_nodash }}",
        master=setting("spark_master"),
        py_files=setting("py_files"),
        application_args=[
            "audit",
            "--tables", setting("tables"),
            # manual runs without a data interval audit as of the time they were triggered
            "--as-of", "{{ (data_interval_end or dag_run.run_after).isoformat() }}",
        ],
        required=("tables",),
    )

    rebuild >> audit_expiry
