"""The one module that reaches into PySpark's private code, and the switch that keeps the job off it.

Local runs use four things PySpark does not document, each measured to pay for itself
(``docs/performance.md``):

* the warm Python daemon (:mod:`pipelines.sparkdaemon`): it runs ``pyspark.daemon.manager`` and exits
  with ``pyspark.daemon.compute_real_exit_code``, as PySpark's own ``daemon`` module does;
* the local JVM launched with its stderr read by the driver: ``pyspark.java_gateway.launch_gateway``
  with ``popen_kwargs`` (:func:`launch_local_gateway`);
* the fast exit of ``python -m pipelines``: the gateway of the context, ``SparkContext._gateway``, shut
  down before ``os._exit`` (:func:`running_gateway`);
* the context's JVM view, ``SparkContext._jvm`` (:func:`jvm_of`): log levels of Spark's loggers and
  the check for Delta's classes.  delta-spark's own Python API reads it too, so it is used in both modes;
  so are PySpark's conversions between Arrow and Spark schemas (:func:`spark_schema_of_arrow`,
  :func:`arrow_schema_of_spark`), which it documents nowhere.

Under spark-submit the job also reads what spark-submit set before its context exists
(:func:`submitted_conf`, ``SparkContext._ensure_initialized``), in both modes: PySpark has no public
way to.  The speed-ups are used only on the PySpark release they were written for
(:data:`MADE_FOR_PYSPARK`, major and minor) and unless ``PIPELINES_PLAIN_PYSPARK=1``
(:func:`plain_pyspark`); otherwise the job runs on PySpark's public means, slower to start and with
the same output.  :func:`internals_missing` lists what the installed release no longer has;
``tests/test_pyspark_private.py`` fails on it, and fails when any other module of ``pipelines``
reaches into these internals itself.

PySpark is imported inside the functions only: ``python -m pipelines``'s exit path reads
:func:`plain_pyspark` without loading it.
"""
from __future__ import annotations

import functools
import inspect
import logging
import os
import sys
from importlib import metadata
from typing import Any

__all__ = ["PLAIN_PYSPARK_ENV", "MADE_FOR_PYSPARK", "plain_pyspark", "pyspark_release", "internals_missing",
           "launch_local_gateway", "running_gateway", "active_context", "submitted_conf", "jvm_of",
           "load_daemon", "quiet_peer_gone", "daemon_manager", "daemon_exit_code", "spark_schema_of_arrow",
           "arrow_schema_of_spark"]

PLAIN_PYSPARK_ENV = "PIPELINES_PLAIN_PYSPARK"
MADE_FOR_PYSPARK = "4.2"
"""The PySpark release line (major.minor) whose private code this module was written against."""

_log = logging.getLogger(__name__)


def pyspark_release() -> str:
    """The installed PySpark's version, read from its package metadata (PySpark is not imported)."""
    try:
        return metadata.version("pyspark")
    except metadata.PackageNotFoundError:
        return ""


@functools.cache
def _release_is_known() -> bool:
    release = pyspark_release()
    known = release.split(".")[:2] == MADE_FOR_PYSPARK.split(".")
    if not known and release:
        _log.info("pyspark %s: the warm daemon, the piped JVM and the fast exit are made for pyspark %s; "
                  "running on PySpark's public means", release, MADE_FOR_PYSPARK)
    return known


def plain_pyspark() -> bool:
    """Whether the job keeps off PySpark's private code: ``PIPELINES_PLAIN_PYSPARK=1`` (to rule these
    speed-ups out when something goes wrong), or a PySpark release other than :data:`MADE_FOR_PYSPARK`.
    Then there is no warm daemon (each Python worker loads the kernels itself), the local JVM is
    PySpark's own (an interrupted run may print its stack traces), and ``python -m pipelines`` ends
    with the interpreter's orderly shutdown."""
    if os.environ.get(PLAIN_PYSPARK_ENV, "").strip().lower() in ("1", "true", "yes"):
        return True
    return not _release_is_known()


def internals_missing() -> list[str]:
    """What the installed PySpark no longer has of the private code this module uses (empty: all there)."""
    from pyspark import SparkContext, daemon, java_gateway

    missing = []
    release = pyspark_release()
    if release.split(".")[:2] != MADE_FOR_PYSPARK.split("."):
        missing.append(f"pyspark {release} is not the {MADE_FOR_PYSPARK} line this module was written for")
    for module, name in ((daemon, "manager"), (daemon, "compute_real_exit_code"),
                         (java_gateway, "launch_gateway")):
        if not callable(getattr(module, name, None)):
            missing.append(f"{module.__name__}.{name}")
    launch = getattr(java_gateway, "launch_gateway", None)
    if callable(launch) and "popen_kwargs" not in inspect.signature(launch).parameters:
        missing.append("pyspark.java_gateway.launch_gateway(popen_kwargs=...)")
    if callable(getattr(daemon, "manager", None)) and inspect.signature(daemon.manager).parameters:
        missing.append("pyspark.daemon.manager() without arguments")
    for name in ("_gateway", "_jvm", "_active_spark_context"):
        if not hasattr(SparkContext, name):
            missing.append(f"SparkContext.{name}")
    try:
        from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema  # noqa: F401
    except ImportError:
        missing.append("pyspark.sql.pandas.types.from_arrow_schema/to_arrow_schema")
    if not callable(getattr(SparkContext, "_ensure_initialized", None)):
        missing.append("SparkContext._ensure_initialized")
    return missing


def launch_local_gateway(spark_conf: Any, **popen_kwargs: Any) -> Any:
    """A local JVM started as PySpark starts it (``launch_gateway``), with these ``Popen`` arguments
    (the driver reads its stderr).  Hand it to ``SparkContext(gateway=...)``."""
    from pyspark.java_gateway import launch_gateway
    return launch_gateway(spark_conf, popen_kwargs=popen_kwargs)


def running_gateway() -> Any:
    """The Py4J gateway of this process's Spark context, or None."""
    from pyspark import SparkContext
    return SparkContext._gateway


def active_context() -> Any:
    """This process's running Spark context, or None (``getOrCreate`` would start one)."""
    from pyspark import SparkContext
    return SparkContext._active_spark_context


def submitted_conf() -> Any:
    """Under spark-submit, before the context exists: a ``SparkConf`` of what spark-submit set (the
    JVM's system properties)."""
    from pyspark import SparkConf, SparkContext
    SparkContext._ensure_initialized()
    return SparkConf()


def jvm_of(sc: Any) -> Any:
    """The JVM view of a Spark context (Py4J), for JVM classes PySpark has no Python API for."""
    return sc._jvm


def load_daemon() -> None:
    """Import PySpark's daemon module (and what it imports) ahead of :func:`daemon_manager`."""
    from pyspark import daemon  # noqa: F401


def daemon_manager() -> None:
    """Run PySpark's daemon loop in this process (``pyspark.daemon.manager``): forks a worker per
    connection from the JVM until the JVM closes its end; raises ``SystemExit``."""
    from pyspark import daemon
    daemon.manager()


def daemon_exit_code(code: Any) -> int:
    """The exit status PySpark's daemon gives for a ``SystemExit`` code."""
    from pyspark import daemon
    return int(daemon.compute_real_exit_code(code))


def spark_schema_of_arrow(schema: Any) -> Any:
    """Spark's ``StructType`` for an Arrow schema (``mapInArrow``/``applyInArrow`` want Spark types)."""
    from pyspark.sql.pandas.types import from_arrow_schema
    return from_arrow_schema(schema)


def arrow_schema_of_spark(schema: Any, timezone: str = "UTC") -> Any:
    """The Arrow schema of a Spark ``StructType`` (timestamps as instants in ``timezone``)."""
    from pyspark.sql.pandas.types import to_arrow_schema
    return to_arrow_schema(schema, timezone=timezone)


def quiet_peer_gone() -> None:
    """In this daemon process: no traceback on stderr for a worker whose JVM went away (a broken pipe
    or a reset connection).  PySpark's daemon prints every exception that leaves a forked worker with
    ``traceback.print_exc``; when the JVM exits (the end of a spark-submit run) while a reused worker
    still writes, that is a ``BrokenPipeError`` nobody needs, printed to the terminal of the run.
    Other exceptions are printed as before."""
    import traceback

    print_exc = traceback.print_exc

    def print_unless_peer_gone(*args, **kwargs):
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return None
        return print_exc(*args, **kwargs)

    traceback.print_exc = print_unless_peer_gone
