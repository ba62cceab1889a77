"""store_format.writer, store_format.msgid and store_format.sample, end to end.

* The writer re-encodes the records of broker-written golden commitlogs into byte-identical segments
  (layout, blank records, queue offsets, V2 records, IPv6 hosts, properties of 4.9 and 5.x).
* Stores written by the writer rebuild (store_format.reput.rebuild_in_memory) into consume queue units
  that point at the right records and index files that find every key.
* Offset msgIds and UNIQ_KEYs have the broker's format; the sample generator is deterministic.
"""
from __future__ import annotations

import hashlib
import json
import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from oracle_reput import string_to_properties

from store_format.config import BrokerConfig, load_broker_config
from store_format.corruption import flip_body_byte, read_record_head, set_magic_code, set_total_size
from store_format.indexfile import read_header, select_phy_offsets
from store_format.javahash import java_string_hash
from store_format.layout import (
    MAGIC_BLANK,
    MAGIC_V1,
    MAGIC_V2,
    TRANSACTION_COMMIT,
    TRANSACTION_NOT,
    TRANSACTION_PREPARED,
    TRANSACTION_ROLLBACK,
)
from store_format.msgid import (
    UniqIdGenerator,
    create_offset_msg_id,
    create_offset_msg_ids,
    decode_offset_msg_id,
    decode_offset_msg_ids,
    host_to_bytes,
)
from store_format.reput import rebuild_in_memory
from store_format.sample import generate_sample_store, write_broker_conf
from store_format.store import open_store
from store_format.writer import AUTO, CommitLogWriter
from store_format.writer_columns import encode_properties

SCHEDULE = "SCHEDULE_TOPIC_XXXX"


# ---------------------------------------------------------------------------------------------
# a plain record parser for the checks


@dataclass
class Rec:
    offset: int
    total: int
    magic: int
    crc: int
    queue_id: int
    flag: int
    queue_offset: int
    phys: int
    sys_flag: int
    born_ts: int
    born_host: bytes
    store_ts: int
    store_host: bytes
    reconsume: int
    prep: int
    body: bytes
    topic: bytes
    props: bytes

    @property
    def properties(self) -> dict[str, str]:
        return string_to_properties(self.props.decode("utf-8"))


def parse_segment(data: bytes, base: int) -> tuple[list[Rec], int | None]:
    """Records of a well-formed segment, and the position of its blank record (None: none)."""
    recs: list[Rec] = []
    p = 0
    while p + 8 <= len(data):
        total, magic = struct.unpack_from(">ii", data, p)
        if magic == MAGIC_BLANK:
            assert total == len(data) - p
            assert not any(data[p + 8:]), "bytes after the blank record must be zero"
            return recs, p
        if total == 0:
            break
        crc, qid, flag, qoff, phys, sysflag, born_ts = struct.unpack_from(">iiiqqiq", data, p + 8)
        q = p + 48
        bh = 20 if sysflag & 0x10 else 8
        born = data[q:q + bh]
        q += bh
        (store_ts,) = struct.unpack_from(">q", data, q)
        q += 8
        sh = 20 if sysflag & 0x20 else 8
        store = data[q:q + sh]
        q += sh
        reconsume, prep, body_len = struct.unpack_from(">iqi", data, q)
        q += 16
        body = data[q:q + body_len]
        q += body_len
        if magic == MAGIC_V2:
            (tl,) = struct.unpack_from(">h", data, q)
            q += 2
        else:
            tl = data[q]
            q += 1
        topic = data[q:q + tl]
        q += tl
        (pl,) = struct.unpack_from(">h", data, q)
        q += 2
        props = data[q:q + pl]
        q += pl
        assert q - p == total, f"record at {base + p}: fields give {q - p} bytes, totalSize says {total}"
        recs.append(Rec(base + p, total, magic, crc, qid, flag, qoff, phys, sysflag, born_ts, born, store_ts, store,
                        reconsume, prep, body, topic, props))
        p += total
    return recs, None


def parse_store(root: str | Path) -> tuple[list[str], list[Rec]]:
    cdir = Path(root) / "commitlog"
    names = sorted(os.listdir(cdir))
    recs: list[Rec] = []
    for name in names:
        recs.extend(parse_segment((cdir / name).read_bytes(), int(name))[0])
    return names, recs


# ---------------------------------------------------------------------------------------------
# the writer reproduces broker-written commitlogs

GOLDEN_COMMITLOGS = ["basic-4.9.8", "basic-5.3.3", "features-4.9.8", "longtopic-5.3.3", "lmq-4.9.8", "rebased-4.9.8"]


@pytest.mark.parametrize("case", GOLDEN_COMMITLOGS)
def test_writer_reproduces_golden_commitlog(golden_dir: Path, case: str, tmp_path: Path) -> None:
    case_dir = golden_dir / case
    version = "5" if json.loads((case_dir / "manifest.json").read_text())["broker_version"].startswith("5") else "4"
    config = load_broker_config((case_dir / "broker.conf").read_text(), brokerVersion=version)
    names, recs = parse_store(case_dir / "store")
    first_offsets: dict[tuple[str, int], int] = {}
    for r in recs:  # a store whose old segments expired: its queues start where its records say
        if r.sys_flag & 0xC in (TRANSACTION_NOT, TRANSACTION_COMMIT):
            first_offsets.setdefault((r.topic.decode(), r.queue_id), r.queue_offset)
    with CommitLogWriter(tmp_path, config, start_offset=int(names[0]), queue_offset_base=first_offsets) as w:
        res = w.write_batch(
            topic=[r.topic for r in recs], queue_id=[r.queue_id for r in recs], body=[r.body for r in recs],
            properties=[r.props for r in recs], sys_flag=[r.sys_flag for r in recs], flag=[r.flag for r in recs],
            born_timestamp=[r.born_ts for r in recs], store_timestamp=[r.store_ts for r in recs],
            born_host=[r.born_host for r in recs], store_host=[r.store_host for r in recs],
            reconsume_times=[r.reconsume for r in recs], prepared_tx_offset=[r.prep for r in recs],
            magic_v2=[r.magic == MAGIC_V2 for r in recs])  # queue offsets: from the writer's counters
    assert res.offsets.tolist() == [r.offset for r in recs]
    assert res.queue_offsets.tolist() == [r.queue_offset for r in recs]
    assert [r.crc for r in recs] == [zlib.crc32(r.body) & 0x7FFFFFFF for r in recs]
    assert sorted(os.listdir(tmp_path / "commitlog")) == names
    for name in names:
        written = (tmp_path / "commitlog" / name).read_bytes()
        assert written == (case_dir / "store" / "commitlog" / name).read_bytes(), name


def test_properties_separator_per_broker_line() -> None:
    props = {"TAGS": "t", "KEYS": "a b", "SKIPPED": None}
    assert encode_properties(props, "4") == b"TAGS\x01t\x02KEYS\x01a b"   # 4.9 deletes the last separator
    assert encode_properties(props, "5") == b"TAGS\x01t\x02KEYS\x01a b\x02"  # 5.x keeps it
    assert encode_properties({}, "5") == b""


# ---------------------------------------------------------------------------------------------
# layout rules


def test_blank_record_when_a_record_does_not_fit(tmp_path: Path) -> None:
    config = BrokerConfig(mappedFileSizeCommitLog=1024)
    with CommitLogWriter(tmp_path, config) as w:
        first = w.append("T", 0, b"x" * 300, store_timestamp=1)
        size = first[1]
        # fill the segment so that exactly msgLen + 8 bytes are left: the record still fits
        room = 1024 - 2 * size - 8
        w.append("T", 0, b"y" * (300 + room - size), store_timestamp=1)
        offset, _ = w.append("T", 0, b"x" * 300, store_timestamp=1)
        assert offset == 1024 - size - 8  # fits with 8 bytes to spare
        offset, _ = w.append("T", 0, b"x" * 300, store_timestamp=1)
        assert offset == 1024  # only 8 bytes were left: blank record, next segment
    seg0 = (tmp_path / "commitlog" / "00000000000000000000").read_bytes()
    recs, blank = parse_segment(seg0, 0)
    assert blank == 1016 and struct.unpack_from(">ii", seg0, 1016) == (8, MAGIC_BLANK)
    assert [r.queue_offset for r in recs] == [0, 1, 2]
    assert all(r.phys == r.offset for r in recs)
    assert os.path.getsize(tmp_path / "commitlog" / "00000000000000001024") == 1024


def test_record_fields_and_flags(tmp_path: Path) -> None:
    config = BrokerConfig(mappedFileSizeCommitLog=1 << 16, brokerVersion="5")
    with CommitLogWriter(tmp_path, config, queue_offset_base={("T", 1): 100}) as w:
        w.append("T", 1, b"body", {"TAGS": "a"}, store_timestamp=5, born_timestamp=4, born_host="[fd00::1]:7",
                 flag=3, reconsume_times=2)
        w.append("T", 1, b"p", sys_flag=TRANSACTION_PREPARED, store_timestamp=6)
        w.append("T", 1, b"r", sys_flag=TRANSACTION_ROLLBACK, store_timestamp=6)
        w.append("T", 1, b"c", sys_flag=TRANSACTION_COMMIT, store_timestamp=6, store_host="[fd00::64]:10911")
        w.append("T", 1, b"e", store_timestamp=7, queue_offset=500)  # given offsets leave the counter alone
        w.append("T", 1, b"f", store_timestamp=7)
        w.append("L" * 200, 0, b"v2", store_timestamp=8)  # a 5.x broker writes long topics as V2 records
        assert w.queue_offset("T", 1) == 103
    _, recs = parse_store(tmp_path)
    assert [r.queue_offset for r in recs] == [100, 0, 0, 101, 500, 102, 0]
    assert recs[0].sys_flag == 0x10 and recs[0].born_host == host_to_bytes("[fd00::1]:7")
    assert (recs[0].flag, recs[0].reconsume, recs[0].born_ts, recs[0].store_ts) == (3, 2, 4, 5)
    assert recs[0].props == b"TAGS\x01a\x02"
    assert recs[3].sys_flag == TRANSACTION_COMMIT | 0x20 and len(recs[3].store_host) == 20
    assert [r.magic for r in recs] == [MAGIC_V1] * 6 + [MAGIC_V2]
    assert recs[6].topic == b"L" * 200


def test_writer_refuses_what_a_broker_refuses(tmp_path: Path) -> None:
    with CommitLogWriter(tmp_path / "a", BrokerConfig(mappedFileSizeCommitLog=4096)) as w:
        with pytest.raises(ValueError, match="V1 record"):
            w.append("L" * 128, 0, b"")  # 4.9: no V2 records
        with pytest.raises(ValueError, match="does not fit a segment"):
            w.append("T", 0, b"x" * 4096)
        with pytest.raises(ValueError, match="properties longer"):
            w.append("T", 0, b"", {"KEYS": "k" * 40000})
    with pytest.raises(FileExistsError):
        CommitLogWriter(tmp_path / "a", BrokerConfig(mappedFileSizeCommitLog=4096))
    with pytest.raises(ValueError, match="multiple of the segment size"):
        CommitLogWriter(tmp_path / "b", BrokerConfig(mappedFileSizeCommitLog=4096), start_offset=100)


def test_corruption_helpers(tmp_path: Path) -> None:
    with CommitLogWriter(tmp_path, BrokerConfig(mappedFileSizeCommitLog=4096)) as w:
        offset, size = w.append("T", 0, b"hello", store_timestamp=1)
        second, _ = w.append("T", 0, b"world", store_timestamp=1)
    head = read_record_head(tmp_path, second)
    assert (head["totalSize"], head["physicalOffset"], head["bodyLength"]) == (size, second, 5)
    flip_body_byte(tmp_path, offset, index=1)
    set_magic_code(tmp_path, second)
    set_total_size(tmp_path, offset, delta=8)
    data = (tmp_path / "commitlog" / "00000000000000000000").read_bytes()
    h0 = read_record_head(tmp_path, offset)
    assert data[h0["bodyPos"]:h0["bodyPos"] + 5] == b"h\x9allo"
    assert h0["bodyCRC"] != zlib.crc32(b"h\x9allo") & 0x7FFFFFFF
    assert h0["totalSize"] == size + 8
    assert read_record_head(tmp_path, second)["magicCode"] == struct.unpack(">i", bytes.fromhex("DEADBEEF"))[0]


# ---------------------------------------------------------------------------------------------
# write, rebuild, and check every unit and key

SMALL = BrokerConfig(mappedFileSizeCommitLog=8192, mappedFileSizeConsumeQueue=100, maxHashSlotNum=7, maxIndexNum=150,
                     messageDelayLevel="1s 5s 10s")


def _random_store(root: Path, config: BrokerConfig, n: int = 400, seed: int = 3) -> None:
    rng = np.random.default_rng(seed)
    tokens = np.array(["k1", "k2", "Aa", "BB", "订单", "😀", "key-x"])
    topics = ["Alpha", "Beta", "Gamma", SCHEDULE]
    topic_id = rng.integers(0, 4, n)
    props = []
    queue_id = rng.integers(0, 3, n)
    for i in range(n):
        p: dict[str, str] = {"UNIQ_KEY": f"{i:032X}"}
        if rng.random() < 0.8:
            p["TAGS"] = str(rng.choice(["TagA", "TagB", "标签", "🎉"]))
        k = rng.integers(0, 4)
        if k:
            p["KEYS"] = " ".join(rng.choice(tokens, k)) + ("  odd" if rng.random() < 0.1 else "")
        if topics[topic_id[i]] == SCHEDULE:
            level = int(rng.integers(1, 5))  # 4 is above the 3 levels: the broker clamps it
            p.update(DELAY=str(level), REAL_TOPIC="Alpha", REAL_QID=str(queue_id[i]))
            queue_id[i] = min(level, 3) - 1
        props.append(p)
    with CommitLogWriter(root, config) as w:
        w.write_batch(topic=[topics[t] for t in topic_id], queue_id=queue_id,
                      body=[bytes(rng.integers(0, 256, rng.integers(0, 200), dtype=np.uint8)) for _ in range(n)],
                      properties=props, sys_flag=rng.choice([0, 0, 0, 0, 4, 8, 12], n),
                      store_timestamp=1_700_000_000_000 + np.cumsum(rng.integers(0, 900, n)),
                      born_host=["[fd00::7]:9" if rng.random() < 0.2 else "10.1.2.3:9" for _ in range(n)],
                      store_host=["[fd00::64]:10911" if rng.random() < 0.2 else "10.0.0.100:10911" for _ in range(n)])


def _check_rebuild(root: Path, config: BrokerConfig) -> None:
    names, recs = parse_store(root)
    by_offset = {r.offset: r for r in recs}
    result = rebuild_in_memory(open_store(str(root), config), config)
    delays = config.delay_levels_ms
    # every consume queue unit points at its record, at position queueOffset * 20 of its queue
    seen: set[int] = set()
    for path, data in result.consumequeue.items():
        topic, qid, fname = path.rsplit("/", 2)
        units = np.frombuffer(data, dtype=[("off", ">i8"), ("size", ">i4"), ("tags", ">i8")])
        for k, u in enumerate(units):
            if u["size"] == 0:
                assert not data[k * 20:].strip(b"\0"), "units are contiguous"
                break
            r = by_offset[int(u["off"])]
            assert (r.topic.decode(), r.queue_id) == (topic, int(qid))
            assert int(u["size"]) == r.total
            assert int(fname) + 20 * k == 20 * r.queue_offset
            p = r.properties
            if r.topic.decode() == SCHEDULE:
                assert int(u["tags"]) == r.store_ts + delays[min(int(p["DELAY"]), len(delays)) - 1]
            else:
                assert int(u["tags"]) == (java_string_hash(p["TAGS"]) if "TAGS" in p else 0)
            seen.add(r.offset)
    assert seen == {r.offset for r in recs if r.sys_flag & 0xC in (TRANSACTION_NOT, TRANSACTION_COMMIT)}
    assert len({p.rsplit("/", 1)[0] for p in result.consumequeue}) < len(result.consumequeue), "queues span files"
    # every key of every record not rolled back is found in the index files
    files = [data for _, data in result.index]
    assert len(files) >= 2
    assert sum(read_header(f).index_count - 1 for f in files if read_header(f).index_count) == result.keys
    for r in recs:
        if r.sys_flag & 0xC == TRANSACTION_ROLLBACK:
            continue
        p = r.properties
        keys = [p["UNIQ_KEY"]] + [k for k in p.get("KEYS", "").split(" ") if k]
        for key in keys:
            lookup = f"{r.topic.decode()}#{key}"
            found = [o for f in files
                     for o in select_phy_offsets(f, lookup, max_hash_slot_num=config.maxHashSlotNum, max_num=10_000)]
            assert r.offset in found, (r.offset, key)
    assert len(names) >= 3


def test_writer_store_rebuilds_to_units_and_keys_4(tmp_path: Path) -> None:
    _random_store(tmp_path, SMALL)
    _check_rebuild(tmp_path, SMALL)


def test_writer_store_rebuilds_to_units_and_keys_5(tmp_path: Path) -> None:
    config = BrokerConfig(**{**SMALL.__dict__, "brokerVersion": "5"})
    _random_store(tmp_path, config, seed=4)
    _check_rebuild(tmp_path, config)


def test_sample_store_rebuilds_to_units_and_keys(tmp_path: Path) -> None:
    config = BrokerConfig(mappedFileSizeCommitLog=64 * 1024, mappedFileSizeConsumeQueue=400, maxHashSlotNum=101,
                          maxIndexNum=500)
    summary = generate_sample_store(str(tmp_path), config, messages=800, body_size=64, seed=5)
    assert summary["messages"] == 800 and summary["segments"] == len(os.listdir(tmp_path / "commitlog"))
    assert set(summary["features"]) >= {"prepared", "commit", "rollback", "delay", "ipv6", "non_ascii", "collide"}
    assert os.listdir(tmp_path) == ["commitlog"]
    _check_rebuild(tmp_path, config)


# ---------------------------------------------------------------------------------------------
# sample stores


def _digest(root: Path) -> str:
    h = hashlib.sha256()
    for name in sorted(os.listdir(root / "commitlog")):
        h.update(name.encode())
        h.update((root / "commitlog" / name).read_bytes())
    return h.hexdigest()


def test_sample_store_is_deterministic(tmp_path: Path) -> None:
    config = BrokerConfig(mappedFileSizeCommitLog=1 << 20)
    a = generate_sample_store(str(tmp_path / "a"), config, messages=3000, seed=11)
    b = generate_sample_store(str(tmp_path / "b"), config, messages=3000, seed=11)
    generate_sample_store(str(tmp_path / "c"), config, messages=3000, seed=12)
    assert a == b
    assert _digest(tmp_path / "a") == _digest(tmp_path / "b") != _digest(tmp_path / "c")
    assert a["bytes"] == a["end_offset"] and a["segments"] == 2


def test_sample_store_features(tmp_path: Path) -> None:
    config = BrokerConfig(mappedFileSizeCommitLog=1 << 20, brokerVersion="5")
    generate_sample_store(str(tmp_path), config, messages=3000, topics=2, queues=2, seed=2)
    _, recs = parse_store(tmp_path)
    flags = {r.sys_flag & 0xC for r in recs}
    assert flags == {TRANSACTION_NOT, TRANSACTION_PREPARED, TRANSACTION_COMMIT, TRANSACTION_ROLLBACK}
    assert any(r.sys_flag & 0x10 for r in recs) and any(r.sys_flag & 0x20 for r in recs)
    delayed = [r for r in recs if r.topic == SCHEDULE.encode()]
    assert delayed and all(r.queue_id == int(r.properties["DELAY"]) - 1 and "REAL_TOPIC" in r.properties
                           for r in delayed)
    keys = {(r.topic, k) for r in recs for k in r.properties.get("KEYS", "").split(" ")}
    assert {k for _, k in keys} >= {"Aa", "BB"}
    assert any(any(ord(ch) > 0xFFFF for ch in k) for _, k in keys)  # emoji: surrogate pairs in Java
    assert all(r.props.endswith(b"\x02") for r in recs)  # 5.x properties
    committed = [r for r in recs if r.sys_flag & 0xC in (TRANSACTION_COMMIT, TRANSACTION_ROLLBACK) and r.prep]
    prepared = {r.offset for r in recs if r.sys_flag & 0xC == TRANSACTION_PREPARED}
    assert committed and all(r.prep in prepared for r in committed)


def test_write_broker_conf_round_trips(tmp_path: Path) -> None:
    config = BrokerConfig(mappedFileSizeCommitLog=4096, maxIndexNum=17, enableMultiDispatch=True, brokerVersion="5",
                          messageDelayLevel="1s 2m")
    write_broker_conf(str(tmp_path / "conf" / "broker.conf"), config)
    assert load_broker_config((tmp_path / "conf" / "broker.conf").read_text()) == config


# ---------------------------------------------------------------------------------------------
# msgId and UNIQ_KEY


def test_offset_msg_id_format() -> None:
    assert create_offset_msg_id("10.0.0.100:10911", 0x1234) == "0A00006400002A9F0000000000001234"
    assert create_offset_msg_id(bytes.fromhex("0a00006400002a9f"), 0x1234) == "0A00006400002A9F0000000000001234"
    v6 = create_offset_msg_id("[fd00::64]:10911", 2**40)
    assert len(v6) == 56 and v6 == "FD000000000000000000000000000064" + "00002A9F" + "0000010000000000"
    assert decode_offset_msg_id(v6.lower()) == ("fd00::64", 10911, 2**40)
    with pytest.raises(ValueError):
        decode_offset_msg_id("0A00")


def test_offset_msg_id_round_trip_vectorized() -> None:
    rng = np.random.default_rng(0)
    offsets = rng.integers(0, 2**62, 50)
    for host in ("10.193.63.157:10911", "[2001:db8::7]:10911"):
        raw = np.frombuffer(host_to_bytes(host), dtype=np.uint8)
        ids = create_offset_msg_ids(np.tile(raw, (50, 1)), offsets)
        assert ids.tolist() == [create_offset_msg_id(host, int(o)) for o in offsets]
        assert create_offset_msg_ids(host, offsets).tolist() == ids.tolist()
        addr, ports, offs = decode_offset_msg_ids(ids)
        assert offs.tolist() == offsets.tolist() and set(ports.tolist()) == {10911}
        assert bytes(addr[0]) == bytes(raw[:-4])
        assert [decode_offset_msg_id(str(i)) for i in ids[:3]] == [
            (host.rsplit(":", 1)[0].strip("[]"), 10911, int(o)) for o in offsets[:3]]


def test_uniq_key_matches_a_broker_written_one(golden_dir: Path) -> None:
    seg = (golden_dir / "basic-4.9.8" / "store" / "commitlog" / "00000000000000000000").read_bytes()
    rec = parse_segment(seg, 0)[0][0]
    uniq = rec.properties["UNIQ_KEY"]  # made by the producer: ip fd00::2, pid 0x24DF, ...
    assert len(uniq) == 56
    gen = UniqIdGenerator(ip=bytes.fromhex(uniq[:32]), pid=int(uniq[32:36], 16),
                          class_loader_hash=int(uniq[36:44], 16))
    import datetime as dt
    born = dt.datetime.fromtimestamp(rec.born_ts / 1000, dt.timezone.utc)
    month_start = int(dt.datetime(born.year, born.month, 1, tzinfo=dt.timezone.utc).timestamp() * 1000)
    sent = month_start + int(uniq[44:52], 16)
    assert abs(sent - rec.born_ts) < 1000  # the id's time is the send time, next to the born timestamp
    assert gen.next(sent) == uniq  # counter 0: the first message of that producer


def test_uniq_key_counter_and_month_rollover() -> None:
    gen = UniqIdGenerator(ip="10.0.0.1", pid=0x12345, class_loader_hash=-1, counter=0xFFFF)
    nov = 1_700_000_000_000  # 2023-11-14T22:13:20Z
    ids = gen.batch([nov, nov + 1, 1_701_388_800_000 + 5])  # the last one is 2023-12-01T00:00:00.005Z
    assert [i[:20] for i in ids] == ["0A0000012345FFFFFFFF"] * 3  # pid keeps its low 16 bits
    assert [i[20:28] for i in ids] == ["47B76000", "47B76001", "00000005"]
    assert [i[28:] for i in ids] == ["FFFF", "0000", "0001"]  # the counter wraps at 16 bits
    assert gen.next(nov)[20:28] == f"{(nov - 1_701_388_800_000) & 0xFFFFFFFF:08X}"  # time went back: negative


def test_queue_offsets_auto_and_given(tmp_path: Path) -> None:
    with CommitLogWriter(tmp_path, BrokerConfig(mappedFileSizeCommitLog=4096), queue_offset_base=7) as w:
        res = w.write_batch(topic=["A", "B", "A", "A", "B"], queue_id=0, body=b"x",
                            queue_offset=[AUTO, AUTO, 3, AUTO, AUTO], store_timestamp=1)
    assert res.queue_offsets.tolist() == [7, 7, 3, 8, 8]
