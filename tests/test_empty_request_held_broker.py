"""DLedger crash restarts (5.5.1, an abort file, ``recheckReputOffsetFromCq=true``) whose start's reput, set inside an
entry, dispatches a blank's empty request (topic "" queue 0) over files the store already holds in
``consumequeue/0/`` and ``consumequeue_ext/0/`` (planted by the writer's ``plantFiles`` after the queue folders were
deleted, before the restart): what the broker wrote there, and ``rebuild --as-restart`` and ``verify`` on the store
as that restart found it (:mod:`store_format.empty_request_held`).  The stores: :mod:`broker_empty_request_held`."""
from __future__ import annotations

from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_runs import _as_restart, _queued, _same_files, _same_tree, _verify
from broker_empty_request_held import CQ, CQ_NEXT, EXT, EXT_NEXT, REPUT, held_scenarios

from pipelines.build import write_file
from store_format.config import BrokerConfig
from store_format.empty_request_held import empty_request_queue_files

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

LINE = "5.5.1"
NAME = f"{LINE}-dledger-abort-emptied-batch-embedded"
HELD = [f"{NAME}-blank-48-held", f"{NAME}-blank-48-held-short", f"{NAME}-blank-48-held-ext", f"{NAME}-held"]
_RUNS: dict[str, dict] = {}
STORES = bh.Stores({LINE: held_scenarios(LINE)}, "DLedger store(s) with topic \"\" queue 0's files planted")


@pytest.fixture
def held(request) -> dict[str, dict]:
    """Every store of :func:`broker_empty_request_held.held_scenarios` as the broker wrote it (once a session)."""
    return bh.written_once(request, _RUNS, STORES, every=True)


def _planted(r: dict) -> dict[str, bytes]:
    import base64
    return {rel: base64.b64decode(b) for rel, b in r["scenario"].get("plantFiles", {}).items()}


def _queue_0_files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for folder in ("consumequeue/0", "consumequeue_ext/0")
                  for p in (root / folder).glob("*") if p.is_file())


def test_the_broker_writes_the_empty_requests_unit_over_the_held_files(held) -> None:
    """What the broker's restart left in topic "" queue 0's folders: the empty request's unit (and ext unit) over
    the start of the first file the store held there, every other byte and file as it was, a shorter file grown to
    the queue's file size (zeros); and with no empty request dispatched, every file as it was."""
    for name in HELD:
        r = held[name]
        exp, plant = Path(r["scenario"]["dir"]) / "expected", _planted(r)
        size = int(r["scenario"]["config"]["mappedFileSizeConsumeQueue"])
        assert _queue_0_files(exp) == sorted(plant), name
        got = {rel: (exp / rel).read_bytes() for rel in plant}
        if name.endswith("-embedded-held"):   # the message parsed there, no empty request: nothing written
            assert got == plant, name
            continue
        unit = bytes(20)
        if name.endswith("-ext"):   # ext unit: size 20, tagsCode 0, store time 0, no bitmap; its address the tagsCode
            assert got[EXT] == (20).to_bytes(2, "big") + bytes(18) + plant[EXT][20:], got[EXT][:24].hex()
            assert got[EXT_NEXT] == plant[EXT_NEXT]
            unit = bytes(12) + got[CQ][12:20]
            assert int.from_bytes(unit[12:], "big", signed=True) < 0, unit.hex()   # an ext address
        first = plant[CQ] + bytes(max(0, size - len(plant[CQ])))
        assert got[CQ] == unit + first[20:], (name, got[CQ][:24].hex())
        assert CQ_NEXT not in plant or got[CQ_NEXT] == plant[CQ_NEXT]


def test_as_restart_over_the_held_files(held, tmp_path) -> None:
    """``rebuild --as-restart`` on each store as the restart found it writes the broker's files byte for byte (topic
    "" queue 0's too), and writing that queue's files from scratch, as before, would not."""
    for name in HELD:
        r = held[name]
        src = Path(r["scenario"]["dir"])
        code, err = _as_restart(src / "before", tmp_path / name, src, LINE)
        assert code == 0, err[-2000:]
        _same_tree(src / "expected", tmp_path / name)
        _same_files(src / "expected", tmp_path / name, "consumequeue_ext")
        assert ("its empty request to topic" in err) != name.endswith("-embedded-held"), err[-2000:]
        props = dict(ln.split("=", 1) for ln in (src / "broker.conf").read_text().splitlines() if "=" in ln)
        scratch = tmp_path / f"{name}-scratch"
        for rel, pieces in empty_request_queue_files(BrokerConfig.from_properties({"brokerVersion": "5", **props}),
                                                     0 if name.endswith("-embedded-held") else 1):
            write_file(str(scratch), rel, pieces)
        assert _queue_0_files(scratch) != _queue_0_files(src / "expected") or any(
            (scratch / rel).read_bytes() != (src / "expected" / rel).read_bytes() for rel in _queue_0_files(scratch))


def test_verify_over_the_held_files(held, tmp_path) -> None:
    """``verify`` on those stores predicts the units lost as on the store without the planted files, and that is
    the broker's count: the scenario's units less those below each queue's write position after its restart."""
    r0 = held[f"{NAME}-blank-48"]
    w, src0 = r0["written"], Path(r0["scenario"]["dir"])
    topics = {m["topic"] for m in r0["scenario"]["messages"] if "topic" in m}
    kept = 0   # the broker's units below each queue's write position, neither fillPreBlank nor the parsed one
    for queue, st in w["queuesAfterDispatch"].items():
        if queue.rsplit("/", 1)[0] not in topics:
            continue
        layout, unit = ("batchconsumequeue", 46) if queue.startswith("B9/") else ("consumequeue", 20)
        for f in st["files"]:
            b = (src0 / "expected" / layout / queue / f).read_bytes()[:max(0, int(st["maxOffset"]) - int(f))]
            kept += sum(1 for i in range(0, len(b), unit) if int.from_bytes(b[i + 8:i + 12], "big") != 2**31 - 1
                        and int.from_bytes(b[i:i + 8], "big") != REPUT)
    lost = []
    for name in (f"{NAME}-blank-48", f"{NAME}-blank-48-held", f"{NAME}-blank-48-held-short"):
        src = Path(held[name]["scenario"]["dir"])
        code, report = _verify(bh.copy_store(src / "before", tmp_path / name), src, LINE)
        p = report["restart"]
        assert p is not None and p["dledger"] and not report["restart_note"], report.get("restart_note")
        lost.append(p["units_lost"])
    assert lost == [_queued(r0["scenario"]) - kept] * 3 and lost[0] > 0, (lost, kept)
