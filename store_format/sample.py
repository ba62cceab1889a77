"""Sample stores: a commitlog of broker-like messages, deterministic for a seed.

:func:`generate_sample_store` writes ``root/commitlog/`` only (what the rebuild reads) with the
workload of the golden stores: topics x queues, tags, 0-3 keys, a ``UNIQ_KEY`` per message; with
``features`` a small share of messages also exercise what the reput treats specially:

* transactions: prepared (sysFlag 0x4, no consume queue entry, keys indexed), commit (0x8) and
  rollback (0xC, neither) records pointing at their prepared record;
* delayed messages in ``SCHEDULE_TOPIC_XXXX``, queue = level - 1, with ``DELAY``/``REAL_TOPIC``/
  ``REAL_QID`` (consume queue tagsCode = delivery time);
* IPv6 born and store hosts (sysFlag 0x10/0x20, longer records);
* CJK and emoji keys and tags (UTF-16 hashing, surrogate pairs);
* keys ``Aa`` and ``BB`` (equal hashCode) in two topics;
* odd spacing in ``KEYS`` (empty tokens are skipped);
* empty bodies.

Messages are built a batch at a time from numpy draws and laid out by
:class:`store_format.writer.CommitLogWriter`; the properties strings are rendered by a numba
kernel, so a 2 GiB store takes seconds.
"""
from __future__ import annotations

import os

import numba
import numpy as np

from .config import BrokerConfig
from .crc import body_crc
from .layout import (
    HOST_V6_LEN,
    NAME_VALUE_SEPARATOR,
    PROPERTY_SEPARATOR_BYTE,
    SCHEDULE_TOPIC,
    TRANSACTION_COMMIT,
    TRANSACTION_PREPARED,
    TRANSACTION_ROLLBACK,
)
from .msgid import UniqIdGenerator, hex_chars, host_to_bytes
from .writer import CommitLogWriter
from .writer_columns import Hosts, Spans, encode_properties

__all__ = ["generate_sample_store", "write_broker_conf", "DEFAULT_START_TIMESTAMP_MS", "FEATURES", "DEMO_BROKER_CONF"]

# the demo and notebook stores' broker.conf: small files, so that a few thousand messages roll them over
DEMO_BROKER_CONF = ("mappedFileSizeCommitLog=67108864\nmappedFileSizeConsumeQueue=600000\n"
                    "maxHashSlotNum=50000\nmaxIndexNum=200000\n")

DEFAULT_START_TIMESTAMP_MS = 1_704_067_200_000  # 2024-01-01T00:00:00Z: fixed, so a seed gives one store
BATCH = 1 << 16                                   # messages drawn and written at a time

FEATURES = ("prepared", "commit", "rollback", "delay", "ipv6", "non_ascii", "collide", "odd_spacing", "empty_body")
FEATURE_SHARE = 0.02

_TAGS = (b"TagA", b"TagB", b"TagC", b"TagD", b"TagE")
_NON_ASCII_TAGS = ("标签", "タグ🏷", "🎉", "Ünïcødé")
_NON_ASCII_KEYS = ("订单-{}", "キー{}", "🚀{}", "ключ{}", "😀😃{}")
_PRODUCERS = ("10.193.63.157:52369", "10.193.63.158:40112", "10.20.30.40:61000", "172.16.5.9:33333")
_PRODUCERS_V6 = ("[fd00::c1:3f9d]:52369", "[2001:db8::7]:40000")
_STORE_HOST = "10.0.0.100:10911"
_STORE_HOST_V6 = "[fd00::64]:10911"


def _u8(text: str | bytes) -> np.ndarray:
    return np.frombuffer(text.encode("utf-8") if isinstance(text, str) else text, dtype=np.uint8).copy()


# the pieces _render_properties puts together as MessageDecoder.messageProperties2String would
_UNIQ_NAME = _u8("UNIQ_KEY" + NAME_VALUE_SEPARATOR)
_TAGS_NAME = _u8("TAGS" + NAME_VALUE_SEPARATOR)
_KEYS_NAME = _u8("KEYS" + NAME_VALUE_SEPARATOR)
_CONSTANT = _u8(encode_properties({"CLUSTER": "DefaultCluster", "WAIT": "true"}))  # pairs, no trailing separator


@numba.njit(cache=True, nogil=True, inline="always")
def _put(out, pos, src, start, length, write):
    if write:
        out[pos:pos + length] = src[start:start + length]
    return pos + length


@numba.njit(cache=True, nogil=True, inline="always")
def _put_byte(out, pos, value, write):
    if write:
        out[pos] = value
    return pos + 1


@numba.njit(cache=True, nogil=True, inline="always")
def _put_decimal(out, pos, value, write):
    digits = 1
    v = value
    while v >= 10:
        v //= 10
        digits += 1
    if write:
        v = value
        for j in range(digits - 1, -1, -1):
            out[pos + j] = 48 + v % 10
            v //= 10
    return pos + digits


@numba.njit(cache=True, nogil=True)
def _render_properties(uniq, tag_data, tag_off, tag_id, key_ids, n_keys, extra_data, extra_off, trailing,
                       out, offsets, write):
    """Properties of each message: ``UNIQ_KEY``, the producer's constant pairs, ``TAGS`` and ``KEYS``
    (``k<id>`` tokens) when present, then any extra pairs; ``\\x02`` between pairs and, for 5.x, after
    the last.  With ``write`` False only ``offsets`` are computed."""
    pos = 0
    for i in range(uniq.shape[0]):
        offsets[i] = pos
        pos = _put(out, pos, _UNIQ_NAME, 0, _UNIQ_NAME.shape[0], write)
        pos = _put(out, pos, uniq[i], 0, uniq.shape[1], write)
        pos = _put_byte(out, pos, PROPERTY_SEPARATOR_BYTE, write)
        pos = _put(out, pos, _CONSTANT, 0, _CONSTANT.shape[0], write)
        t = tag_id[i]
        if t >= 0:
            pos = _put_byte(out, pos, PROPERTY_SEPARATOR_BYTE, write)
            pos = _put(out, pos, _TAGS_NAME, 0, _TAGS_NAME.shape[0], write)
            pos = _put(out, pos, tag_data, tag_off[t], tag_off[t + 1] - tag_off[t], write)
        if n_keys[i] > 0:
            pos = _put_byte(out, pos, PROPERTY_SEPARATOR_BYTE, write)
            pos = _put(out, pos, _KEYS_NAME, 0, _KEYS_NAME.shape[0], write)
            for j in range(n_keys[i]):
                if j > 0:
                    pos = _put_byte(out, pos, 32, write)
                pos = _put_byte(out, pos, 107, write)  # 'k'
                pos = _put_decimal(out, pos, key_ids[i, j], write)
        e0 = extra_off[i]
        e1 = extra_off[i + 1]
        if e1 > e0:
            pos = _put_byte(out, pos, PROPERTY_SEPARATOR_BYTE, write)
            pos = _put(out, pos, extra_data, e0, e1 - e0, write)
        if trailing:
            pos = _put_byte(out, pos, PROPERTY_SEPARATOR_BYTE, write)
    offsets[uniq.shape[0]] = pos


def _host_table(hosts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    table = np.zeros((len(hosts), HOST_V6_LEN), dtype=np.uint8)
    lens = np.empty(len(hosts), dtype=np.int64)
    for i, h in enumerate(hosts):
        raw = host_to_bytes(h)
        table[i, :len(raw)] = np.frombuffer(raw, dtype=np.uint8)
        lens[i] = len(raw)
    return table, lens


def generate_sample_store(root: str, config: BrokerConfig, *, messages: int = 20000, topics: int = 4, queues: int = 4,
                          body_size: int = 256, keys_per_message: tuple[int, int] = (0, 3), seed: int = 0,
                          features: bool = True, start_timestamp_ms: int | None = None) -> dict:
    """Write a sample commitlog to ``root/commitlog/`` (nothing else).

    Args:
        root: store root (created if needed; existing segments are replaced).
        config: segment size (``mappedFileSizeCommitLog``) and broker line (``brokerVersion``:
            properties end with ``\\x02`` on 5.x).
        messages: number of records.
        topics, queues: ``SampleTopic0..`` x queue ids ``0..queues-1``.
        body_size: bytes per body (bodies come from a pool of 64 random ones).
        keys_per_message: inclusive range of ``KEYS`` tokens per message.
        seed: the store is a function of the arguments; the same seed gives the same bytes.
        features: also write the special messages listed in the module docstring (about 2%).
        start_timestamp_ms: store time of the first message (default 2024-01-01T00:00:00Z).
    Returns:
        ``{"messages", "bytes", "segments", "start_offset", "end_offset", "features"}`` where
        ``features`` counts the special messages by kind.
    """
    if messages < 0 or topics < 1 or queues < 1 or body_size < 0:
        raise ValueError("messages must be >= 0, topics and queues >= 1, body_size >= 0")
    lo, hi = keys_per_message
    if not 0 <= lo <= hi:
        raise ValueError(f"keys_per_message={keys_per_message!r} must be (low, high) with 0 <= low <= high")
    rng = np.random.default_rng(seed)
    v5 = config.is_5x
    start_ts = DEFAULT_START_TIMESTAMP_MS if start_timestamp_ms is None else int(start_timestamp_ms)
    topic_names = [f"SampleTopic{i}" for i in range(topics)]
    schedule_id = len(topic_names)
    topic_table = topic_names + [SCHEDULE_TOPIC]
    n_levels = len(config.delay_levels_ms)
    # bodies: a pool of random bodies, and the empty body at the end
    pool = rng.integers(0, 256, (64, body_size), dtype=np.uint8)
    pool_data = np.ascontiguousarray(pool).ravel()
    pool_crc = np.array([body_crc(row) for row in pool] + [0], dtype=np.int64)
    tag_table = list(_TAGS) + [t.encode("utf-8") for t in _NON_ASCII_TAGS]
    tag_data = np.frombuffer(b"".join(tag_table) or b"\0", dtype=np.uint8)
    tag_off = np.concatenate([[0], np.cumsum([len(t) for t in tag_table])]).astype(np.int64)
    born_table, born_lens = _host_table(list(_PRODUCERS) + list(_PRODUCERS_V6))
    store_table, store_lens = _host_table([_STORE_HOST, _STORE_HOST_V6])
    uniq_gen = UniqIdGenerator(ip=host_to_bytes(_PRODUCERS[0])[:4], pid=int(rng.integers(1, 65536)),
                               class_loader_hash=int(rng.integers(0, 1 << 31)), start_ms=start_ts)
    key_space = max(messages // 2, 1)
    counts = {k: 0 for k in FEATURES}
    ts_cursor = start_ts
    os.makedirs(root, exist_ok=True)
    with CommitLogWriter(root, config, overwrite=True) as writer:
        done = 0
        while done < messages:
            n = min(BATCH, messages - done)
            topic_id = rng.integers(0, topics, n)
            queue_id = rng.integers(0, queues, n)
            store_ts = ts_cursor + np.cumsum(rng.integers(0, 3, n))
            ts_cursor = int(store_ts[-1])
            born_ts = store_ts - rng.integers(0, 20, n)
            body_id = rng.integers(0, len(pool), n)
            tag_id = np.where(rng.random(n) < 0.9, rng.integers(0, len(_TAGS), n), -1)
            n_keys = rng.integers(lo, hi + 1, n)
            key_ids = rng.integers(0, key_space, (n, max(hi, 1)))
            born_id = rng.integers(0, len(_PRODUCERS), n)
            store_id = np.zeros(n, dtype=np.int64)
            sys_flag = np.zeros(n, dtype=np.int64)
            prep_ref = np.full(n, -1, dtype=np.int64)
            extra: dict[int, bytes] = {}
            if features and n:
                _add_features(rng, n, done, topic_id, queue_id, tag_id, n_keys, body_id, born_id, store_id, sys_flag,
                              prep_ref, extra, counts, topic_names, schedule_id, n_levels, len(_TAGS), len(pool))
            # properties
            uniq = hex_chars(uniq_gen.batch_bytes(born_ts))
            extra_off = np.zeros(n + 1, dtype=np.int64)
            extra_idx = np.array(sorted(extra), dtype=np.int64)
            if len(extra_idx):
                extra_off[extra_idx + 1] = [len(extra[i]) for i in extra_idx.tolist()]
            np.cumsum(extra_off, out=extra_off)
            extra_data = np.frombuffer(b"".join(extra[i] for i in extra_idx.tolist()) or b"\0", dtype=np.uint8)
            offsets = np.empty(n + 1, dtype=np.int64)
            dummy = np.zeros(1, dtype=np.uint8)
            _render_properties(uniq, tag_data, tag_off, tag_id, key_ids, n_keys, extra_data, extra_off, v5, dummy,
                               offsets, False)
            props = np.empty(int(offsets[-1]), dtype=np.uint8)
            _render_properties(uniq, tag_data, tag_off, tag_id, key_ids, n_keys, extra_data, extra_off, v5, props,
                               offsets, True)
            empty = body_id == len(pool)
            writer.write_batch(
                topic=(topic_table, topic_id), queue_id=queue_id,
                body=Spans(pool_data if len(pool_data) else np.zeros(1, np.uint8),
                           np.where(empty, 0, body_id * body_size), np.where(empty, 0, body_size)),
                body_crc=pool_crc[body_id] if body_size else np.zeros(n, dtype=np.int64),
                properties=Spans(props if len(props) else np.zeros(1, np.uint8), offsets[:-1], np.diff(offsets)),
                sys_flag=sys_flag, born_timestamp=born_ts, store_timestamp=store_ts,
                born_host=Hosts(born_table[born_id], born_lens[born_id]),
                store_host=Hosts(store_table[store_id], store_lens[store_id]),
                prepared_tx_ref=prep_ref)
            done += n
        summary = writer.close()
    return {"messages": summary["records"], "bytes": summary["end_offset"] - summary["start_offset"],
            "segments": summary["segments"], "start_offset": summary["start_offset"],
            "end_offset": summary["end_offset"], "features": {k: v for k, v in counts.items() if v}}


def _add_features(rng: np.random.Generator, n: int, first: int, topic_id: np.ndarray, queue_id: np.ndarray,
                  tag_id: np.ndarray, n_keys: np.ndarray, body_id: np.ndarray, born_id: np.ndarray,
                  store_id: np.ndarray, sys_flag: np.ndarray, prep_ref: np.ndarray, extra: dict[int, bytes],
                  counts: dict[str, int], topic_names: list[str], schedule_id: int, n_levels: int,
                  n_ascii_tags: int, empty_body_id: int) -> None:
    """Turn about 2% of a batch into special messages (in place)."""
    k = max(int(n * FEATURE_SHARE), min(n, len(FEATURES)))
    picked = np.sort(rng.choice(n, size=k, replace=False))
    kinds = rng.integers(0, len(FEATURES), k)
    if first == 0:  # the first batch shows every kind at least once
        kinds[:min(k, len(FEATURES))] = np.arange(min(k, len(FEATURES)))
    last_prepared = -1
    for i, kind in zip(picked.tolist(), kinds.tolist()):
        name = FEATURES[kind]
        props: dict[str, str] = {}
        if name == "prepared":
            sys_flag[i] = TRANSACTION_PREPARED
            props = {"TRAN_MSG": "true", "PGROUP": f"txGroup{topic_id[i]}"}
            last_prepared = i
        elif name in ("commit", "rollback"):
            sys_flag[i] = TRANSACTION_COMMIT if name == "commit" else TRANSACTION_ROLLBACK
            props = {"TRAN_MSG": "true", "PGROUP": f"txGroup{topic_id[i]}"}
            if last_prepared >= 0:
                prep_ref[i] = last_prepared
                last_prepared = -1
        elif name == "delay":
            level = int(rng.integers(1, n_levels + 1))
            props = {"DELAY": str(level), "REAL_TOPIC": topic_names[topic_id[i]], "REAL_QID": str(queue_id[i])}
            topic_id[i] = schedule_id
            queue_id[i] = level - 1
        elif name == "ipv6":
            born_id[i] = len(_PRODUCERS) + int(rng.integers(0, len(_PRODUCERS_V6)))  # IPv6 producers follow
            store_id[i] = int(rng.integers(0, 2))  # 1: the broker's IPv6 address
        elif name == "non_ascii":
            tag_id[i] = n_ascii_tags + int(rng.integers(0, len(_NON_ASCII_TAGS)))
            n_keys[i] = 0
            chosen = rng.choice(len(_NON_ASCII_KEYS), size=2, replace=False)
            props = {"KEYS": " ".join(_NON_ASCII_KEYS[c].format(int(rng.integers(0, 100))) for c in chosen)}
        elif name == "collide":
            topic_id[i] = int(rng.integers(0, min(2, len(topic_names))))
            n_keys[i] = 0
            props = {"KEYS": "Aa" if counts[name] % 2 == 0 else "BB"}
        elif name == "odd_spacing":
            n_keys[i] = 0
            a, b = rng.integers(0, 1000, 2)
            props = {"KEYS": f"  sp{a}   sp{b} "}
        elif name == "empty_body":
            body_id[i] = empty_body_id
        counts[name] += 1
        if props:
            extra[i] = encode_properties(props)  # joined pairs; the kernel adds the separator before them


def write_broker_conf(path: str, config: BrokerConfig) -> None:
    """Write ``config`` as a ``broker.conf`` (Java properties, every field) that
    :func:`store_format.config.load_broker_config` reads back to an equal config."""
    lines = [f"{k}={v}" for k, v in config.as_properties().items()]
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
