"""Maintenance of the published tables: OPTIMIZE (compaction of small files) and VACUUM (removal of the
files no readable version needs), without ever changing what readers see.

Readers open each table at the version the newest ``runs`` row recorded, plus the later commits that
belong to no run (:mod:`pipelines.tables.runs`).  So:

* :func:`optimize_tables` rewrites small files into larger ones, one commit per table, with
  ``dataChange=false`` and no run id in its commit metadata (a standalone commit, like
  ``audit --write``): the snapshot takes it in and reads the same rows.  A table holding commits of an
  interrupted run is left alone (the next publication replaces them; a compaction on top of them
  would be invisible to readers anyway).  delta-rs's ``optimize.compact()``, or delta-spark's
  ``OPTIMIZE`` when the given session has Delta.
* :func:`vacuum_tables` deletes the files of replaced versions, but keeps every file of the versions
  a reader may open: per table, the version the newest ``runs`` row recorded and every later one.
  The retention never goes below the whole hours since that version's commit, and the files of those
  versions are pinned exactly (delta-rs's ``keep_versions``), so ``--retain-hours 0`` removes what
  only replaced versions referenced and nothing a reader can reach.

Both take the tables' lock (:class:`pipelines.outlock.OutputLock`), as the writers of the tables do.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import logging
import math
import os
import time
from collections.abc import Sequence

from store_format.errors import StoreLayoutError

from ..delta import open_table, session_settings, table_uri
from ..outlock import OutputLock
from .runs import Snapshot, snapshot
from .schema import TABLE_NAMES

__all__ = ["OptimizeResult", "VacuumResult", "optimize_tables", "vacuum_tables", "readable_from",
           "render_optimize", "render_vacuum", "DEFAULT_RETAIN_HOURS", "MESSAGE_KEYS_Z_ORDER"]

log = logging.getLogger(__name__)

DEFAULT_RETAIN_HOURS = 168   # Delta's delta.deletedFileRetentionDuration default: one week
# Z-order of message_keys by its lookup columns: off, it read no fewer files (docs/tables.md, Maintenance)
MESSAGE_KEYS_Z_ORDER: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class OptimizeResult:
    """What OPTIMIZE did to one table: files before and after, the new version (None: no commit)."""
    table: str
    files_before: int
    files_after: int
    version: int | None
    skipped: str | None = None     # why the table was left alone
    z_order: tuple[str, ...] = ()

    def line(self) -> str:
        if self.skipped:
            return f"{self.table}: skipped, {self.skipped}"
        if self.version is None:
            return f"{self.table}: {self.files_before} files, nothing to compact"
        how = f"z-ordered by {', '.join(self.z_order)}" if self.z_order else "compacted"
        return f"{self.table}: {self.files_before} -> {self.files_after} files, {how} (version {self.version})"


@dataclasses.dataclass(frozen=True)
class VacuumResult:
    """What VACUUM removed (or, dry run, would remove) from one table, and what it kept and why."""
    table: str
    kept_from: int | None          # the oldest version whose files are all kept (None: no table)
    why: str                       # why that version must stay readable
    retention_hours: int           # the retention given to delta-rs
    files: tuple[str, ...]         # removed, or that would be removed
    dry_run: bool

    def line(self) -> str:
        verb = "would remove" if self.dry_run else "removed"
        return (f"{self.table}: {verb} {len(self.files)} files; kept every file of version {self.kept_from} "
                f"and later ({self.why}), retention {self.retention_hours} h")


def _local(tables: str) -> str:
    return os.path.abspath(tables) if "://" not in tables else tables


def _names(tables: str, names: Sequence[str] | None) -> list[str]:
    """The tables asked for (default: all six), checked; at least one must exist."""
    chosen = list(dict.fromkeys(names)) if names else list(TABLE_NAMES)
    unknown = [n for n in chosen if n not in TABLE_NAMES]
    if unknown:
        raise StoreLayoutError(f"--table {', '.join(unknown)}: no such table (the tables are "
                               f"{', '.join(TABLE_NAMES)})")
    if not any(open_table(tables, n) is not None for n in chosen):
        raise StoreLayoutError(f"--tables {tables}: no Delta table there (publish them with rebuild or "
                               "python -m pipelines tables)")
    return chosen


def _metadata(kind: str, writer: str) -> dict[str, str]:
    """Commit metadata of a maintenance commit: no run id, so readers see it on top of the run."""
    return {"standalone": f"{kind}-{time.strftime('%Y%m%d%H%M%S', time.gmtime())}", "writer": writer}


def optimize_tables(tables: str, names: Sequence[str] | None = None, *, spark=None,
                    z_order_keys: Sequence[str] = MESSAGE_KEYS_Z_ORDER) -> list[OptimizeResult]:
    """Compact the small files of the tables under ``tables`` (see the module docstring).

    Args:
        tables: root of the tables.
        names: tables to compact (default: all six).
        spark: a session with Delta's classes: ``OPTIMIZE`` through delta-spark (else delta-rs).
        z_order_keys: columns to Z-order ``message_keys`` by (default: none, plain compaction).

    Returns:
        One :class:`OptimizeResult` per table asked for.

    Raises:
        StoreLayoutError: an unknown table name, or no table under ``tables``.
        OutputInUseError: another run holds the tables' lock.
    """
    with OutputLock(_local(tables), "--tables", "optimize"):
        chosen = _names(tables, names)
        stopped = {t: it.run_id for it in snapshot(tables).interrupted() for t in it.committed}
        out = []
        for name in chosen:
            dt = open_table(tables, name)
            if dt is None:
                out.append(OptimizeResult(name, 0, 0, None, skipped="not published"))
                continue
            before = len(dt.file_uris())
            if name in stopped:
                out.append(OptimizeResult(name, before, before, None, skipped=(
                    f"it holds commits of the interrupted run {stopped[name]} (the next publication replaces them)")))
                continue
            z_order = tuple(z_order_keys) if name == "message_keys" else ()
            version = _optimize_one(tables, name, dt, spark, z_order)
            after = len(open_table(tables, name).file_uris()) if version is not None else before
            result = OptimizeResult(name, before, after, version, z_order=z_order if version is not None else ())
            log.debug("%s", result.line())
            out.append(result)
        return out


def _optimize_one(tables: str, name: str, dt, spark, z_order: tuple[str, ...]) -> int | None:
    """One OPTIMIZE commit of table ``name``; its version, or None when there was nothing to rewrite."""
    from ..session import delta_classes_available
    start = dt.version()
    if spark is not None and delta_classes_available(spark):
        path = _local(table_uri(tables, name)).replace("`", "``")
        sql = f"OPTIMIZE delta.`{path}`" + (f" ZORDER BY ({', '.join(z_order)})" if z_order else "")
        with session_settings(spark, {"spark.databricks.delta.commitInfo.userMetadata":
                                      json.dumps(_metadata("optimize", "delta-spark"))}):
            spark.sql(sql).collect()
    else:
        from deltalake import CommitProperties
        props = CommitProperties(custom_metadata=_metadata("optimize", "delta-rs"))
        if z_order:
            dt.optimize.z_order(list(z_order), commit_properties=props)
        else:
            dt.optimize.compact(commit_properties=props)
    now = open_table(tables, name).version()
    return now if now != start else None


def readable_from(snap: Snapshot, name: str, dt) -> tuple[int, str]:
    """The oldest version of table ``name`` (``dt`` at its newest version) that a reader may open, and
    why: the version the newest ``runs`` row recorded (readers open it, or a later one); the newest
    version for ``runs`` itself and for runs rows from before versions were recorded; version 0 when
    no run is complete (nothing is published yet: everything is kept)."""
    newest = dt.version()
    if snap.run is None:
        return 0, "no complete run yet: every version kept"
    run_id = snap.run.get("run_id")
    if name == "runs":
        return newest, f"the newest version, holding run {run_id}'s row"
    recorded = snap.recorded_version(name)
    if recorded is None:
        return newest, f"run {run_id} recorded no version of it: its newest version"
    return min(recorded, newest), f"what run {run_id}, the newest complete run, recorded"


def _commit_time_ms(dt, version: int) -> int | None:
    """The commit timestamp (epoch ms) of ``version`` of ``dt``; None when the log no longer has it."""
    for commit in dt.history(limit=dt.version() - version + 1):
        if int(commit.get("version", -1)) == version and commit.get("timestamp") is not None:
            return int(commit["timestamp"])
    return None


def vacuum_tables(tables: str, names: Sequence[str] | None = None, *, retain_hours: int = DEFAULT_RETAIN_HOURS,
                  dry_run: bool = False) -> list[VacuumResult]:
    """Delete the files only replaced versions need (see the module docstring).

    Args:
        tables: root of the tables.
        names: tables to vacuum (default: all six).
        retain_hours: keep the files removed less than this many hours ago (at least; the versions a
            reader may open are kept whatever it is).
        dry_run: list the files, delete nothing.

    Returns:
        One :class:`VacuumResult` per published table asked for.

    Raises:
        StoreLayoutError: an unknown table name, no table under ``tables``, or a negative retention.
        OutputInUseError: another run holds the tables' lock.
    """
    if retain_hours < 0:
        raise StoreLayoutError(f"--retain-hours {retain_hours}: give 0 or more hours")
    with OutputLock(_local(tables), "--tables", "vacuum"):
        chosen = _names(tables, names)
        snap = snapshot(tables)
        now_ms = time.time() * 1000
        out = []
        for name in chosen:
            dt = open_table(tables, name)
            if dt is None:
                continue
            oldest, why = readable_from(snap, name, dt)
            committed = _commit_time_ms(dt, oldest)
            # never below the whole hours since the oldest readable commit; its files are pinned exactly
            since = math.floor(max(0.0, now_ms - committed) / 3_600_000) if committed is not None else retain_hours
            retention = max(retain_hours, since)
            if committed is not None:
                when = _dt.datetime.fromtimestamp(committed / 1000, _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
                why = f"{why}, committed {when}"
            from deltalake import CommitProperties
            files = dt.vacuum(retention_hours=retention, dry_run=dry_run, enforce_retention_duration=False,
                              keep_versions=list(range(oldest, dt.version() + 1)),
                              commit_properties=CommitProperties(custom_metadata=_metadata("vacuum", "delta-rs")))
            result = VacuumResult(name, oldest, why, retention, tuple(sorted(files)), dry_run)
            log.debug("%s", result.line())
            out.append(result)
        return out


def render_optimize(results: Sequence[OptimizeResult]) -> str:
    """The text ``python -m pipelines optimize`` prints: one line per table."""
    return "\n".join(r.line() for r in results)


def render_vacuum(results: Sequence[VacuumResult]) -> str:
    """The text ``python -m pipelines vacuum`` prints: one line per table, then the files with --dry-run."""
    lines = [r.line() for r in results]
    for r in results:
        if r.dry_run:
            lines += [f"  {r.table}/{f}" for f in r.files]
    return "\n".join(lines)
