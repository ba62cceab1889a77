"""Entry point for ``spark-submit``: the same arguments as ``python -m pipelines``.

    spark-submit --master yarn pipelines/spark_submit.py --store hdfs:///rmq/store --out hdfs:///rmq/rebuilt \\
        --config hdfs:///rmq/broker.conf
    spark-submit pipelines/spark_submit.py audit --tables hdfs:///rmq/tables --as-of 2026-11-22T04:00:00Z

Without a command it runs ``rebuild``.  The session is the one spark-submit configured (master,
executors, memory); ship the packages with ``--py-files`` when the executors do not have them.

Spark's log: spark-submit configures it as it starts the JVM, before this file runs; the install
puts the project's configuration into the venv's Spark (:func:`pipelines.warm.install_submit_log_config`),
and the context gets ``spark.log.level`` (ERROR unless ``--log-level``).  For a local master the
Python workers fork from a warm daemon (:func:`pipelines.session.build_spark_context`).  See
``docs/clusters.md``.
"""
from __future__ import annotations

import os
import sys

if __package__ in (None, ""):
    # run as a file from a checkout: make the repo's packages importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pipelines.cli import main  # noqa: E402


def run(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-"):
        argv = ["rebuild", *argv]
    return main(argv)


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
