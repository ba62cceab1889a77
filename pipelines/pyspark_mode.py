"""Whether the job may reach into PySpark's private code (``PIPELINES_PLAIN_PYSPARK``): read by the
session builder and by ``python -m pipelines``'s exit, without importing PySpark."""
from __future__ import annotations

import os

__all__ = ["PLAIN_PYSPARK_ENV", "plain_pyspark"]

PLAIN_PYSPARK_ENV = "PIPELINES_PLAIN_PYSPARK"


def plain_pyspark() -> bool:
    """``PIPELINES_PLAIN_PYSPARK=1``: run on PySpark's public means only, without the three things
    that reach into its private code: the warm Python daemon (``spark.python.daemon.module`` =
    :mod:`pipelines.sparkdaemon`, with its spare process, ``gc.freeze`` and ``os._exit``), the local
    JVM the project launches itself with its stderr piped here (``pipelines.session._launch_local_jvm``),
    and the fast exit of ``python -m pipelines`` (``let_local_jvm_go``, ``os._exit``).  Slower to
    start (each Python worker loads the kernels itself) and an interrupted run may print the JVM's
    stack traces; the output is the same.  For a PySpark release whose private code moved, or to rule
    these out when something goes wrong."""
    return os.environ.get(PLAIN_PYSPARK_ENV, "").strip().lower() in ("1", "true", "yes")
