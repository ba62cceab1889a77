"""ConsumeQueueExt stores (``enableConsumeQueueExt=true``, no filter bitmap) written by the published
RocketMQ store through the JVM harness in ``tests/broker/``, rebuilt by ``python -m pipelines
rebuild``, compared byte for byte with what the broker rebuilt from the same commitlog:
``consumequeue/`` (whose units hold ext addresses), ``consumequeue_ext/`` and ``index/``.

The scenarios (:mod:`broker_cqext_scenarios`): ext files of 104 and 110 bytes (5 units each, so most
queues span several files, each ending in the end marker), tags, batches, delayed messages,
transactions, light queues. The rebuild runs with the smallest split size (4 KiB), so that each queue's
ext units come from many splits. ``test_broker_wrote_ext_files`` checks the harness itself.

All lines' stores are written at once (one JVM per line, its scenarios in threads) while the Spark
session starts. 4.9.8 and 5.5.1 by default; ``CQEXT_LINES=4.9.8,5.3.3,5.5.1`` adds 5.3.3.
"""
from __future__ import annotations

import time
from pathlib import Path

import broker_harness as bh
import pytest
from broker_cqext_scenarios import cqext_scenarios

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

LINES = bh.lines_from_env("CQEXT_LINES", "4.9.8,5.5.1")
BROKER_LINE = bh.BROKER_VERSION_ARG
SCENARIOS = {line: cqext_scenarios(line) for line in LINES}
CASES = [pytest.param(line, sc["name"], id=sc["name"]) for line, scs in SCENARIOS.items() for sc in scs]
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "ConsumeQueueExt store(s)")
LONG_MIN = -(1 << 63)


def _rebuild(d: Path, line: str) -> dict:
    return bh.rebuild(d, BROKER_LINE[line])


@pytest.fixture
def written(request, tmp_path_factory):
    """The scenario as the broker wrote it (every scenario written, and rebuilt, once)."""
    params = request.node.callspec.params
    name = params.get("name") or f"{params['line']}-cqext-plain"
    if not _RUNS:
        work = tmp_path_factory.mktemp("cqext")
        _RUNS.update(bh.write_lines(request, STORES, work))
        for n, r in _RUNS.items():
            if r["written"].get("ok"):
                started = time.monotonic()
                r["rebuild"] = _rebuild(Path(r["scenario"]["dir"]), r["line"])
                print(f"{n}: rebuilt in {time.monotonic() - started:.1f} s (exit {r['rebuild']['code']})")
    r = _RUNS[name]
    if not r["written"].get("ok"):
        pytest.fail(f"the broker's writer failed on {name}: {r['written'].get('error')}")
    return r


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def _cq_units(root: Path) -> list[tuple[str, int, int, int]]:
    """Every unit of a ``consumequeue/`` folder: (queue, commitlog offset, size, tags code), in order."""
    out = []
    for f in sorted(p for p in root.rglob("*") if p.is_file()):
        data = f.read_bytes()
        for i in range(0, len(data) - 19, 20):
            size = int.from_bytes(data[i + 8:i + 12], "big", signed=True)
            if size:
                out.append((str(f.parent.relative_to(root)), int.from_bytes(data[i:i + 8], "big"), size,
                            int.from_bytes(data[i + 12:i + 20], "big", signed=True)))
    return out


@pytest.mark.parametrize("line,name", CASES)
def test_broker_wrote_ext_files(written, line, name):
    """The harness itself: the broker wrote ext files of the configured size, several per queue with
    the end marker, its own queues' units hold ext addresses and light queues' units do not."""
    d = Path(written["scenario"]["dir"])
    ext = d / "expected" / "consumequeue_ext"
    size = int(written["scenario"]["config"]["mappedFileSizeConsumeQueueExt"])
    files = [ext / f for f in _files(ext)]
    assert files and all(f.stat().st_size == size for f in files)
    assert any(f.name != "0" * 20 for f in files), "no queue's ext units span two files"
    assert any(f.read_bytes()[100:102] == b"\xff\xff" for f in files), "no end marker"
    units = _cq_units(d / "expected" / "consumequeue")
    own = [u for u in units if not u[0].startswith("%LMQ%")]
    assert own and all(u[3] < -(1 << 31) for u in own), "a unit of a record's own queue holds no ext address"
    if name.endswith("-lmq"):
        light = [u for u in units if u[0].startswith("%LMQ%")]
        assert light and all(u[3] >= -(1 << 31) for u in light)
        assert not any(p.name.startswith("%LMQ%") for p in ext.iterdir()), "a light queue got ext files"


@pytest.mark.parametrize("line,name", CASES)
def test_files_match_broker(written, line, name):
    """consumequeue/, consumequeue_ext/ and index/: the same files, byte for byte."""
    d = bh.rebuilt_dir(written)
    for area in ("consumequeue", "consumequeue_ext"):
        exp, ours = d / "expected" / area, d / "ours" / area
        exp_files = _files(exp)
        assert exp_files, f"the broker wrote no {area}/"
        assert _files(ours) == exp_files, f"{area} file set differs"
        for rel in exp_files:
            bh.same_bytes((exp / rel).read_bytes(), (ours / rel).read_bytes(), f"{area}/{rel}")
    exp_idx = sorted((d / "expected" / "index").iterdir())
    our_idx = sorted((d / "ours" / "index").iterdir())
    if written["written"]["indexNamesUnique"]:
        assert exp_idx and len(our_idx) == len(exp_idx)
        for i, (e, o) in enumerate(zip(exp_idx, our_idx)):
            bh.same_bytes(e.read_bytes(), o.read_bytes(), f"index file #{i}")


@pytest.mark.parametrize("line", LINES)
def test_ext_units_decode_to_the_records(written, line):
    """Each own-queue unit's ext address leads to an ext unit holding the record's tagsCode as the
    consume queue would hold it without ext (the broker's own rebuild with ext off) and its store time."""
    d = bh.rebuilt_dir(written)
    size = int(written["scenario"]["config"]["mappedFileSizeConsumeQueueExt"])
    checked = 0
    for queue, _off, _size, addr in _cq_units(d / "ours" / "consumequeue"):
        real = addr - LONG_MIN
        f = d / "ours" / "consumequeue_ext" / queue / f"{real - real % size:020d}"
        unit = f.read_bytes()[real % size:real % size + 20]
        assert int.from_bytes(unit[:2], "big") == 20 and unit[18:20] == b"\0\0"
        assert int.from_bytes(unit[10:18], "big") > 1_600_000_000_000   # a store time in ms
        checked += 1
    assert checked


def _broker_store(written: dict, tmp_path: Path) -> Path:
    """The broker's commitlog with the broker's own consumequeue/ and consumequeue_ext/ (and index/:
    the broker's when its names are unique, else ours, which test_files_match_broker finds identical)."""
    import shutil
    d = bh.rebuilt_dir(written)
    store = shutil.copytree(d / "store", tmp_path / "store")
    for area in ("consumequeue", "consumequeue_ext"):
        shutil.copytree(d / "expected" / area, store / area)
    shutil.copytree(d / ("expected" if written["written"]["indexNamesUnique"] else "ours") / "index", store / "index")
    return store


@pytest.mark.parametrize("line", LINES[:1])
def test_verify_and_repair_ext_files(written, line, tmp_path):
    """verify finds the broker's files identical and predicts a next start that changes nothing, ext files
    included; with one ext file truncated, one with flipped bytes, one deleted, and a consume queue file of
    the truncated one's queue with a flipped ext address, verify names exactly those files (exit 1) and
    predicts that the start fails on the truncated ext file (doLoad); repair takes them from the rebuild
    (ext files before the consume queue file), byte for byte the broker's, and verify is clean again."""
    import json
    d = Path(written["scenario"]["dir"])
    store = _broker_store(written, tmp_path)
    conf = ["--config", str(d / "broker.conf"), "--broker-version", BROKER_LINE[line], "--split-size", "4k"]
    code, text = bh.cli_ok(["verify", "--store", str(store), *conf])
    assert code == 0, text[-3000:]
    assert "verify: identical" in text and "consume queue ext files" in text
    assert "not predicted" not in text and "at the broker's next start (" in text and "START FAILS" not in text
    assert "consume queue ext files (ConsumeQueueExt.recover" not in text   # no ext unit dropped or orphaned

    ext, cq = store / "consumequeue_ext", store / "consumequeue"
    queues = sorted({str(Path(f).parent) for f in _files(ext)}, key=lambda q: -len(list((ext / q).iterdir())))
    truncated = f"{queues[0]}/{'0' * 20}"     # the queue with the most ext files
    flipped = _files(ext / queues[0])[1]
    flipped = f"{queues[0]}/{flipped}"
    deleted = f"{queues[1]}/{_files(ext / queues[1])[-1]}"
    cq_file = f"{queues[0]}/{'0' * 20}"
    data = (ext / truncated).read_bytes()
    (ext / truncated).write_bytes(data[:50])
    data = bytearray((ext / flipped).read_bytes())
    data[3] ^= 0xFF                              # the first unit's tagsCode
    (ext / flipped).write_bytes(bytes(data))
    (ext / deleted).unlink()
    data = bytearray((cq / cq_file).read_bytes())
    data[19] ^= 0x01                             # the first unit's ext address
    (cq / cq_file).write_bytes(bytes(data))

    code, out = bh.cli_ok(["verify", "--store", str(store), *conf, "--json"])
    report = json.loads(out)
    assert code == 1 and not report["identical"]
    got = {(r["path"], r["status"]) for r in report["consume_queue_ext"]}
    assert got == {(truncated, "differs"), (flipped, "differs"), (deleted, "missing")}, got
    assert [(r["path"], r["status"]) for r in report["consume_queue"]] == [(cq_file, "differs")]
    assert not report["index"]
    short = next(r for r in report["consume_queue_ext"] if r["path"] == truncated)
    assert short["found_size"] == 50 and "MappedFileQueue.doLoad" in short["note"]
    assert next(r for r in report["consume_queue_ext"] if r["path"] == flipped)["first_unit"] == 0
    p = report["restart"]
    assert p is not None and not report["restart_note"] and p["start_fails"]
    failing = [q for q in p["queues"] if q["load_failure"]]
    assert [q["queue"] for q in failing] == [queues[0]], failing
    assert "consumequeue_ext" in failing[0]["load_failure"]
    assert "mappedFileSizeConsumeQueueExt" in failing[0]["load_failure"]

    code, out = bh.cli_ok(["repair", "--store", str(store), *conf, "--json"])
    result = json.loads(out)
    assert code == 0, out[-3000:]
    paths = [a["path"] for a in result["plan"]["actions"]]
    assert sorted(paths) == sorted([f"consumequeue_ext/{truncated}", f"consumequeue_ext/{flipped}",
                                    f"consumequeue_ext/{deleted}", f"consumequeue/{cq_file}"])
    assert paths[-1] == f"consumequeue/{cq_file}", "ext files go first"
    for area, rel in (("consumequeue_ext", truncated), ("consumequeue_ext", flipped), ("consumequeue_ext", deleted),
                      ("consumequeue", cq_file)):
        bh.same_bytes((d / "expected" / area / rel).read_bytes(), (store / area / rel).read_bytes(), f"{area}/{rel}")
    code, text = bh.cli_ok(["verify", "--store", str(store), *conf])
    assert code == 0, text[-3000:]
