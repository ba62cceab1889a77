"""``python -m pipelines.bench_exchange``: the scan → build exchange, through files or through Spark's shuffle.

Issue 9 asked to pick the exchange by measurement.  Both variants run the same scan (every split
walked, its consume queue units cut into one Arrow record batch per queue bucket, its index keys
into one more) and the same read side (each bucket's batches of every split, and all keys,
deserialized in the reading task); only the way between differs:

* ``files`` (what the rebuild does, :mod:`pipelines.workfiles`): each split writes one Arrow IPC file
  of units (a batch per bucket) and one of keys into the run's staging folder; a reading task maps
  the files and takes its batch by offset;
* ``shuffle``: each split emits ``(bucket, Arrow IPC bytes)`` pairs into an RDD that Spark's shuffle
  partitions by bucket (``partitionBy``): the blobs travel through the JVM, Spark's shuffle files
  in its local directories, and back.

Each variant runs twice in one local session (the second run is reported), on the bench store
(``make bench`` writes it).  Read-side tasks count rows, so both variants move and decode every byte.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

__all__ = ["main"]


def _ipc(batches: list[pa.RecordBatch], schema: pa.Schema) -> bytes:
    sink = pa.BufferOutputStream()
    with ipc.new_stream(sink, schema) as w:
        for b in batches:
            w.write_batch(b)
    return sink.getvalue().to_pybytes()


class _ScanToBlobs:
    """Scan task of the shuffle variant: ``(bucket, (split, IPC bytes))`` pairs; bucket ``B`` holds keys."""

    def __init__(self, splits, store_uri: str, config, buckets: int, blocks: list[list[int]]) -> None:
        self.splits, self.store_uri, self.config, self.buckets, self.blocks = splits, store_uri, config, buckets, blocks

    def __call__(self, task: int):
        from .scan import walk_splits
        from .workfiles import KEY_SCHEMA, split_batches

        out = []
        for split, _, res in walk_splits(self.splits, self.blocks[task], self.store_uri, self.config):
            if res is None:
                continue
            sid = split.split_id
            schema, batches, keys = split_batches(res, self.buckets)
            for b, batch in enumerate(batches):
                out.append((b, (sid, _ipc([batch], schema))))
            if keys is not None:
                out.append((self.buckets, (sid, _ipc([keys], KEY_SCHEMA))))
        return out


def _read_blobs(pairs) -> list[int]:
    rows = 0
    for _bucket, (_sid, blob) in pairs:
        rows += ipc.open_stream(pa.py_buffer(blob)).read_all().num_rows
    return [rows]


class _ReadFiles:
    """Read side of the file variant: bucket ``b``'s batch of every split (``b == B``: all keys)."""

    def __init__(self, work_uri: str, n_splits: int, buckets: int) -> None:
        self.work_uri, self.n_splits, self.buckets = work_uri, n_splits, buckets

    def __call__(self, b: int) -> list[int]:
        from .workfiles import read_bucket_units, read_keys
        rows = 0
        for sid in range(self.n_splits):
            if b < self.buckets:
                got = read_bucket_units(self.work_uri, sid, b)
                if got is not None:
                    rows += got[0].num_rows
            else:
                keys = read_keys(self.work_uri, sid)
                if keys is not None:
                    rows += len(keys.offset)
        return [rows]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m pipelines.bench_exchange", description=__doc__.split("\n\n")[0])
    p.add_argument("--dir", default="bench-data", help="where the bench store is (default bench-data/)")
    p.add_argument("--master", default="local[2]")
    args = p.parse_args(argv)

    from store_format.store import load_config_for, open_store

    from .plan import DEFAULT_SPLIT_SIZE, plan_splits
    from .scan import ScanTask
    from .session import build_spark_session

    root = os.path.abspath(os.path.join(args.dir, "store"))
    config = load_config_for(None)
    st = open_store(root, config)
    splits = plan_splits(st, DEFAULT_SPLIT_SIZE)
    spark = build_spark_session(args.master)
    sc = spark.sparkContext
    parallelism = sc.defaultParallelism
    buckets = parallelism
    n_tasks = min(len(splits), 2 * parallelism)
    blocks = [[int(x) for x in b] for b in np.array_split(np.arange(len(splits)), n_tasks) if len(b)]
    results: dict[str, list[float]] = {"files": [], "shuffle": []}
    rows: dict[str, int] = {}
    for _ in range(2):
        with tempfile.TemporaryDirectory(dir=args.dir, prefix="exchange-") as work:
            t = time.perf_counter()
            sc.parallelize(range(len(blocks)), len(blocks)).flatMap(
                ScanTask(splits, st.uri, config, work, buckets, blocks).rows).collect()
            got = sc.parallelize(range(buckets + 1), buckets + 1).flatMap(
                _ReadFiles(work, len(splits), buckets)).collect()
            results["files"].append(time.perf_counter() - t)
            rows["files"] = sum(got)
        t = time.perf_counter()
        got = (sc.parallelize(range(len(blocks)), len(blocks)).flatMap(_ScanToBlobs(splits, st.uri, config, buckets,
                                                                                    blocks))
               .partitionBy(buckets + 1, lambda k: k).mapPartitions(_read_blobs).collect())
        results["shuffle"].append(time.perf_counter() - t)
        rows["shuffle"] = sum(got)
    spark.stop()
    mb = st.total_bytes() / 1e6
    print(f"exchange, {mb:,.0f} MB in {len(splits)} splits, {buckets} buckets, {args.master}: scan + exchange + "
          "read side (second of two runs)", file=sys.stderr)
    for k, v in results.items():
        print(f"  {k:8s} {v[-1]:6.2f} s  (first run {v[0]:.2f} s)  rows read {rows[k]:,}", file=sys.stderr)
    return 0 if rows["files"] == rows["shuffle"] else 1


if __name__ == "__main__":
    sys.exit(main())
