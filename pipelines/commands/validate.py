"""The ``validate`` command (:mod:`pipelines.validate`): the report as text or JSON, and the exit code."""
from __future__ import annotations

import json
import sys

from ..validate import validate_tables

__all__ = ["run_validate_command"]


def run_validate_command(*, tables: str, docs: str | None, as_json: bool) -> int:
    """``python -m pipelines validate``: 0 when every expectation holds, 1 when some fail (one line
    each, with the observed value); errors a user can fix raise :class:`StoreError` (exit 2)."""
    report = validate_tables(tables, docs)
    if as_json:
        print(json.dumps(report.to_dict(), indent=2, default=str))
    else:
        print(report.render())
    sys.stdout.flush()
    return 0 if report.success else 1
