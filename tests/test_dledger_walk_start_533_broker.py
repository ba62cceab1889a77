"""The 5.3.3 DLedger crash restart's walk start as the harness pins it (``WalkStart.firstFile``): a crash store put
without a ``sleepMs`` means the walk from the first data file, which ``DLedgerCommitLog.dledgerRecoverAbnormally``
takes only while no later data file's first message was stored 3 s or more before the checkpoint's smaller timestamp
(``isMmapFileMatchedRecover``, ``StoreCheckpoint.getMinTimestamp``).  ``5.3.3-dledger-abort-small-paused`` is
``-dledger-abort-small`` (:func:`broker_dledger_scenarios.small_abort_scenarios`) with a 3.5 s pause before its last
put, as a loaded machine's slow puts would: the broker's own check then answers the last data file, and the writer
lowers ``physicMsgTimestamp`` and ``logicsMsgTimestamp`` to the highest value at which it answers the first
(``checkpointTimestampsSet``) instead of writing the store again.  Written by the published RocketMQ 5.3.3 store
through the JVM harness in ``tests/broker/`` (``DLEDGER_LINES=5.3.3``, or ``4.9.8,5.3.3,5.5.1``; 5.5.1 walks from
the checkpoint's ``logicsPhysicalOffset``, 4.9.8 walks nothing)."""
from __future__ import annotations

import struct
from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_files import walk_from_first_data_file
from broker_dledger_runs import _queued, _restart_as_the_broker, _units_held
from broker_dledger_scenarios import small_abort_scenarios

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

LINES = [ln for ln in bh.lines_from_env("DLEDGER_LINES", "5.5.1") if ln.startswith("5.3")]
# a DLedger entry's header, then the message's store timestamp (IPv4 born host)
ENTRY_HEADER, STORE_TIMESTAMP_AT = 48, 56


def paused_scenario(line: str) -> dict:
    """``<line>-dledger-abort-small-paused`` (module docstring)."""
    sc = small_abort_scenarios(line)[0]
    messages = [*sc["messages"][:-1], {"pauseMs": 3500}, sc["messages"][-1]]
    return {**sc, "messages": messages, "name": f"{sc['name']}-paused"}


SCENARIOS = {ln: [paused_scenario(ln)] for ln in LINES}
STORES = bh.Stores(SCENARIOS, "DLedger crash restarts whose walk start the harness pins", threads=1)
_RUNS: dict[str, dict] = {}


@pytest.fixture
def written(request):  # noqa: ANN001, ANN201
    return bh.written_once(request, _RUNS, STORES, every=True)


def _first_store_times(src: Path) -> list[int]:
    """Each DLedger data file's first message's store timestamp, as the restart found them (``before/``)."""
    files = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    at = ENTRY_HEADER + STORE_TIMESTAMP_AT
    return [struct.unpack(">q", f.read_bytes()[at:at + 8])[0] for f in files]


@pytest.mark.parametrize("line", LINES or [pytest.param("5.3.3", marks=pytest.mark.skip(
    reason="5.3.3 only: DLEDGER_LINES=5.3.3 (or 4.9.8,5.3.3,5.5.1)"))])
def test_the_harness_lowers_the_checkpoint_timestamps_so_that_the_533_walk_starts_at_the_first_data_file(
        written, tmp_path, line):
    """The broker's check answered the last data file with the timestamps the broker wrote (its first message stored
    3 s or more before their smaller one); the checkpoint the restart read holds, in both, 2999 ms after the earliest
    later data file's first message, the highest value at which no later file matches; not written again; the
    broker's restart then put every message's unit (the walk from the first file, the queues deleted), and
    ``--as-restart`` on that store writes what the restart wrote, byte for byte."""
    (sc,) = SCENARIOS[line]
    r = written[sc["name"]]
    w, src = r["written"], Path(r["scenario"]["dir"])
    firsts = _first_store_times(src)
    cp = w["checkpointTimestampsSet"]
    assert len(firsts) >= 2 and int(cp["movedFrom"]) == len(firsts) - 1, (firsts, cp)
    assert firsts[-1] <= int(cp["was"]) - 3000, (firsts, cp)   # the broker's value: the last file matched
    assert int(cp["set"]) == min(firsts[1:]) + 2999, (firsts, cp)
    walk_from_first_data_file(w, src)
    physic, logics = struct.unpack_from(">qq", (src / "before" / "checkpoint").read_bytes())
    assert min(physic, logics) == int(cp["set"]), (physic, logics, cp)
    assert _units_held(src / "expected" / "consumequeue") == _queued(sc), "the broker's restart walked every file"
    _restart_as_the_broker(src, sc["name"], line, tmp_path)
