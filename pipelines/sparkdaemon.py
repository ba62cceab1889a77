"""Spark's Python daemon, with the kernels loaded before it forks workers.

Each Spark Python worker would otherwise import numba and load the compiled kernels on its first
task (about a second on a small machine).  Set as ``spark.python.daemon.module`` for local
sessions (:func:`pipelines.session.build_spark_session`): workers are forked from this process and
inherit the loaded code.
"""
from __future__ import annotations

from pyspark import daemon

from store_format.warmup import warm_up

if __name__ == "__main__":
    warm_up()
    daemon.manager()
