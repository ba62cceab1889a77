"""``verify`` of a 5.x DLedger crash store whose recovery walk dispatches nothing, with its consume queues on disk,
checked against the broker's own restart (:mod:`broker_dledger_walked_nothing_scenarios`: the ``plain`` DLedger store
with ``forceVerifyPropCRC=true``, restarted after a crash keeping ``consumequeue/`` and ``index/``).

``DefaultMessageStore.recover`` loads the queues (``ConsumeQueue.recover``), then ``dledgerRecoverAbnormally``'s
message check fails at the first entry of the data file it starts at (DLedger's encoder appends no ``__CRC32#``
property): it dispatches nothing and its ``processOffset`` is that file's start, at which ``truncateDirtyLogicFiles``
cuts every loaded queue (5.3.3: the loaded queues' max reaches it; 5.5.1: the checkpoint's ``logicsPhysicalOffset``
and ``ConsumeQueueStore.truncateDirty``'s own check).  The start's reput then dispatches from the queues' largest max
after the cut (``recheckReputOffsetFromCq``) or the committed position to the log's end.  The broker's queues after
``load()`` and after the reput (``queuesAfterLoad``, ``queuesAfterDispatch``) are asserted first; then ``verify`` on
the store as the restart found it must predict the cut and the units put again and lost as the broker's queues show
them (:func:`store_format.dledger_crash._walked_nothing`).  5.5.1 and 5.3.3 by default
(``WALKED_NOTHING_LINES``).
"""
from __future__ import annotations

from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_walked_nothing_scenarios import walked_nothing_kept_scenarios

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

LINES = bh.lines_from_env("WALKED_NOTHING_LINES", "5.5.1,5.3.3")
SCENARIOS = {line: walked_nothing_kept_scenarios(line) for line in LINES}
NAMES = [pytest.param(line, sc["name"], id=sc["name"]) for line, scs in SCENARIOS.items() for sc in scs]
BLANK = 2**31 - 1   # ConsumeQueue.fillPreBlank's unit size
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "DLedger crash store(s) walked nothing, queues kept")


@pytest.fixture
def runs(request) -> dict[str, dict]:
    """Every scenario as the broker wrote and restarted it (once a session)."""
    return bh.written_once(request, _RUNS, STORES, every=True)


def _held(root: Path, states: dict) -> tuple[int, int]:
    """Over every queue of ``states`` (the writer's ``queuesAfterLoad`` or ``queuesAfterDispatch``), read from the
    queue files under ``root``: the message units below its write position (``fillPreBlank`` units left out), and the
    least commitlog offset of the units past it (-1: none)."""
    n, past = 0, -1
    for queue, s in states.items():
        for f in s["files"]:
            p = root / queue / f
            data = p.read_bytes() if p.is_file() else b""
            valid = max(0, int(s["maxOffset"]) - int(f))
            for i in range(0, len(data) - 19, 20):
                off, size = int.from_bytes(data[i:i + 8], "big"), int.from_bytes(data[i + 8:i + 12], "big")
                if i < valid:
                    n += size not in (0, BLANK)
                elif size not in (0, BLANK) and (past < 0 or off < past):
                    past = off
    return n, past


def _verify(store: Path, src: Path, line: str) -> dict:
    return bh.verified(store, src / "broker.conf", bh.BROKER_VERSION_ARG[line])


def _before_units(src: Path) -> list[int]:
    """The commitlog offsets of the message units the crashed broker's queues hold (``before/consumequeue``)."""
    out = []
    for f in sorted(p for p in (src / "before" / "consumequeue").rglob("0*") if p.is_file()):
        data = f.read_bytes()
        for i in range(0, len(data) - 19, 20):
            size = int.from_bytes(data[i + 8:i + 12], "big")
            if size in (0, BLANK):
                continue
            out.append(int.from_bytes(data[i:i + 8], "big"))
    return out


def _sent(sc: dict) -> int:
    """The scenario's puts (its pauses are no message)."""
    return sum(1 for m in sc["messages"] if "sleepMs" not in m)


def _as_the_broker(r: dict) -> tuple[Path, int, int, int]:
    """Asserts what the broker's restart wrote: the queues on disk at the crash reach past the offset it cut them at
    (a data file's start), every queue after ``load()`` ends at or below it, and after the reput its queues hold every
    unit (``recheckReputOffsetFromCq``: the reput from the queues' largest max) or those below the cut and past the
    committed position (without it); with no cut (``-nocut``: -1), the queues after ``load()`` as on disk and every
    unit held after the reput.  The scenario's folder, the cut, the units the reput put (the broker's) and of those
    the ones of uncommitted entries."""
    w, src, sc = r["written"], Path(r["scenario"]["dir"]), r["scenario"]
    size = int(sc["config"]["mappedFileSizeCommitLog"])
    cut = int(w["truncateDirtyLogicFilesAt"])
    loaded, _ = _held(src / "before" / "consumequeue", w["queuesAfterLoad"])
    after, _ = _held(src / "expected" / "consumequeue", w["queuesAfterDispatch"])
    sent = _sent(sc)
    back = int(sc.get("dledgerCommittedBack", 0))
    if "-nocut" in sc["name"]:
        assert "checkpointLogicsTimestampRewritten" in w, "the writer did not wait for the checkpoint's timestamps"
        assert cut == -1 and loaded == len(_before_units(src)) == after == sent, (cut, loaded, after, sent)
        return src, cut, after - loaded, back
    assert cut >= 0 and cut % size == 0, f"the restart cut the queues at {cut}, no data file's start"
    assert max(_before_units(src)) >= cut, "the queues on disk at the crash do not reach the cut"
    assert all(int(s["maxPhysicOffset"]) <= cut for s in w["queuesAfterLoad"].values()), w["queuesAfterLoad"]
    if "recheckReputOffsetFromCq" in sc["config"]:
        assert after == sent, f"the broker's reput put back {after} of {sent} units"
    else:
        below = sum(o < cut for o in _before_units(src))
        assert after == below + back, (after, below, back)
    return src, cut, after - loaded, back


@pytest.mark.parametrize("line,name", NAMES)
def test_verify_predicts_the_cut_and_the_reput_as_the_broker(runs, line: str, name: str, tmp_path) -> None:
    """The restart's cut at the walk's data file start and the reput after it, as the broker wrote them (asserted
    first; ``-nocut``: none, the walk started at a later data file); verify on the store as the restart found it
    predicts that restart (no note): the cut there, the units the reput puts again (the broker's, but for those of
    the uncommitted entries, which the rebuild verify compares with leaves out) and those lost (every sent message's
    unit the broker's queues lack below their write positions)."""
    r = runs[name]
    src, cut, put, back = _as_the_broker(r)
    report = _verify(bh.copy_store(src / "before", tmp_path / name), src, line)
    p = report["restart"]
    assert p is not None and p["dledger"] and not report["restart_note"], report.get("restart_note")
    note = next(n for n in p["notes"] if n.startswith("DLedger store after a crash"))
    held, _ = _held(src / "expected" / "consumequeue", r["written"]["queuesAfterDispatch"])
    assert p["units_lost"] == _sent(r["scenario"]) - held, (p["units_lost"], held, note)
    # the cut took the uncommitted entries' units too, and the reput put them back; with no cut it put none
    assert p["units_dispatched_again"] == put - (back if cut >= 0 else 0), (p["units_dispatched_again"], put, note)
    assert "fails at the first entry of data file" in note, note
    assert (f"cut the queues it loaded at {cut}," in note) if cut >= 0 else "truncateDirtyLogicFiles" not in note, note
