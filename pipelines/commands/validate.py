"""The ``validate`` command (:mod:`pipelines.validate`): the report as text or JSON, and the exit code."""
from __future__ import annotations

import json
import os
import sys

from ..validate import validate_tables

__all__ = ["run_validate_command"]


def run_validate_command(*, tables: str, docs: str | None, as_json: bool, engine: str = "arrow",
                         master: str | None = None) -> int:
    """``python -m pipelines validate``: 0 when every expectation holds, 1 when some fail (one line
    each, with the observed value); errors a user can fix raise :class:`StoreError` (exit 2).
    ``--engine spark`` starts a session on ``master`` (with delta-spark's cached jars on a local one)."""
    session = None
    if engine == "spark":
        from ..delta_jars import cached_jars
        from ..session import start_session
        local = (master or "local").startswith("local") and "PYSPARK_GATEWAY_PORT" not in os.environ
        session = start_session(master, None, sql=True, table_writer="delta-spark" if local and cached_jars()
                                else "auto").result()
    report = validate_tables(tables, docs, engine=engine, spark=session)
    if as_json:
        print(json.dumps(report.to_dict(), indent=2, default=str))
    else:
        print(report.render())
    sys.stdout.flush()
    return 0 if report.success else 1
