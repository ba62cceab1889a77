"""Stores written with :class:`store_format.writer.CommitLogWriter` for the table tests, with their
ground truth: every message's fields as given to the writer, and what the tables must say about it.

Messages are a pure function of their number, so a store of ``n`` messages followed by a rewrite
with ``n + m`` messages is the same commitlog grown by ``m`` records (the incremental test).
"""
from __future__ import annotations

import datetime as _dt
import os
import shutil
import zlib
from pathlib import Path

import numpy as np

from store_format.config import BrokerConfig, load_broker_config
from store_format.javahash import index_key_hash, java_string_hash
from store_format.layout import segment_name
from store_format.msgid import create_offset_msg_id
from store_format.writer import CommitLogWriter

CONFIG_TEXT = ("mappedFileSizeCommitLog=32768\nmappedFileSizeConsumeQueue=200\nmaxHashSlotNum=64\nmaxIndexNum=300\n")
T0 = 1_709_251_200_000  # 2024-03-01T00:00:00Z
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
STORE_HOST = "10.0.0.100:10911"
STORE_HOST_V6 = "[fd00::64]:10911"
TX = {0: "none", 4: "prepared", 8: "commit", 12: "rollback"}


def config() -> BrokerConfig:
    return load_broker_config(CONFIG_TEXT)


def message(i: int) -> dict:
    """Message number ``i``: what the producer sent and the broker stamped (not the offsets)."""
    topic = "TopicA" if i % 3 != 2 else "TopicB"
    qid = i % 4
    body = (f"body-{i}-" + "x" * (i % 50)).encode()
    tags: str | None = ["TagA", "TagB", "TagC"][i % 3] if i % 10 != 9 else None
    keys = f"k{i} shared{i % 7}" if i % 5 else f"k{i}  shared{i % 7} "
    props: dict[str, str] = {}
    sys_flag = 0
    reconsume = 0
    born_host, store_host = f"10.0.0.{1 + i % 3}:5000{i % 10}", STORE_HOST
    prep_ref = -1
    special = i % 50
    if i in (7, 20):
        topic, keys = "TopicA", "Aa"
    elif i == 8:
        topic, keys = "TopicA", "BB"
    elif i == 9:
        topic, keys = "TopicB", "Aa"
    elif special == 11:
        sys_flag = 4      # prepared
    elif special == 12:
        sys_flag, prep_ref = 8, i - 1      # commit of the prepared one
    elif special == 13:
        sys_flag, prep_ref = 12, i - 2     # rollback
    elif special == 14:
        topic, qid = SCHEDULE_TOPIC, 2     # delay level 3 -> queue 2
        props.update({"DELAY": "3", "REAL_TOPIC": "TopicA", "REAL_QID": "1"})
    elif special == 15:
        topic, qid, reconsume = "%RETRY%g1", 0, 2
        props["RETRY_TOPIC"] = "TopicA"
    elif special == 16:
        born_host, store_host = "[fd00::c1:3f9d]:52369", STORE_HOST_V6
    elif special == 17:
        keys, tags = f"订单-{i} 🚀{i}", "标签"
    elif special == 18:
        body = b""
    properties = {"UNIQ_KEY": f"{0xA0000000 + i:032X}", "KEYS": keys}
    if tags is not None:
        properties["TAGS"] = tags
    properties.update(props)
    store_ts = T0 + i * 1000
    return {"topic": topic, "queue_id": qid, "body": body, "properties": properties, "sys_flag": sys_flag,
            "flag": i % 4, "store_timestamp": store_ts, "born_timestamp": store_ts - 5, "born_host": born_host,
            "store_host": store_host, "reconsume_times": reconsume, "prep_ref": prep_ref}


def write_store(root: str | Path, n: int, cfg: BrokerConfig | None = None, *, start: int = 0) -> list[dict]:
    """Write messages ``start .. n-1`` as a store (replacing one there); returns them with their
    commitlog offsets, sizes and queue offsets."""
    cfg = cfg or config()
    msgs = [message(i) for i in range(start, n)]
    with CommitLogWriter(root, cfg, overwrite=True) as w:
        res = w.write_batch(
            topic=[m["topic"] for m in msgs], queue_id=np.array([m["queue_id"] for m in msgs]),
            body=[m["body"] for m in msgs], properties=[m["properties"] for m in msgs],
            sys_flag=np.array([m["sys_flag"] for m in msgs]), flag=np.array([m["flag"] for m in msgs]),
            born_timestamp=np.array([m["born_timestamp"] for m in msgs]),
            store_timestamp=np.array([m["store_timestamp"] for m in msgs]),
            born_host=[m["born_host"] for m in msgs], store_host=[m["store_host"] for m in msgs],
            reconsume_times=np.array([m["reconsume_times"] for m in msgs]),
            prepared_tx_ref=np.array([m["prep_ref"] - start if m["prep_ref"] >= 0 else -1 for m in msgs]))
    for m, off, size, qoff in zip(msgs, res.offsets.tolist(), res.sizes.tolist(), res.queue_offsets.tolist()):
        m.update(commitlog_offset=off, size=size, queue_offset=qoff)
    for m in msgs:
        m["prepared_transaction_offset"] = msgs[m["prep_ref"] - start]["commitlog_offset"] if m["prep_ref"] >= 0 else 0
    return msgs


def _tags_code(m: dict, cfg: BrokerConfig) -> int:
    props = m["properties"]
    if m["topic"] == SCHEDULE_TOPIC and "DELAY" in props:
        level = min(int(props["DELAY"]), len(cfg.delay_levels_ms))
        return m["store_timestamp"] + cfg.delay_levels_ms[level - 1]
    return java_string_hash(props["TAGS"]) if "TAGS" in props else 0


def _utc(ms: int) -> _dt.datetime:
    return _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc) + _dt.timedelta(milliseconds=ms)


def expected_messages(msgs: list[dict], cfg: BrokerConfig, *, with_body: bool) -> list[dict]:
    """The ``messages`` rows (without ``run_id``) the tables must hold for a clean store."""
    seg = cfg.mappedFileSizeCommitLog
    rows = []
    for m in msgs:
        p = m["properties"]
        tx = m["sys_flag"] & 0xC
        v6 = (0x10 if m["born_host"].startswith("[") else 0) | (0x20 if m["store_host"].startswith("[") else 0)
        in_cq = tx in (0, 8)
        if tx == 12:
            dispatch = "no consume queue; not indexed (rolled-back transaction)"
        else:
            dispatch = ("consume queue" if in_cq else "no consume queue (prepared transaction)") + "; indexed"
        rows.append({
            "segment": segment_name(m["commitlog_offset"] // seg * seg),
            "commitlog_offset": m["commitlog_offset"], "position": m["commitlog_offset"] % seg,
            "size": m["size"], "structural_size": m["size"], "topic": m["topic"], "queue_id": m["queue_id"],
            "queue_offset": m["queue_offset"], "consume_queue_offset": m["queue_offset"] if in_cq else None,
            "sys_flag": m["sys_flag"] | v6, "transaction_type": TX[tx],
            "born_timestamp": _utc(m["born_timestamp"]), "born_host": m["born_host"],
            "store_timestamp": _utc(m["store_timestamp"]), "store_host": m["store_host"], "flag": m["flag"],
            "tags": p.get("TAGS"), "tags_code": _tags_code(m, cfg),
            "keys": [k for k in p["KEYS"].split(" ") if k], "uniq_key": p["UNIQ_KEY"],
            "msg_id": create_offset_msg_id(m["store_host"], m["commitlog_offset"]),
            "reconsume_times": m["reconsume_times"], "prepared_transaction_offset": m["prepared_transaction_offset"],
            "body_size": len(m["body"]), "body_crc": zlib.crc32(m["body"]) & 0x7FFFFFFF, "body_crc_ok": True,
            "properties": sorted(p.items()), "real_topic": p.get("REAL_TOPIC"),
            "real_queue_id": int(p["REAL_QID"]) if "REAL_QID" in p else None, "retry_topic": p.get("RETRY_TOPIC"),
            "delay_level": int(p["DELAY"]) if "DELAY" in p else None, "lmq_queues": [],
            "lmq_queue_ids": [], "lmq_consume_queue_offsets": [],
            "consume_queue": in_cq, "indexed": tx != 12, "dispatch": dispatch,
            "body": m["body"] if with_body else None,
        })
    return rows


def expected_keys(msgs: list[dict], cfg: BrokerConfig, buckets: int = 1) -> list[dict]:
    """The ``message_keys`` rows (without names and ``run_id``) in index order, for a table of
    ``buckets`` key buckets per segment."""
    seg = cfg.mappedFileSizeCommitLog
    cap = cfg.index_entries_per_file
    rows = []
    for m in sorted(msgs, key=lambda m: m["commitlog_offset"]):
        if m["sys_flag"] & 0xC == 12:
            continue
        p = m["properties"]
        for kind, key in [("uniq_key", p["UNIQ_KEY"])] + [("key", k) for k in p["KEYS"].split(" ") if k]:
            h = index_key_hash(f"{m['topic']}#{key}")
            n = len(rows)
            rows.append({"segment": segment_name(m["commitlog_offset"] // seg * seg), "key_bucket": h % buckets,
                         "topic": m["topic"], "key": key, "kind": kind, "key_hash": h, "slot": h % cfg.maxHashSlotNum,
                         "commitlog_offset": m["commitlog_offset"], "store_timestamp": _utc(m["store_timestamp"]),
                         "index_file_no": n // cap, "index_entry": n % cap + 1})
    return rows


def set_mtimes(root: str | Path, mtimes_ms: list[int]) -> None:
    """Give the store's segments these modification times, in name order."""
    cdir = Path(root) / "commitlog"
    for name, ms in zip(sorted(os.listdir(cdir)), mtimes_ms):
        os.utime(cdir / name, ns=(ms * 1_000_000, ms * 1_000_000))


_BUILT: dict[str, dict] = {}
MAIN_KEY_BUCKETS = 8


def main_tables(spark, base: Path) -> dict:
    """The main store (600 messages, 4 segments) and its tables (8 key buckets per segment),
    published once per test session with bodies: ``{"store", "tables", "config", "messages", "summary"}``."""
    if "main" not in _BUILT:
        from pipelines.tables import run_tables
        cfg = config()
        store, tables = base / "main-store", base / "main-tables"
        msgs = write_store(store, 600, cfg)
        summary = run_tables(str(store), str(tables), cfg, spark=spark, split_size=16384, with_body=True,
                             key_buckets=MAIN_KEY_BUCKETS)
        _BUILT["main"] = {"store": store, "tables": tables, "config": cfg, "messages": msgs, "summary": summary}
    return _BUILT["main"]


def earlier_store(store: Path, into: Path, cut_segment: str, cut_position: int) -> None:
    """``store`` as the broker had written it up to a record of ``cut_segment``: the segments after
    it absent, that one zero from ``cut_position`` on (what a MappedFile holds before it is written)."""
    shutil.copytree(store, into)
    for path in into.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    for name in sorted(os.listdir(into / "commitlog")):
        if name > cut_segment:
            os.remove(into / "commitlog" / name)
    with open(into / "commitlog" / cut_segment, "r+b") as f:
        size = f.seek(0, os.SEEK_END)
        f.seek(cut_position)
        f.write(bytes(size - cut_position))


def file_inventory(tables: str) -> list[dict]:
    """The consume queue and index files of the ``expiry_audit`` table, in name order."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from pipelines.delta import read_arrow
    audit = read_arrow(tables, "expiry_audit")
    files = audit.filter(pc.is_in(audit["kind"], pa.array(["consume_queue_file", "index_file"])))
    cols = ["kind", "name", "segment", "min_offset", "max_offset", "messages", "is_last"]
    return files.select(cols).sort_by([("kind", "ascending"), ("name", "ascending")]).to_pylist()
