"""The ``lookup`` command (:mod:`pipelines.lookup`), and the example lookup the demo prints: the
matches as text or JSON; like grep, exit 1 when nothing is found."""
from __future__ import annotations

import dataclasses
import json

import pyarrow.compute as pc

from store_format.errors import StoreError, StoreLayoutError
from store_format.layout import SCHEDULE_TOPIC
from store_format.store import load_config_for

from ..lookup import (
    MAX_MSGS_NUM_BATCH,
    json_default,
    lookup_index,
    lookup_key,
    lookup_msg_id,
    lookup_offset_msg_id,
    render,
    store_config,
)
from ..tables.runs import snapshot

__all__ = ["run_lookup", "demo_lookup"]


def demo_lookup(tables_path: str) -> None:
    """Print one example lookup from freshly published tables: the first key of the first bucket file."""
    keys = snapshot(tables_path).read_arrow("message_keys", ["topic", "key", "kind"])
    if keys is None or not keys.num_rows:
        print("no index keys in the tables: nothing to look up")
        return
    plain = pc.and_(pc.match_substring_regex(keys["key"], r"^[\w.-]+$"),
                    pc.not_equal(keys["topic"], SCHEDULE_TOPIC))
    sel = keys.filter(pc.and_(pc.equal(keys["kind"], "key"), plain))
    row = (sel if sel.num_rows else keys).slice(0, 1).to_pylist()[0]
    res = lookup_key(tables_path, row["topic"], row["key"])
    print(f"\nexample lookup: python -m pipelines lookup --tables {tables_path} --topic {row['topic']} "
          f"--key {row['key']}")
    print(render(res))


def run_lookup(*, tables: str | None, topic: str | None, key: str | None, msg_id: str | None,
               offset_msg_id: str | None, begin_ms: int | None, end_ms: int | None, body: bool, index: str | None,
               store: str | None, config_path: str | None, max_messages: int | None, as_json: bool) -> int:
    """``python -m pipelines lookup``: print the matches; like grep, exit 1 when nothing is found."""
    config = load_config_for(config_path) if config_path else None
    if index:
        if not (store and topic and (key or msg_id)):
            raise StoreError("--index needs --store, --topic and --key (or --msg-id)")
        res = lookup_index(index, store, config or store_config(store), topic, key or msg_id,  # type: ignore[arg-type]
                           begin_ms=begin_ms or 0, end_ms=end_ms if end_ms is not None else 2**63 - 1,
                           max_num=max_messages or MAX_MSGS_NUM_BATCH, body=body)
    else:
        if not tables:
            raise StoreError("pass --tables PATH (or --index DIR --store STORE)")
        if snapshot(tables).run is None:
            raise StoreLayoutError(f"{tables}: no published tables there (no runs table); publish them with "
                                   "'python -m pipelines rebuild' or 'python -m pipelines tables'")
        if offset_msg_id:
            res = lookup_offset_msg_id(tables, offset_msg_id, body=body, store=store, config=config)
        elif msg_id:
            res = lookup_msg_id(tables, msg_id, topic=topic, begin_ms=begin_ms, end_ms=end_ms, body=body, store=store,
                                config=config)
        elif topic and key:
            res = lookup_key(tables, topic, key, begin_ms=begin_ms, end_ms=end_ms, body=body, store=store,
                             config=config)
        else:
            raise StoreError("give --topic T --key K, --msg-id ID or --offset-msg-id ID")
        if max_messages is not None and len(res.rows) > max_messages:
            res = dataclasses.replace(res, rows=res.rows[:max_messages], cut=len(res.rows))
    if as_json:
        print(json.dumps({"messages": res.rows, "files_read": res.files_read, "files_total": res.files_total,
                          "discarded": res.discarded, "source": res.source, "cut_from": res.cut}, indent=2,
                         default=json_default))
    else:
        print(render(res, body=body))
    return 0 if res.rows else 1
