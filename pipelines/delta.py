"""Writing and reading the Delta tables, with or without delta-spark.

Two writers, one contract (:class:`TableWriter`): each :meth:`~TableWriter.write` is **one** Delta
commit that removes the rows of the partitions a :class:`Where` selects (or the whole table) and adds
the given rows; the driver is the only committer, and a failed write leaves the previous version as
it was (at worst some unreferenced Parquet files).  Every commit carries the writer's run id in its
commit metadata (:func:`run_id_of` reads it back), so that a reader can tell the commits of a run
whose publication never finished (:mod:`pipelines.tables.runs`).

:func:`writer_choice` picks one (``--table-writer``, :mod:`pipelines.delta_jars`):

* :class:`DeltaSparkWriter`: when delta-spark's JVM classes and SQL extension are in the session (the
  cached jars of a local run, ``--packages`` on a cluster): ``CREATE TABLE ... AS SELECT`` for a new
  table, ``DataFrame.write.format("delta")`` with ``replaceWhere`` after.
* :class:`DeltaRsWriter`: otherwise.  Arrow tables go through ``deltalake.write_deltalake``
  (``predicate`` for a partial overwrite).  Rows made by Spark (or by Python tasks, which write their
  own Parquet files and spare the rows a round trip through the JVM) are written under
  ``<table>/_staging/<run>/``; the driver moves the files into the table's partition folders, reads
  their footers for the file statistics, and commits them with delta-rs as one transaction: delta-rs
  derives the remove actions itself from the partitions the :class:`Where` selects.

Both keep the plain protocol every Delta reader accepts (reader 1, writer 2: no deletion vectors, no
column mapping); timestamps are Delta ``timestamp`` (UTC instants, Parquet ``TIMESTAMP_MICROS``).

It holds two writers behind one contract, the Parquet-to-Delta commit, and the readers; the file
statistics of that commit are :mod:`pipelines.delta_stats`.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import time
import urllib.parse
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from store_format.errors import StoreError
from store_format.store import resolve

from .delta_stats import file_stats
from .session import delta_classes_available, spark_schema, tag_jobs

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["Where", "commit_parquet_files", "STAGING", "TableWriter", "DeltaSparkWriter",
           "DeltaRsWriter", "open_writer", "writer_choice", "table_uri", "table_exists", "open_table", "read_arrow",
           "read_spark", "live_files", "file_uris", "commits_after", "run_id_of", "arrow_dataset", "TablesError",
           "session_settings"]

STAGING = "_staging"


class TablesError(StoreError):
    """A Delta table cannot be read or written as expected."""


@dataclasses.dataclass(frozen=True)
class Where:
    """Partitions to replace: the OR of ``(column, op, value)`` conditions on one partition column,
    op one of ``=``, ``>=``, ``<``, ``in``.  Values compare as the partition strings do (segment names
    are fixed-width digits, so string order is offset order)."""
    conditions: tuple[tuple[str, str, object], ...]

    def __post_init__(self) -> None:
        if len({col for col, _, _ in self.conditions}) > 1:
            raise ValueError("a Where selects partitions by one column")

    def _parts(self) -> list[tuple[str, str, tuple[object, ...]]]:
        """The conditions with their values as tuples (one value but for ``in``), empty ``in`` dropped."""
        out = []
        for col, op, value in self.conditions:
            values = tuple(value) if isinstance(value, (list, tuple, set, frozenset)) else (value,)
            if values:
                out.append((col, op, values))
        return out

    def sql(self) -> str:
        """The predicate as SQL (delta-spark's ``replaceWhere``, delta-rs's ``predicate``)."""
        parts = []
        for col, op, values in self._parts():
            if op == "in":
                parts.append(f"`{col}` IN ({', '.join(_sql_literal(v) for v in values)})")
            else:
                parts.append(f"`{col}` {op} {_sql_literal(values[0])}")
        return " OR ".join(parts) if parts else "false"

    def filters(self) -> list[list[tuple[str, str, object]]]:
        """The predicate as deltalake's tuple filters in disjunctive normal form (one AND group per
        condition; empty: selects nothing)."""
        return [[(col, op, [str(v) for v in values] if op == "in" else str(values[0]))]
                for col, op, values in self._parts()]


def _sql_literal(v: object) -> str:
    if isinstance(v, (int, float)):
        return str(v)
    return "'" + str(v).replace("'", "''") + "'"


def table_uri(root: str, name: str) -> str:
    return f"{root.rstrip('/')}/{name}"


def _local_path(uri: str) -> str:
    """What deltalake wants: a plain path for local tables, the URI otherwise."""
    if "://" not in uri:
        import os
        return os.path.abspath(uri)
    return uri


def table_exists(root: str, name: str) -> bool:
    from deltalake import DeltaTable
    return DeltaTable.is_deltatable(_local_path(table_uri(root, name)))


def open_table(root: str, name: str, version: int | None = None):
    """The table (``deltalake.DeltaTable``) at ``version`` (None: its newest version), or None when
    it does not exist."""
    from deltalake import DeltaTable
    uri = _local_path(table_uri(root, name))
    if not DeltaTable.is_deltatable(uri):
        return None
    return DeltaTable(uri, version=version)


def commits_after(dt, version: int) -> list[dict]:
    """Commit infos of the versions of table ``dt`` (a ``deltalake.DeltaTable``) after ``version``
    (-1: all) up to the one it is at, oldest first, each with its ``version``."""
    if dt.version() <= version:
        return []
    return sorted(dt.history(limit=dt.version() - version), key=lambda c: c["version"])


def run_id_of(commit: dict) -> str | None:
    """The run a commit belongs to: ``run_id`` of the commit metadata delta-rs writes (top level of
    ``commitInfo``) or of delta-spark's ``userMetadata`` (JSON); None for a commit of no run (made by
    another tool, or a standalone commit such as ``audit --write``)."""
    if commit.get("run_id"):
        return str(commit["run_id"])
    meta = commit.get("userMetadata")
    if isinstance(meta, str) and meta.startswith("{"):
        try:
            value = json.loads(meta).get("run_id")
        except ValueError:
            return None
        return str(value) if value else None
    return None


def live_files(root: str, name: str, version: int | None = None) -> pa.Table:
    """Add actions of the table's version (None: newest): ``path``, ``size_bytes``, ``num_records``,
    ``partition.<col>``, ``min.<col>``/``max.<col>`` (flattened); empty without a table."""
    dt = open_table(root, name, version)
    if dt is None:
        return pa.table({"path": pa.array([], pa.string())})
    return pa.table(dt.get_add_actions(flatten=True))


def arrow_dataset(root: str, name: str, dt, file_pruning_predicate=None):
    """The version ``dt`` of table ``name`` as a pyarrow dataset: a fragment per file, carrying its
    partition values and min/max statistics (a filter skips the fragments it rules out), read with
    pyarrow's own filesystem for the table's location.  (delta-rs's default, a filesystem handler in
    Python, can abort the interpreter at exit: delta-io/delta-rs#2184, pola-rs/polars#24169.)
    ``file_pruning_predicate``: tuple filters (OR of AND groups) delta-rs applies to the partition
    values and statistics first, so that only the files that may match become fragments."""
    fs, path = resolve(table_uri(root, name))
    return dt.to_pyarrow_dataset(filesystem=pafs.SubTreeFileSystem(path, fs),
                                 file_pruning_predicate=file_pruning_predicate)


def read_arrow(root: str, name: str, columns: Sequence[str] | None = None, filter=None,
               version: int | None = None) -> pa.Table | None:
    """Read a (small) table on the driver with delta-rs, at ``version`` (None: newest); None when it
    does not exist."""
    dt = open_table(root, name, version)
    if dt is None:
        return None
    return arrow_dataset(root, name, dt).to_table(columns=list(columns) if columns else None, filter=filter)


def read_spark(spark: SparkSession, root: str, name: str, schema: pa.Schema, *,
               files: Sequence[str] | None = None, version: int | None = None,
               timestamp: str | _dt.datetime | None = None) -> DataFrame:
    """The table as a DataFrame, at its newest version, at ``version``, or as it was at ``timestamp``
    (ISO 8601 or a datetime: the last version committed at or before it): through delta-spark when
    its classes are there (``versionAsOf``/``timestampAsOf``), else Spark's Parquet reader over the
    files delta-rs lists for that version (partition columns from the paths), or over ``files``."""
    uri = table_uri(root, name)
    sschema = spark_schema(schema)
    if isinstance(timestamp, _dt.datetime):
        timestamp = timestamp.astimezone(_dt.timezone.utc).isoformat()
    if files is None and delta_classes_available(spark):
        reader = spark.read.format("delta")
        if version is not None:
            reader = reader.option("versionAsOf", version)
        elif timestamp is not None:
            reader = reader.option("timestampAsOf", timestamp)
        return reader.load(_local_path(uri))
    if files is None:
        dt = open_table(root, name, version)
        if dt is not None and version is None and timestamp is not None:
            dt.load_as_version(_dt.datetime.fromisoformat(timestamp))
        files = [] if dt is None else dt.file_uris()
    if not files:
        return spark.createDataFrame([], sschema)
    return spark.read.schema(sschema).option("basePath", _spark_path(uri)).parquet(*[_spark_path(f) for f in files])


def file_uris(root: str, name: str, paths: Sequence[str]) -> list[str]:
    """Locations of add-action paths (relative, URI-escaped) of a table."""
    base = table_uri(root, name)
    if "://" not in base:
        import os
        base = os.path.abspath(base)
    return [f"{base}/{urllib.parse.unquote(p)}" for p in paths]


def _spark_path(uri: str) -> str:
    if "://" in uri:
        return uri
    import os
    return "file://" + os.path.abspath(uri)


class TableWriter:
    """One commit per :meth:`write`; see the module docstring."""

    kind = "abstract"

    def __init__(self, spark: SparkSession | None, root: str, run_id: str, *, standalone: bool = False) -> None:
        self.spark = spark
        self.root = root.rstrip("/")
        self.run_id = run_id
        self.standalone = standalone

    def commit_metadata(self) -> dict[str, str]:
        """What each commit records: the run it belongs to (a run's commits become visible with its
        ``runs`` row, :mod:`pipelines.tables.runs`), or, for a standalone commit that is complete by
        itself (``audit --write``), no run."""
        if self.standalone:
            return {"standalone": self.run_id, "writer": self.kind}
        return {"run_id": self.run_id, "writer": self.kind}

    def write(self, name: str, data: DataFrame | pa.Table, schema: pa.Schema, *, partition_by: Sequence[str] = (),
              where: Where | None = None, mode: str = "overwrite", description: str = "",
              sort_by: Sequence[str] = ()) -> int:
        """Replace the partitions ``where`` selects (``mode="overwrite"`` without ``where``: the whole
        table; ``mode="append"``: nothing) by ``data``, in one commit; the rows must lie in those
        partitions (delta-spark's ``replaceWhere`` and delta-rs's ``predicate`` check it).  Column
        metadata of ``schema`` goes into the table's schema.  ``sort_by``: the order of the rows in
        each file, for a writer that lays the rows out itself (delta-rs commits the files the tasks
        wrote in that order already).  Returns the new version."""
        raise NotImplementedError

    def _session(self) -> SparkSession:
        if self.spark is None:
            raise TablesError("writing a DataFrame needs a Spark session")
        return self.spark

    def _conform(self, data: DataFrame | pa.Table, schema: pa.Schema) -> DataFrame | pa.Table:
        """Columns in schema order with the schema's types."""
        if isinstance(data, pa.Table):
            return data.select(schema.names).cast(schema)
        from pyspark.sql import functions as F
        sschema = spark_schema(schema)
        meta = {f.name: {k.decode(): v.decode() for k, v in (f.metadata or {}).items()} for f in schema}
        return data.select([F.col(f.name).cast(f.dataType).alias(f.name, metadata=meta[f.name])
                            for f in sschema.fields])


class DeltaSparkWriter(TableWriter):
    """delta-spark's own writer: a new table in one ``CREATE TABLE ... AS SELECT`` (partitioning and
    description with it), then ``DataFrame.write.format("delta")`` with ``replaceWhere`` for partition
    replacement; the run id in each commit's ``userMetadata``.  The rows are laid out as the delta-rs
    path lays them out: one file per partition (one per table without partitions), sorted by
    ``sort_by`` within it (the lookups' file statistics rest on that order)."""

    kind = "delta-spark"

    def write(self, name, data, schema, *, partition_by=(), where=None, mode="overwrite", description="",
              sort_by=()):
        if mode not in ("overwrite", "append"):
            raise ValueError(f"mode must be overwrite or append, got {mode!r}")
        spark = self._session()
        tag_jobs(spark.sparkContext)
        if isinstance(data, pa.Table):
            data = spark.createDataFrame(data.select(schema.names).cast(schema))
        df = self._conform(data, schema)
        df = df.repartition(*partition_by) if partition_by else df.coalesce(1)
        if partition_by or sort_by:
            df = df.sortWithinPartitions(*partition_by, *sort_by)
        path = _local_path(table_uri(self.root, name))
        exists = open_table(self.root, name) is not None
        settings = {"spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
                    "spark.databricks.delta.commitInfo.userMetadata": json.dumps(self.commit_metadata()),
                    # a run's commit of a table that stays empty is still its commit of the run
                    "spark.databricks.delta.skipRecordingEmptyCommits": "false"}
        with session_settings(spark, settings):
            if not exists:
                from pyspark.sql import functions as F
                w2 = df.writeTo("delta.`" + path.replace("`", "``") + "`").using("delta")
                if partition_by:
                    w2 = w2.partitionedBy(*[F.col(c) for c in partition_by])
                if description:
                    w2 = w2.tableProperty("comment", description)
                w2.createOrReplace()   # "create" refuses the folder the staged files are in
            else:
                w = df.write.format("delta").mode(mode)
                if partition_by:
                    w = w.partitionBy(*partition_by)
                if where is not None and mode == "overwrite":
                    w = w.option("replaceWhere", where.sql())
                w.save(path)
        dt = open_table(self.root, name)
        assert dt is not None
        return dt.version()


class DeltaRsWriter(TableWriter):
    """Parquet written by Spark (or pyarrow), committed by delta-rs."""

    kind = "delta-rs"

    def write(self, name, data, schema, *, partition_by=(), where=None, mode="overwrite", description="",
              sort_by=()):
        if mode not in ("overwrite", "append"):
            raise ValueError(f"mode must be overwrite or append, got {mode!r}")
        if isinstance(data, pa.Table):
            return self._write_arrow_table(name, self._conform(data, schema), schema, list(partition_by), where,
                                           mode, description)
        uri = table_uri(self.root, name)
        fs, root_path = resolve(uri)
        staging = f"{root_path}/{STAGING}/{self.run_id}"
        try:
            _write_spark(self._session(), _uri_like(uri, staging), self._conform(data, schema), list(partition_by))
            files = fs.get_file_info(pafs.FileSelector(staging, recursive=True, allow_not_found=True))
            return self._commit_staged(name, schema, files, staging, list(partition_by), where, mode, description)
        finally:
            _delete_dir(fs, staging)
            _delete_dir_if_empty(fs, f"{root_path}/{STAGING}")

    def _write_arrow_table(self, name: str, data: pa.Table, schema: pa.Schema, partition_by: list[str],
                           where: Where | None, mode: str, description: str) -> int:
        """Rows on the driver: delta-rs writes and commits them (``predicate``: the rows ``where``
        selects are replaced, whole files here since it names partition columns only)."""
        from deltalake import CommitProperties, DeltaTable, write_deltalake
        local = _local_path(table_uri(self.root, name))
        exists = DeltaTable.is_deltatable(local)
        predicate = where.sql() if where is not None and mode == "overwrite" and exists else None
        write_deltalake(local, data, partition_by=partition_by or None, mode=mode,  # type: ignore[call-overload]
                        name=None if exists else name, description=None if exists else (description or None),
                        predicate=predicate,
                        commit_properties=CommitProperties(custom_metadata=self.commit_metadata()))
        return DeltaTable(local).version()

    def _commit_staged(self, name: str, schema: pa.Schema, files: list, staging: str, partition_by: list[str],
                       where: Where | None, mode: str, description: str) -> int:
        """Move staged Parquet files into the table's partition folders and commit them (one commit);
        on failure the files moved are deleted again (the previous version never saw them)."""
        moved: list[str] = []
        try:
            return self._commit_moved(name, schema, files, staging, partition_by, where, mode, description, moved)
        except BaseException:
            fs, _ = resolve(table_uri(self.root, name))
            for path in moved:
                try:
                    fs.delete_file(path)
                except OSError:
                    pass
            raise

    def _commit_moved(self, name: str, schema: pa.Schema, files: list, staging: str, partition_by: list[str],
                      where: Where | None, mode: str, description: str, moved: list[str]) -> int:
        from deltalake import DeltaTable, Schema
        from deltalake.transaction import AddAction, CommitProperties, create_table_with_add_actions
        uri = table_uri(self.root, name)
        fs, root_path = resolve(uri)
        adds: list = []
        now = int(time.time() * 1000)
        data_columns = [f for f in schema if f.name not in partition_by]
        for info in files:
            if info.type != pafs.FileType.File or not info.base_name.endswith(".parquet"):
                continue
            inner = info.path[len(staging) + 1:]
            rel_dir = inner.rsplit("/", 1)[0] if "/" in inner else ""
            values = _partition_values(rel_dir, partition_by)
            rel = (rel_dir + "/" if rel_dir else "") + f"{self.run_id}-{info.base_name}"
            with fs.open_input_file(info.path) as f:
                meta = pq.ParquetFile(f).metadata
            stats = file_stats(meta, data_columns)
            fs.create_dir(f"{root_path}/{rel_dir}" if rel_dir else root_path, recursive=True)
            fs.move(info.path, f"{root_path}/{rel}")
            moved.append(f"{root_path}/{rel}")
            adds.append(AddAction(_escape_path(rel), info.size, values, now, True, json.dumps(stats)))
        dschema = Schema.from_arrow(schema)
        props = CommitProperties(custom_metadata=self.commit_metadata())
        local = _local_path(uri)
        if not DeltaTable.is_deltatable(local):
            create_table_with_add_actions(local, dschema, adds, mode="error",
                                          partition_by=list(partition_by) or None, name=name,
                                          description=description or None, commit_properties=props)
            return DeltaTable(local).version()
        dt = DeltaTable(local)
        filters = None
        if mode == "overwrite" and where is not None:
            # delta-rs derives the remove actions of an overwrite from partition filters, but takes one
            # AND group only: the partitions ``where`` (an OR) selects are listed first, by delta-rs too
            chosen = dt.partitions(file_pruning_predicate=where.filters()) if where.filters() else []
            if chosen:
                column = where.conditions[0][0]
                filters = [(column, "in", sorted({p[column] for p in chosen}))]
            else:
                mode = "append"   # nothing to replace
        if mode not in ("overwrite", "append"):
            raise ValueError(f"mode must be overwrite or append, got {mode!r}")
        dt.create_write_transaction(adds, mode=mode, schema=dschema, partition_by=list(partition_by) or None,
                                    partition_filters=filters, commit_properties=props)
        return DeltaTable(local).version()


def commit_parquet_files(writer: TableWriter, name: str, schema: pa.Schema, paths: Sequence[str], *,
                         partition_by: Sequence[str] = (), where: Where | None = None, mode: str = "overwrite",
                         description: str = "", sort_by: Sequence[str] = ()) -> int:
    """Commit Parquet files that tasks wrote themselves under ``<table>/_staging/<run>/`` (hive-style
    partition folders), as one commit replacing what ``where`` selects.  delta-rs commits the files
    as they are; delta-spark reads them and writes its own (in ``sort_by`` order)."""
    uri = table_uri(writer.root, name)
    fs, root_path = resolve(uri)
    staging = f"{root_path}/{STAGING}/{writer.run_id}"
    if isinstance(writer, DeltaRsWriter):
        try:
            return writer._commit_staged(name, schema, fs.get_file_info(list(paths)), staging, list(partition_by),
                                         where, mode, description)
        finally:
            _delete_dir(fs, staging)
            _delete_dir_if_empty(fs, f"{root_path}/{STAGING}")
    spark = writer._session()
    df = spark.read.option("basePath", _uri_like(uri, staging)).schema(spark_schema(schema)).parquet(
        *[_uri_like(uri, p) for p in paths]) if paths else spark.createDataFrame([], spark_schema(schema))
    try:
        return writer.write(name, df, schema, partition_by=partition_by, where=where, mode=mode,
                            description=description, sort_by=sort_by)
    finally:
        _delete_dir(fs, staging)
        _delete_dir_if_empty(fs, f"{root_path}/{STAGING}")


def writer_choice(spark: SparkSession | None) -> tuple[str, str]:
    """The writer a job's tables get, and why: the session's ``--table-writer``
    (:data:`pipelines.delta_jars.WRITER_CONF`); ``auto``: delta-spark when its classes and SQL
    extension are in the session, else delta-rs.

    Raises:
        TablesError: delta-spark was asked for and the session has no Delta classes.
    """
    from .delta_jars import SQL_CONF, SUBMIT_OPTIONS, WRITER_CONF, cached_jars, missing_reason
    if spark is None:
        return "delta-rs", "no Spark session"
    setting = spark.conf.get(WRITER_CONF, None) or "auto"   # the session's, else its context's
    if setting == "delta-rs":
        return "delta-rs", "--table-writer delta-rs"
    extension = SQL_CONF["spark.sql.extensions"] in (spark.conf.get("spark.sql.extensions", "") or "")
    if delta_classes_available(spark) and extension:
        return "delta-spark", ""
    why = missing_reason() if not delta_classes_available(spark) else \
        "Delta jars without spark.sql.extensions=" + SQL_CONF["spark.sql.extensions"]
    if setting == "delta-spark":
        raise TablesError(f"--table-writer delta-spark: {why}; on a cluster: spark-submit {SUBMIT_OPTIONS}")
    if not delta_classes_available(spark) and cached_jars():
        why = "the faster writer on a local run; --table-writer delta-spark writes through Delta's jars"
    return "delta-rs", why


def open_writer(spark: SparkSession | None, root: str, run_id: str, prefer: str | None = None, *,
                standalone: bool = False) -> TableWriter:
    """The writer ``prefer`` names, else :func:`writer_choice`'s (always delta-rs without a session:
    Arrow tables only).  ``standalone``: the commits are complete by themselves, not part of a run
    (:meth:`TableWriter.commit_metadata`)."""
    kind = prefer or writer_choice(spark)[0]
    if kind == "delta-rs" or spark is None:
        return DeltaRsWriter(spark, root, run_id, standalone=standalone)
    return DeltaSparkWriter(spark, root, run_id, standalone=standalone)


class session_settings:
    """SQL settings of the session for the duration of a ``with`` block (the previous values back)."""

    def __init__(self, spark: SparkSession, settings: dict[str, str]) -> None:
        self.spark, self.settings = spark, settings
        self.old: dict[str, str | None] = {}

    def __enter__(self) -> None:
        for key, value in self.settings.items():
            self.old[key] = self.spark.conf.get(key, None)
            self.spark.conf.set(key, value)

    def __exit__(self, *exc) -> None:
        for key, value in self.old.items():
            if value is None:
                self.spark.conf.unset(key)
            else:
                self.spark.conf.set(key, value)


# ---------------------------------------------------------------------------------------------
# helpers of the delta-rs writer


def _uri_like(table: str, path: str) -> str:
    """A Spark-usable location for a filesystem path under the table URI."""
    if "://" in table:
        scheme = table.split("://", 1)[0]
        netloc = urllib.parse.urlparse(table).netloc
        return f"{scheme}://{netloc}{path}" if path.startswith("/") else f"{scheme}://{path}"
    return "file://" + path


def _write_spark(spark: SparkSession, location: str, df: DataFrame, partition_by: list[str]) -> None:
    tag_jobs(spark.sparkContext)
    conf = spark.conf
    key = "spark.sql.parquet.outputTimestampType"
    old = conf.get(key, None)
    conf.set(key, "TIMESTAMP_MICROS")
    try:
        w = df.write.mode("overwrite")
        if partition_by:
            w = w.partitionBy(*partition_by)
        w.parquet(location)
    finally:
        if old is None:
            conf.unset(key)
        else:
            conf.set(key, old)


_HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"


def _partition_values(rel_dir: str, partition_by: Sequence[str]) -> dict[str, str | None]:
    values: dict[str, str | None] = {c: None for c in partition_by}
    for part in rel_dir.split("/") if rel_dir else []:
        if "=" in part:
            k, v = part.split("=", 1)
            if k in values:
                v = urllib.parse.unquote(v)
                values[k] = None if v == _HIVE_NULL else v
    return values


def _escape_path(rel: str) -> str:
    """Delta add paths are relative URIs."""
    return "/".join(urllib.parse.quote(p, safe="=-_.") for p in rel.split("/"))


def _delete_dir(fs: pafs.FileSystem, path: str) -> None:
    try:
        if fs.get_file_info(path).type == pafs.FileType.Directory:
            fs.delete_dir(path)
    except OSError:
        pass


def _delete_dir_if_empty(fs: pafs.FileSystem, path: str) -> None:
    try:
        if fs.get_file_info(path).type == pafs.FileType.Directory and \
                not fs.get_file_info(pafs.FileSelector(path)):
            fs.delete_dir(path)
    except OSError:
        pass
