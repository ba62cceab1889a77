"""PySpark orchestration of the offline rebuild: plan splits → scan → chain → build → commit → tables.

The public API, the same functions the command line, ``spark-submit``, the Airflow DAG and the
notebooks call:

* rebuild: :func:`run_rebuild` (:class:`RebuildSummary`, :class:`Progress`), with a session from
  :func:`start_session` (:class:`PendingSession`) and settings from :func:`load_config_for`
  (:class:`BrokerConfig`);
* tables: :func:`run_tables` (:func:`render_tables_summary`), :func:`snapshot` of the latest
  complete run (:class:`Snapshot`), :func:`read_arrow`, :func:`arrow_dataset`;
* lookups: :func:`lookup_key`, :func:`lookup_msg_id`, :func:`lookup_offset_msg_id` (and their
  plural forms) through the tables, :func:`lookup_index` through the index files
  (:class:`LookupResult`);
* :func:`run_audit` (:func:`load_offsets`), :func:`validate_tables` (:class:`ValidationReport`),
  :func:`verify_store` (:class:`VerifyReport`), :func:`repair_store` (:class:`RepairResult`);
* notebooks: :func:`open_notebook_store` (:class:`NotebookStore`); the command line: :func:`main`;
* the errors a user can hit, all :class:`StoreError`.

Importing the package is cheap: each name is imported from its module on first use (PEP 562
``__getattr__``), so ``import pipelines`` starts neither Spark nor numba.

Example::

    import pipelines

    summary = pipelines.run_rebuild("store", "out", config_path="store/broker.conf", overwrite=True)
    print(summary.render())
"""
from __future__ import annotations

import importlib

TYPE_CHECKING = False   # typing.TYPE_CHECKING without importing typing (mypy and ruff know the name)
if TYPE_CHECKING:
    from typing import Any

    from store_format.config import BrokerConfig
    from store_format.errors import CorruptStoreError, StoreError, StoreLayoutError, UnsupportedConfigError, UsageError
    from store_format.store import load_config_for

    from .audit import run_audit
    from .brokerlock import LiveBrokerError
    from .cli import main
    from .delta import TablesError, arrow_dataset, read_arrow
    from .lookup import (
        LookupResult,
        lookup_index,
        lookup_index_keys,
        lookup_key,
        lookup_keys,
        lookup_msg_id,
        lookup_msg_ids,
        lookup_offset_msg_id,
        lookup_offset_msg_ids,
    )
    from .notebook import NotebookStore, open_notebook_store
    from .outlock import OutputInUseError
    from .preflight import InsufficientSpaceError
    from .rebuild import Progress, RebuildSummary, run_rebuild
    from .session import PendingSession, start_session
    from .tables import render_tables_summary, run_tables
    from .tables.expiry_audit import load_offsets
    from .tables.runs import Snapshot, snapshot
    from .validate import ValidationReport, ValidationSetupError, validate_tables
    from .verify import RepairResult, VerifyReport, repair_store, verify_store

__all__ = [
    # rebuild
    "run_rebuild", "RebuildSummary", "Progress", "start_session", "PendingSession", "load_config_for", "BrokerConfig",
    # tables
    "run_tables", "render_tables_summary", "snapshot", "Snapshot", "read_arrow", "arrow_dataset",
    # lookups
    "LookupResult", "lookup_key", "lookup_keys", "lookup_msg_id", "lookup_msg_ids", "lookup_offset_msg_id",
    "lookup_offset_msg_ids", "lookup_index", "lookup_index_keys",
    # audit, validate, verify and repair
    "run_audit", "load_offsets", "validate_tables", "ValidationReport", "verify_store", "VerifyReport",
    "repair_store", "RepairResult",
    # notebooks and the command line
    "open_notebook_store", "NotebookStore", "main",
    # errors
    "StoreError", "StoreLayoutError", "UnsupportedConfigError", "CorruptStoreError", "UsageError", "TablesError",
    "ValidationSetupError", "OutputInUseError", "LiveBrokerError", "InsufficientSpaceError",
]

# the module each public name comes from, imported on first use
_HOME = {
    **dict.fromkeys(["run_rebuild", "RebuildSummary", "Progress"], "pipelines.rebuild"),
    **dict.fromkeys(["start_session", "PendingSession"], "pipelines.session"),
    "load_config_for": "store_format.store",
    "BrokerConfig": "store_format.config",
    **dict.fromkeys(["run_tables", "render_tables_summary"], "pipelines.tables"),
    **dict.fromkeys(["snapshot", "Snapshot"], "pipelines.tables.runs"),
    **dict.fromkeys(["read_arrow", "arrow_dataset", "TablesError"], "pipelines.delta"),
    **dict.fromkeys(["LookupResult", "lookup_key", "lookup_keys", "lookup_msg_id", "lookup_msg_ids",
                     "lookup_offset_msg_id", "lookup_offset_msg_ids", "lookup_index", "lookup_index_keys"],
                    "pipelines.lookup"),
    "run_audit": "pipelines.audit",
    "load_offsets": "pipelines.tables.expiry_audit",
    **dict.fromkeys(["validate_tables", "ValidationReport", "ValidationSetupError"], "pipelines.validate"),
    **dict.fromkeys(["verify_store", "VerifyReport", "repair_store", "RepairResult"], "pipelines.verify"),
    **dict.fromkeys(["open_notebook_store", "NotebookStore"], "pipelines.notebook"),
    "main": "pipelines.cli",
    **dict.fromkeys(["StoreError", "StoreLayoutError", "UnsupportedConfigError", "CorruptStoreError", "UsageError"],
                    "store_format.errors"),
    "OutputInUseError": "pipelines.outlock",
    "LiveBrokerError": "pipelines.brokerlock",
    "InsufficientSpaceError": "pipelines.preflight",
}


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use (PEP 562)."""
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value   # the next use does not come here
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
