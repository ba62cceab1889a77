"""Data-quality validation of the Delta tables with Great Expectations (``python -m pipelines validate``).

The story of a validation:

1. **figures** (:mod:`.figures`, with :mod:`.table_reading`, :mod:`.message_figures`,
   :mod:`.key_figures` and :mod:`.key_lookups`): the tables are read once, as readers see them (the
   versions of the latest complete run, :mod:`pipelines.tables.runs`; without any run, the newest
   versions), and reduced to small frames: one row per table, per segment, per consume queue, per
   index file, per expiry-audit file, per anomaly kind, per sampled key lookup, and for the latest
   run.  Two engines count: ``arrow`` (default) reads with delta-rs batch by batch and reduces in
   Arrow/numpy; ``spark`` (:mod:`.spark_figures`) reads with Spark (delta-spark when the session has
   it) and reduces with DataFrame aggregates, windows and joins.  Both hand their counts to
   :func:`.figures.assemble_figures`, which makes the frames.  No frame holds message data (keys,
   bodies, properties), only counts, offsets, times and the ids of the rows;
2. **suites** (:mod:`.suites`): every check is a Great Expectations expectation on one of those
   frames, so that the whole verdict shows in the Data Docs; :data:`SUITES` says which damage each
   one catches;
3. **run** (:mod:`.gx_runner`): one GX checkpoint per suite, on GX's pandas data source (or its Spark
   data source, on Spark DataFrames of the frames, with ``engine="spark"``), results in the ``COMPLETE`` format
   naming every segment, queue or file a failing expectation failed on;
4. **report** (:mod:`.report`, :mod:`.data_docs`): the verdict as text or JSON, GX's Data Docs under
   ``DOCS/gx`` and a static ``DOCS/index.html`` (default ``DOCS``: ``TABLES/_data_docs``).

``python -m pipelines validate --json`` lists the failing expectations with their observed values.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from ..tables.schema import TABLE_NAMES
from .data_docs import DOCS_FOLDER, docs_folder, write_index
from .errors import ValidationSetupError
from .figures import Figures, assemble_figures, compute_figures
from .gx_runner import import_gx, run_suites
from .report import Failure, SuiteOutcome, ValidationReport
from .suites import SUITES
from .table_reading import TableReader

__all__ = ["validate_tables", "compute_figures", "ENGINES", "ValidationReport", "SuiteOutcome",
           "Failure", "Figures", "SUITES", "DOCS_FOLDER", "ValidationSetupError"]

log = logging.getLogger(__name__)


ENGINES = ("arrow", "spark")


def validate_tables(tables: str, docs: str | None = None, *, expected_anomalies: Mapping[str, int] | None = None,
                    write_docs: bool = True, engine: str = "arrow", spark: Any = None) -> ValidationReport:
    """Validate the Delta tables under ``tables`` with the suites of :data:`SUITES`.

    Args:
        tables: root folder (or URI) of the tables.
        docs: Data Docs folder (default ``TABLES/_data_docs``); ``DOCS/index.html`` is the entry page.
        expected_anomalies: anomaly count accepted per kind, e.g. ``{"crc_mismatch": 1}`` for a store
            whose damage is known (default 0 for every kind: a corrupt store fails).
        write_docs: build the Data Docs (False: only the report).
        engine: ``arrow`` (default): the tables read with delta-rs and reduced in Arrow, the suites on
            GX's pandas data source; ``spark``: the tables read by Spark (``spark.read.format("delta")``
            when the session has Delta's classes) and reduced by Spark, the same suites on GX's Spark
            data source.  Both give the same report.
        spark: the ``SparkSession`` of ``engine="spark"`` (default: a local one, with delta-spark's
            cached jars when there are).
    Returns:
        The report (``success`` is False when some expectation fails).
    Raises:
        ValidationSetupError: no tables under ``tables``, Great Expectations missing, or an unusable
            docs folder.
        ValueError: an unknown ``engine``.

    Example:
        >>> report = validate_tables("demo/out/tables")  # doctest: +SKIP
        >>> report.success, [f.line() for f in report.failures]  # doctest: +SKIP
    """
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    t0 = time.perf_counter()
    reader = TableReader(tables)
    if not any(reader.open(name) is not None for name in TABLE_NAMES):
        compute_figures(tables)  # raises the "no tables" error before Great Expectations is loaded
    gx_mod = import_gx()
    docs_dir = docs_folder(tables, docs) if write_docs else None
    read_with = "delta-rs"
    if engine == "spark":
        from .spark_figures import SparkSource
        if spark is None:
            spark = _local_session()
        source = SparkSource(spark, tables)
        read_with = "delta-spark" if source.reader == "delta" else "spark-parquet"
        figures = assemble_figures(source, tables, expected_anomalies=expected_anomalies)
    else:
        figures = compute_figures(tables, expected_anomalies=expected_anomalies)
    log.info("figures computed in %.1f s (%s, tables read with %s)", figures.seconds, engine, read_with)
    outcomes, failures, data_source = run_suites(gx_mod, figures, docs_dir, spark=spark if engine == "spark" else None)
    report = ValidationReport(tables=tables, success=all(o.success for o in outcomes), suites=outcomes,
                              failures=failures, anomaly_counts=figures.anomaly_counts,
                              latest_run=figures.latest_run, docs=None, seconds=0.0, figures=figures,
                              engine=engine, read_with=read_with, gx_data_source=data_source)
    if docs_dir is not None:
        report.docs = write_index(docs_dir, report)
    report.seconds = round(time.perf_counter() - t0, 3)
    return report


def _local_session():
    """A local SQL session for ``engine="spark"`` without one: with delta-spark's cached jars
    (:mod:`pipelines.delta_jars`) when there are, so that the tables are read through Delta."""
    from ..delta_jars import WRITER_CONF, cached_jars
    from ..session import build_spark_session
    return build_spark_session(extra_conf={WRITER_CONF: "delta-spark" if cached_jars() else "auto"})
