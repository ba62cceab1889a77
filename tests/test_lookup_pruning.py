"""A key lookup opens few files, and says truly how many: the files it reports as read are the files
its read is given, and they are exactly those an independent reading of the add actions' partition
values and statistics cannot rule out (one key bucket per segment, fewer with a time range or a
narrow key_hash range)."""
from __future__ import annotations

import datetime as dt

import pyarrow.dataset as pads
import pytest
import tables_store as ts

import pipelines.lookup
from pipelines.delta import live_files
from pipelines.lookup import lookup_key, lookup_offset_msg_id
from pipelines.tables import key_buckets_of
from store_format.javahash import index_key_hash

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture(scope="module")
def main(spark, tmp_path_factory) -> dict:
    return ts.main_tables(spark, tmp_path_factory.getbasetemp() / "tables-main")


class _Datasets:
    """``pyarrow.dataset`` as the lookup module sees it, recording the files of the datasets it reads."""

    def __init__(self) -> None:
        self.read: dict[str, set[str]] = {}

    def __getattr__(self, name: str):
        return getattr(pads, name)

    def FileSystemDataset(self, fragments, *args, **kwargs):  # noqa: N802 (pyarrow's name)
        for f in fragments:
            self.read.setdefault("message_keys" if "/key_bucket=" in f.path else "messages", set()).add(f.path)
        return pads.FileSystemDataset(fragments, *args, **kwargs)


@pytest.fixture
def opened(monkeypatch) -> dict[str, set[str]]:
    """Files (paths relative to their table) the lookup reads, by table."""
    datasets = _Datasets()
    monkeypatch.setattr(pipelines.lookup, "ds", datasets)
    return datasets.read


def _ms(v: dt.datetime | None) -> int | None:
    return None if v is None else int(v.timestamp() * 1000)


def _may_hold(tables: str, topic: str, key: str, begin: int | None, end: int | None) -> set[str]:
    """``message_keys`` files whose bucket, key_hash and store_timestamp statistics allow the key."""
    h = index_key_hash(f"{topic}#{key}")
    bucket = h % key_buckets_of(tables)
    out = set()
    for f in live_files(tables, "message_keys").to_pylist():
        if int(f["partition.key_bucket"]) != bucket or not f["min.key_hash"] <= h <= f["max.key_hash"]:
            continue
        lo, hi = _ms(f["min.store_timestamp"]), _ms(f["max.store_timestamp"])
        if (begin is not None and hi < begin) or (end is not None and lo > end):
            continue
        out.add(f["path"])
    return out


@pytest.mark.parametrize("key, begin, end", [("shared3", None, None), ("k100", None, None),
                                             ("shared3", ts.T0 + 100_000, ts.T0 + 200_000),
                                             ("nothing-has-this", None, None)])
def test_a_key_lookup_opens_only_the_files_statistics_allow(main, opened, key, begin, end) -> None:
    tables = str(main["tables"])
    res = lookup_key(tables, "TopicA", key, begin_ms=begin, end_ms=end)
    expected = _may_hold(tables, "TopicA", key, begin, end)
    n_segments = len(list((main["store"] / "commitlog").iterdir()))
    assert res.files_read["message_keys"] == len(expected) == len(opened.get("message_keys", set()))
    assert opened.get("message_keys", set()) == expected
    assert len(expected) <= n_segments < res.files_total["message_keys"] == live_files(tables, "message_keys").num_rows
    if begin is not None:
        assert len(expected) < n_segments   # the time range rules out whole segments
    # messages: only the files whose commitlog offset statistics cover a hit
    hits = {r["commitlog_offset"] for r in res.rows}
    covering = {f["path"] for f in live_files(tables, "messages").to_pylist()
                if any(f["min.commitlog_offset"] <= o <= f["max.commitlog_offset"] for o in hits)}
    assert res.files_read.get("messages", 0) == len(covering) == len(opened.get("messages", set()))
    if key == "k100":
        assert len(res.rows) == 1 and res.files_read["messages"] == 1 < res.files_total["messages"]


def test_an_offset_msg_id_opens_one_messages_file(main, opened) -> None:
    tables = str(main["tables"])
    m = main["messages"][250]
    res = lookup_offset_msg_id(tables, ts.create_offset_msg_id(m["store_host"], m["commitlog_offset"]))
    assert [r["commitlog_offset"] for r in res.rows] == [m["commitlog_offset"]]
    assert res.files_read == {"messages": 1} and len(opened["messages"]) == 1
    assert res.files_total["messages"] == live_files(tables, "messages").num_rows > 1
