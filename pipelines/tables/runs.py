"""The tables of one run, all or none: what readers see, and interrupted publications.

A run commits ``messages``, ``message_keys``, ``segments``, ``anomalies`` and ``expiry_audit``, one
commit each, every commit tagged with the run id in its commit metadata
(:meth:`pipelines.delta.TableWriter.commit_metadata`); then it appends its row to ``runs``, with the
version of each table after its commit (``versions`` JSON, key ``tables``).  That row is the commit
marker: Delta commits one table at a time, so a run stopped half-way leaves some tables ahead of the
others, but no ``runs`` row.

Readers (:func:`snapshot`) take the newest row of ``runs`` (:func:`newest_run`) and open each table
at the version it recorded, so a half-published later run stays invisible.  Commits after that
version that belong to no run (``audit --write``, or another tool's) are seen too, up to the first
commit of an unfinished run.  Without any row in ``runs`` nothing is published.  ``runs`` rows
written before the versions were recorded are read as before: the newest version of each table.

The next publication (a rebuild with tables, or ``python -m pipelines tables``) finds the commits of
runs without a ``runs`` row (:meth:`Snapshot.interrupted`), logs a warning, returns them in its
summary (``recovered``), and reads the previous state (segments, anomalies, resume state) from the
snapshot, never from the half-published versions.  Its own commits then replace everything the
interrupted run wrote: a full rebuild overwrites every table; an incremental refresh resumes from the
same watermark, so it replaces the same partitions (the rescanned segments and those the broker
deleted), and it rewrites the other tables whole.
"""
from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Iterable

import pyarrow as pa

from store_format.config import BrokerConfig
from store_format.errors import StoreError, StoreLayoutError

from ..delta import arrow_dataset, commits_after, open_table, run_id_of

__all__ = ["Snapshot", "Interrupted", "snapshot", "newest_run", "run_config", "report_interrupted", "interrupted_note",
           "PUBLICATION_ORDER", "RUN_TABLES"]

log = logging.getLogger(__name__)

# the order in which a run commits its tables; runs last
PUBLICATION_ORDER = ("messages", "message_keys", "segments", "anomalies", "expiry_audit", "runs")
RUN_TABLES = PUBLICATION_ORDER[:-1]   # what a run commits before its runs row


@dataclasses.dataclass(frozen=True)
class Interrupted:
    """A run whose commits reached some tables but whose ``runs`` row was never written."""
    run_id: str
    committed: tuple[str, ...]   # tables holding a commit of the run, in publication order

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(n for n in PUBLICATION_ORDER if n not in self.committed)

    def describe(self) -> str:
        return (f"run {self.run_id}: {', '.join(self.committed)} {'was' if len(self.committed) == 1 else 'were'} "
                f"committed, {', '.join(self.missing)} {'was' if len(self.missing) == 1 else 'were'} missing")

    def as_dict(self) -> dict:
        return {"run_id": self.run_id, "committed": list(self.committed), "missing": list(self.missing)}


class Snapshot:
    """The tables under one root as of the latest complete run (see the module docstring).

    Example:
        >>> snap = snapshot("demo/out/tables")  # doctest: +SKIP
        >>> snap.read_arrow("segments", ["segment", "status"])  # doctest: +SKIP
    """

    def __init__(self, tables: str) -> None:
        self.tables = tables
        self._newest: dict[str, object] = {}   # table -> DeltaTable at its newest version (or None)
        runs_table = self._table("runs")
        rows = arrow_dataset(tables, "runs", runs_table).to_table().to_pylist() if runs_table is not None else []
        self.run: dict | None = newest_run(rows)
        self._complete = {r["run_id"] for r in rows}
        self._recorded: dict[str, int] | None = None
        if self.run is not None:
            try:
                recorded = json.loads(self.run.get("versions") or "{}").get("tables")
            except ValueError:
                recorded = None
            self._recorded = {str(k): int(v) for k, v in recorded.items()} if isinstance(recorded, dict) else None
        self._resolved: dict[str, tuple[int | None, list[tuple[int, str]]]] = {}

    def _table(self, name: str):
        """The table at its newest version, opened once."""
        if name not in self._newest:
            self._newest[name] = open_table(self.tables, name)
        return self._newest[name]

    def _resolve(self, name: str) -> tuple[int | None, list[tuple[int, str]]]:
        """The version readers see, and the commits ``(version, run_id)`` of unfinished runs after it."""
        if name in self._resolved:
            return self._resolved[name]
        dt = self._table(name)
        out: tuple[int | None, list[tuple[int, str]]]
        if dt is None:
            out = (None, [])
        elif name == "runs" or (self.run is not None and self._recorded is None):
            out = (dt.version(), [])   # the marker itself; or a run row from before versions were recorded
        else:
            start = -1 if self._recorded is None else self._recorded.get(name, -1)
            visible, unfinished = start, []
            for commit in commits_after(dt, start):
                run_id = run_id_of(commit)
                if run_id is not None and run_id not in self._complete:
                    unfinished.append((int(commit["version"]), run_id))
                elif not unfinished:
                    visible = int(commit["version"])
            out = (visible if visible >= 0 else None, unfinished)
        self._resolved[name] = out
        return out

    def recorded_version(self, name: str) -> int | None:
        """The version of table ``name`` the newest ``runs`` row recorded; None without a row, for a row
        written before versions were recorded, or for a table that row does not name."""
        return None if self._recorded is None else self._recorded.get(name)

    def version(self, name: str) -> int | None:
        """The version of table ``name`` readers see (None: not published)."""
        return self._resolve(name)[0]

    def open(self, name: str):
        """The table at :meth:`version` (``deltalake.DeltaTable``), or None."""
        v = self.version(name)
        if v is None:
            return None
        dt = self._table(name)
        return dt if dt.version() == v else open_table(self.tables, name, v)

    def read_arrow(self, name: str, columns=None, filter=None) -> pa.Table | None:
        """Rows of table ``name`` as readers see it (None: not published)."""
        dt = self.open(name)
        if dt is None:
            return None
        return arrow_dataset(self.tables, name, dt).to_table(columns=list(columns) if columns else None,
                                                             filter=filter)

    def interrupted(self) -> list[Interrupted]:
        """Runs whose commits reached some tables after the snapshot but that have no ``runs`` row."""
        by_run: dict[str, list[str]] = {}
        first_version: dict[str, tuple[int, int]] = {}
        for i, name in enumerate(RUN_TABLES):
            for version, run_id in self._resolve(name)[1]:
                if name not in by_run.setdefault(run_id, []):
                    by_run[run_id].append(name)
                first_version.setdefault(run_id, (i, version))
        order = sorted(by_run, key=lambda r: first_version[r])
        return [Interrupted(r, tuple(n for n in RUN_TABLES if n in by_run[r])) for r in order]


def newest_run(rows: Iterable[dict]) -> dict | None:
    """The latest complete run among rows of ``runs``: the latest ``finished_at``, then the greatest
    ``run_id`` (a row missing either, from a damaged table, sorts before the others); None without rows."""
    return max(rows, key=lambda r: (r["finished_at"] is not None, r["finished_at"] or 0, r["run_id"] or ""),
               default=None)


def run_config(run: dict | None, *, tolerant: bool = False) -> BrokerConfig:
    """The broker settings a run recorded (its ``config`` JSON), the broker's defaults without a run.
    A record that cannot be read is an error naming the run, or the defaults when ``tolerant``
    (``validate`` reports what it finds rather than stopping)."""
    if run is None or not run.get("config"):
        return BrokerConfig()
    try:
        props = {str(k): str(v) for k, v in json.loads(run["config"]).items()}
        return BrokerConfig.from_properties(props)
    except (ValueError, AttributeError, StoreError) as e:
        if tolerant:
            return BrokerConfig()
        raise StoreLayoutError(f"runs table: the settings recorded by run {run.get('run_id')} cannot be read "
                               f"({e}); pass --config, or publish the tables again") from e


def snapshot(tables: str) -> Snapshot:
    """The tables under ``tables`` as readers see them: those of the latest complete run."""
    return Snapshot(tables)


def report_interrupted(snap: Snapshot, run_id: str) -> list[Interrupted]:
    """Log the interrupted publications this run completes (by replacing what they wrote)."""
    found = snap.interrupted()
    for it in found:
        log.warning("%s: completing the interrupted publish of %s (run %s replaces it)", snap.tables,
                    it.describe(), run_id)
    return found


def interrupted_note(recovered: dict) -> str:
    """The summary line on an interrupted publication a run completed (``Interrupted.as_dict()``)."""
    return "completed the interrupted publish of " + Interrupted(recovered["run_id"],
                                                                 tuple(recovered["committed"])).describe()
