"""5.5.1 DLedger crash restarts where the recovery's walk appended a queue's cut units from the start of a kept file of
zeros, the cut emptied that queue and the start's reput put every cut unit back, none where the walk had put it,
checked against the broker.

The store is :mod:`test_dledger_crash_zeros_broker`'s ``-small-zeros-emptied`` (``consumequeue/T9/0/0`` planted all
zeros) with messages 10, 198 and 199 sent to T9/0 (queue offsets 0, 1, 2; the last two past ``processOffset``, the
only units the cut takes): ``-zeros-emptied-three``.  ``ConsumeQueue.recover`` keeps the planted file (max -1, write
position 0); the walk's ``putMessagePositionInfo`` appends the units of 198 and 199 at bytes 0 and 20 (no
``fillPreBlank``: the file was not created in this run); ``truncateDirtyLogicFiles`` reads that file's first unit,
198's, at or past ``processOffset``, and deletes the file (``correctMinOffset``: max -1); the start's reput creates
file 0 anew for 198's unit (``MappedFileQueue.getLastMappedFile``, ``isFirstCreateInQueue``): one ``fillPreBlank``
unit at 0, 198's at 20 (its own queue offset), 199's at 40.  Every cut unit put back, each one slot past where the
walk had it.

``verify`` on the store as the restart found it predicts the units lost (all queues and queue by queue: T9/0 lacks
only message 10's unit, in the first data file, which no 5.5.1 walk from the last data file dispatches) and the index
keys put again (the reput's records from the other queues' largest max: the walk's last indexed one, 199, a second
time) as the broker's files hold them.  Where the reput puts the units back moves no count, so ``verify`` gives such a
queue no :class:`store_format.dledger_crash_cut.QueueMove`; ``rebuild --as-restart`` writes what a restart makes of a
store once ``consumequeue/`` and ``index/`` are deleted (no queue on disk before the walk: the walk and the reput then
put every cut unit at the same position), so it is not compared with this broker restart (docs/store-layouts.md,
"DLedger: cut units the walk did not put one after the other").
"""
from __future__ import annotations

from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_2gib import BLANK_MAX, FILL_PRE_BLANK_UNIT
from test_dledger_crash_zeros_broker import _verify_as_the_broker, _zeros_planted, zeros_scenarios

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

LINE = "5.5.1"
THREE = (10, 198, 199)   # the messages sent to T9/0


def _scenarios(line: str) -> list[dict]:
    """The module docstring's store of ``line``: ``-zeros-emptied`` with :data:`THREE` sent to T9/0."""
    kept, emptied = zeros_scenarios(line)
    three = [{**m, "topic": "T9", "queueId": 0} if i in THREE else m for i, m in enumerate(kept["messages"])]
    return [{**emptied, "messages": three, "name": f"{emptied['name']}-three"}]


SCENARIOS = {LINE: _scenarios(LINE)}
STORES = bh.Stores(SCENARIOS, "DLedger crash restarts, a queue emptied by the cut after the walk wrote into zeros",
                   threads=1)
_RUNS: dict[str, dict] = {}


@pytest.fixture
def written(request):  # noqa: ANN001, ANN201
    return bh.written_once(request, _RUNS, STORES, every=True)


def _slots(src: Path) -> list[tuple[int, int]]:
    """The broker's T9/0 after the restart, every slot of its one file: (commitlog offset, size)."""
    (f,) = sorted((src / "expected" / "consumequeue" / "T9" / "0").iterdir())
    b = f.read_bytes()
    assert f.name == f"{0:020d}" and b[:20] == FILL_PRE_BLANK_UNIT, (f.name, b[:20])
    return [(int.from_bytes(b[i:i + 8], "big"), int.from_bytes(b[i + 8:i + 12], "big")) for i in range(0, len(b), 20)]


def test_a_queue_the_cut_emptied_after_the_walk_appended_into_zeros(written, tmp_path):
    """The broker's T9/0 after the load: no file, max -1 (the cut deleted the planted file the walk wrote into); after
    the reput: file 0, a ``fillPreBlank`` unit at 0, then the units of messages 198 and 199 (both past
    ``processOffset``) at their own queue offsets, 1 and 2, zeros after them.  ``verify`` predicts the units lost and
    the index keys put again as the broker's files hold them."""
    r = written[f"{LINE}-dledger-abort-small-zeros-emptied-three"]
    sc, w, src = r["scenario"], r["written"], Path(r["scenario"]["dir"])
    # what the broker wrote
    _zeros_planted(src, "T9/0")
    po = int(w["truncateDirtyLogicFilesAt"])
    assert [i for i, m in enumerate(sc["messages"]) if m["topic"] == "T9"] == list(THREE)
    load, after = w["queuesAfterLoad"]["T9/0"], w["queuesAfterDispatch"]["T9/0"]
    assert (int(load["maxPhysicOffset"]), load["files"]) == (-1, []), load
    slots = _slots(src)
    assert int(after["maxOffset"]) == 20 * len(THREE) and slots[0] == (0, BLANK_MAX), (after, slots[:4])
    cut = slots[1:len(THREE)]
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert all(o >= po and o >= int(data[-1].name) and s not in (0, BLANK_MAX) for o, s in cut), (po, cut)
    assert cut[0][0] < cut[1][0] and not any(o or s for o, s in slots[len(THREE):]), slots
    assert int(after["maxPhysicOffset"]) == cut[-1][0] + cut[-1][1], after
    # ours
    _verify_as_the_broker(src, tmp_path, sc, w, "T9/0")
