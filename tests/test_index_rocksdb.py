"""The rebuild's choices around 5.5's ``rocksdbstore/`` that need no broker: which settings make it write
the RocksDB message index and which warning lines it prints (:func:`pipelines.index_rocksdb.rocksdbstore_plan`),
and the commit of ``rocksdbstore/`` as an optional output (an existing database, which also keeps the
broker's timer and transaction records, is replaced only by a run that wrote one).  The key/value set
itself is checked against the broker's in :mod:`test_index_rocksdb_broker`.
"""
from __future__ import annotations

import pytest

from pipelines.commit import StagedOutput
from pipelines.index_rocksdb import rocksdbstore_plan
from store_format.config import load_broker_config
from store_format.errors import StoreLayoutError


def _plan(text: str, as_restart: bool = False) -> tuple[bool, list[str]]:
    return rocksdbstore_plan(load_broker_config(text), as_restart=as_restart)


def test_plan_builds_the_index_only_where_derivable_and_says_the_rest() -> None:
    assert _plan("brokerVersion=5.5\nindexRocksDBEnable=true") == (True, [])
    assert _plan("brokerVersion=5.5") == (False, [])
    # 5.5.1 CommitLogDispatcherBuildIndex: the RocksDB index with messageIndexEnable, index files or not
    assert _plan("brokerVersion=5.5\nindexRocksDBEnable=true\nindexFileWriteEnable=false") == (True, [])
    assert _plan("brokerVersion=5\nindexRocksDBEnable=true") == (False, [])   # no such store before 5.5
    # --as-restart: the store's database, added to (pipelines.index_rocksdb.build_index_rocksdb's base)
    assert _plan("brokerVersion=5.5\nindexRocksDBEnable=true", True) == (True, [])
    build, lines = _plan("brokerVersion=5.5\nindexRocksDBEnable=true\nmessageIndexEnable=false")
    assert not build and len(lines) == 1 and "rocksdbstore/ (the RocksDB message index) is not rebuilt" in lines[0]
    assert "messageIndexEnable=false" in lines[0]
    build, lines = _plan("brokerVersion=5.5\nindexRocksDBEnable=true\ntransRocksDBEnable=true", True)
    assert build and len(lines) == 1 and "kept as the store holds it" in lines[0]
    build, lines = _plan("brokerVersion=5.5\nindexRocksDBEnable=true\ntransRocksDBEnable=true")
    assert build and len(lines) == 1 and "trans family of rocksdbstore/ is not rebuilt (written empty)" in lines[0]
    build, lines = _plan("brokerVersion=5.5\ntransRocksDBEnable=true")
    assert not build and len(lines) == 1 and "(written empty)" not in lines[0]


def _commit(out, run_id: str, *, rocks: bytes | None, overwrite: bool = True) -> None:
    staged = StagedOutput(str(out), run_id, overwrite=overwrite, optional=("rocksdbstore",) if rocks else ())
    staged.prepare()
    if rocks is not None:
        (tmp := out / f".rebuild-staging-{run_id}" / "rocksdbstore").mkdir()
        (tmp / "CURRENT").write_bytes(rocks)
    staged.commit()


def test_rocksdbstore_is_replaced_only_by_a_run_that_wrote_one(tmp_path) -> None:
    out = tmp_path / "out"
    (out / "rocksdbstore").mkdir(parents=True)
    (out / "rocksdbstore" / "CURRENT").write_bytes(b"broker's")
    _commit(out, "r1", rocks=None)
    assert (out / "rocksdbstore" / "CURRENT").read_bytes() == b"broker's" and (out / "consumequeue").is_dir()
    only = tmp_path / "only"    # an OUT holding nothing but a database: a run that writes one is refused
    (only / "rocksdbstore").mkdir(parents=True)
    with pytest.raises(StoreLayoutError, match="already has rocksdbstore/"):
        _commit(only, "r2", rocks=b"ours", overwrite=False)
    _commit(only, "r2b", rocks=None, overwrite=False)    # one that does not: no refusal
    _commit(out, "r3", rocks=b"ours")
    assert (out / "rocksdbstore" / "CURRENT").read_bytes() == b"ours"
    assert not [p.name for p in out.iterdir() if p.name.startswith(".rebuild-")]


def test_split_entries_sort_as_rocksdb_bytewise_and_once() -> None:
    """The order of a split's table file (:func:`store_format.index_rocksdb.bytewise_unique`) is RocksDB's
    ``BytewiseComparator``: unsigned bytes (0x80 and above after ASCII), a key before every longer key it
    begins; a key given twice (a token repeated in ``KEYS``) is kept once.  Python orders ``bytes`` the
    same way (``memcmp``, then length)."""
    import numpy as np
    import pyarrow as pa

    from store_format.index_rocksdb import IndexEntries, bytewise_unique

    keys = [b"\x00\x01@T@K@k1", b"\x00\x01@T@K@k", b"\x00\x01@T@K@\xc3\xa9", b"\x00\x01@T@K@k1", b"\x00\x01@T@K@\x7f",
            b"\x00\x01@T@K@", b"\xff", b"\x00\x01@T@K@k1\x00"]
    ts = np.arange(len(keys), dtype=np.int64) * 10
    off = np.arange(len(keys), dtype=np.int64)
    got = bytewise_unique(IndexEntries(pa.array(keys, pa.large_binary()), ts, off))
    want = sorted(set(keys))
    assert got.keys.to_pylist() == want
    # each key keeps the value and offset of one of its entries
    assert [keys[i] for i in got.commitlog_offset.tolist()] == want
    assert got.store_timestamp.tolist() == [10 * i for i in got.commitlog_offset.tolist()]


@pytest.mark.slow
def test_a_rebuild_killed_while_it_ingests_commits_nothing_and_the_next_run_writes_it(tmp_path) -> None:
    """Crash safety of the database's build: a rebuild killed (SIGKILL) after its first ingestion of split
    files leaves no ``rocksdbstore/`` in ``OUT`` (the database is built in the staging folder); the next run
    removes that folder and writes the key/value set an uninterrupted run writes."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("rocksdict")
    from pipelines.commit import KILL_AT_ENV
    from pipelines.index_rocksdb import read_message_rocksdb

    repo = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(repo))
    env.pop(KILL_AT_ENV, None)

    def run(*argv: str, kill: bool = False) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "pipelines", *argv], cwd=repo, capture_output=True, text=True,
                              env={**env, KILL_AT_ENV: "rocksdb:ingested"} if kill else env, timeout=600)

    conf = tmp_path / "broker.conf"
    conf.write_text("brokerVersion=5.5\nindexRocksDBEnable=true\nmappedFileSizeCommitLog=1048576\n")
    store = tmp_path / "store"
    assert run("sample", "--out", str(store), "--messages", "4000", "--config", str(conf)).returncode == 0
    rebuild = ["rebuild", "--store", str(store), "--config", str(conf), "--split-size", "64k", "--no-tables",
               "--engine", "local", "--processes", "1", "--out"]
    out, ref = tmp_path / "out", tmp_path / "ref"
    killed = run(*rebuild, str(out), kill=True)
    assert killed.returncode == -9, killed.stderr[-2000:]
    assert not (out / "rocksdbstore").exists() and any(p.name.startswith(".rebuild-") for p in out.iterdir())
    for target in (out, ref):
        done = run(*rebuild, str(target))
        assert done.returncode == 0, done.stderr[-2000:]
    assert not [p.name for p in out.iterdir() if p.name.startswith(".rebuild-")]
    got, want = read_message_rocksdb(out / "rocksdbstore"), read_message_rocksdb(ref / "rocksdbstore")
    assert len(want["default"]) > 4000 and got == want


def test_a_restart_adds_the_records_from_the_database_s_last_offset() -> None:
    """IndexRocksDBStore.buildIndex skips the records below the database's lastOffsetPy (the one at it is put
    again); writeRecordsForIndex raises lastOffsetPy and lastStoreTimeStamp each only when above the stored one."""
    import numpy as np
    import pyarrow as pa

    from store_format.index_rocksdb import (
        IndexEntries,
        entries_from,
        entry_offset,
        last_records,
        restart_last_records,
        rocksdb_index_key,
    )

    offsets = np.array([0, 100, 200, 200, 300], dtype=np.int64)
    keys = pa.array([rocksdb_index_key(7_200_000, b"T", b"U", None, b"u%d" % o, int(o)) for o in offsets],
                    pa.large_binary())
    entries = IndexEntries(keys, offsets + 7_200_000, offsets)
    assert entries_from(entries, 0) is entries
    kept = entries_from(entries, 200)
    assert kept.commitlog_offset.tolist() == [200, 200, 300] and [entry_offset(k) for k in kept.keys.to_pylist()] \
        == [200, 200, 300]
    assert len(entries_from(entries, 301)) == 0
    assert restart_last_records(100, 5, 300, 9) == last_records(300, 9)
    assert restart_last_records(300, 5, 300, 9) == last_records(300, 9)[1:]
    assert restart_last_records(400, 9, 300, 9) == []
