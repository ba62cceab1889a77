"""Entry point for ``spark-submit``: the same arguments as ``python -m pipelines``.

    spark-submit --master yarn pipelines/spark_submit.py --store hdfs:///rmq/store --out hdfs:///rmq/rebuilt \\
        --config hdfs:///rmq/broker.conf
    spark-submit pipelines/spark_submit.py audit --tables hdfs:///rmq/tables --as-of 2026-11-22T04:00:00Z

Without a command it runs ``rebuild``.  The session is the one spark-submit configured (master,
executors, memory); ship the packages with ``--py-files`` when the executors do not have them.

Spark's log: the context gets ``spark.log.level`` (ERROR unless ``--log-level``) and, for a local
master, warm Python workers (:func:`pipelines.session.build_spark_context`).  spark-submit starts the
driver's JVM with Spark's default log configuration (INFO) before this file runs, so a few start-up
lines remain; for none, give the JVM this project's configuration from its start:
``--driver-java-options -Dlog4j2.configurationFile=pipelines/log4j2.properties``.
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
