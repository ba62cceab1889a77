"""The ``audit`` command (:mod:`pipelines.audit`): its options checked, the audit run, optionally
written to the ``expiry_audit`` table and to a JSON report, and printed."""
from __future__ import annotations

import json
from collections.abc import Sequence

from store_format.config import load_broker_config
from store_format.errors import UsageError
from store_format.expiry_disk import FORCIBLY_PROPERTY, WARNING_PROPERTY
from store_format.expiry_dledger import FORCE_CLEAN_PROPERTY

from ..audit import render, run_audit

__all__ = ["run_audit_command"]


def run_audit_command(*, tables: str, as_of_ms: int, config_path: str | None, store: str | None,
                      consumer_file: str | None, delay_file: str | None, disk_used_percent: float | None, tz: str,
                      time_source: str, write: bool, report: str | None, as_json: bool,
                      disk_size: int | None = None, manual_delete: bool = False,
                      system_properties: Sequence[str] = ()) -> int:
    """``python -m pipelines audit``: print (and optionally save) the audit of the next cleanups."""
    from store_format.store import read_text
    config = load_broker_config(read_text(config_path)) if config_path else None
    if disk_used_percent is not None and not 0 <= disk_used_percent <= 100:
        raise UsageError(f"--disk-used {disk_used_percent:g}: give the used share of the disk in percent, 0 to 100")
    if disk_size is not None and disk_size <= 0:
        raise UsageError(f"--disk-size {disk_size}: give the disk's size, e.g. 500g")
    props = {}
    for item in system_properties:
        key, sep, value = item.partition("=")
        if not sep or key not in (WARNING_PROPERTY, FORCIBLY_PROPERTY, FORCE_CLEAN_PROPERTY):
            raise UsageError(f"-D {item!r}: give {WARNING_PROPERTY}=RATIO, {FORCIBLY_PROPERTY}=RATIO or (DLedger) "
                             f"{FORCE_CLEAN_PROPERTY}=RATIO, as the broker's JVM has them")
        props[key] = value
    rows, summary = run_audit(tables, as_of_ms, config=config, consumer_file=consumer_file, delay_file=delay_file,
                              disk_used_ratio=None if disk_used_percent is None else disk_used_percent / 100.0, tz=tz,
                              time_source=time_source, store=store, disk_size_bytes=disk_size,
                              manual_delete=manual_delete, system_properties=props)
    if write:
        from ..delta import open_writer
        from ..tables.schema import DESCRIPTIONS, EXPIRY_AUDIT_SCHEMA
        # complete by itself: readers see it on top of the latest complete run
        open_writer(None, tables, f"audit-{as_of_ms}", standalone=True).write(
            "expiry_audit", rows, EXPIRY_AUDIT_SCHEMA, description=DESCRIPTIONS["expiry_audit"])
    if report:
        from store_format.store import resolve
        fs, path = resolve(report)
        parent = path.rsplit("/", 1)[0]
        if parent and parent != path:
            fs.create_dir(parent, recursive=True)
        with fs.open_output_stream(path) as out:
            out.write(json.dumps(summary, indent=2, default=str).encode())
    print(json.dumps(summary, indent=2, default=str) if as_json else render(summary))
    return 0
