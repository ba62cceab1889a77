"""What a golden store's commitlog holds, decoded with store_format's record walk alone (no table
involved): each record's offset, topic, KEYS tokens, UNIQ_KEY, offset msgId and store time, and the
(topic, key) pairs a lookup can ask for."""
from __future__ import annotations

import dataclasses
from pathlib import Path

from store_format import commitlog as cl
from store_format.config import BrokerConfig, load_broker_config
from store_format.records import detail_columns, lean_columns
from store_format.reput import walk_store
from store_format.store import open_store

KEY_SEPARATOR = " "   # MessageConst.KEY_SEPARATOR: KEYS holds space-separated keys


@dataclasses.dataclass(frozen=True)
class Record:
    offset: int
    topic: str
    keys: tuple[str, ...]       # KEYS split as IndexService.buildIndex splits it (empty tokens dropped)
    uniq_key: str | None
    msg_id: str
    store_timestamp: int
    dispatched: bool


def golden_config(case_dir: Path) -> BrokerConfig:
    return load_broker_config((case_dir / "broker.conf").read_text())


def records(case_dir: Path) -> list[Record]:
    """Every record the reput walks in the store, in commitlog order."""
    config = golden_config(case_dir)
    store = open_store(str(case_dir / "store"), config)
    out = []
    for _seg, res in walk_store(store, config):
        lean, det = lean_columns(res), detail_columns(res)
        props = det["properties"].to_pylist()
        for i in range(len(res.rec)):
            p = _properties(props[i])
            keys = tuple(k for k in (p.get("KEYS") or "").split(KEY_SEPARATOR) if k)
            out.append(Record(int(lean["commitlog_offset"][i].as_py()), lean["topic"][i].as_py(), keys,
                              p.get("UNIQ_KEY"), det["msg_id"][i].as_py(), int(lean["store_timestamp"][i].as_py()),
                              int(res.rec[i, cl.R_STATUS]) == cl.Status.DISPATCHED))
    return out


def _properties(text: str | None) -> dict[str, str]:
    """``MessageDecoder.string2messageProperties``: ``name\\x01value`` pairs separated by ``\\x02``
    (a pair needs a name and a value; a later pair replaces an earlier one)."""
    out: dict[str, str] = {}
    for pair in (text or "").split("\x02"):
        name, sep, value = pair.partition("\x01")
        if sep and name and value:
            out[name] = value
    return out


def pairs(recs: list[Record]) -> list[tuple[str, str]]:
    """Every (topic, KEYS token) and (topic, UNIQ_KEY) of the records."""
    out = set()
    for r in recs:
        if r.topic is None:
            continue
        out.update((r.topic, k) for k in r.keys)
        if r.uniq_key:
            out.add((r.topic, r.uniq_key))
    return sorted(out)
