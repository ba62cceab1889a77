"""The one gate a 5.x DLedger start's reput set inside an entry keeps on the records of a queue the walk wrote that
lie past the walk's end (a walk ended by a damaged message), in a queue the cut left with no file whose cut units are
all dispatched again (:func:`past_no_file`).

Mirrors the queue offset check of rocketmq-store 5.5.1 ``ConsumeQueue.putMessagePositionInfo`` as the rebuild's own
dispatch applies it (:mod:`store_format.consumequeue`).  Every queue it is asked about is an ordinary one (ext files
or not) that :mod:`store_format.dledger_inside_replay` places and writes whole, the records past the walk's end
included (``pipelines.restart_cut.apply_cut`` writes the replay's files, every other staged file of the queue
removed), so it only refuses: a record whose queue offset lies below the rebuild's write position (no broker case
reaches it).  Called by :func:`store_format.dledger_inside_units.place_inside`.
"""
from __future__ import annotations

from .dledger_inside_state import ParsedUnit, WalkedQueue, refuse
from .layout import CQ_UNIT_SIZE

__all__ = ["past_no_file"]


def past_no_file(key: tuple[str, int], s: WalkedQueue, parsed: list[ParsedUnit], at: int) -> None:
    """Refuse (one line) the records of queue ``key`` past the walk's end (:attr:`WalkedQueue.past`) in a queue the
    cut left with no file whose cut units are all dispatched again (``s``, as the cut left it; ``parsed``: its parsed
    units) where the rebuild's own dispatch of one drops it for its queue offset: below the rebuild's write position
    after the walk's units and the parsed units it appends (``ConsumeQueue.putMessagePositionInfo``'s "build consume
    queue repeatedly", :mod:`store_format.consumequeue`), a queue offset counter that went back between the walk's
    records and those.  No broker case reaches it (the queue is replayed whole otherwise:
    :mod:`store_format.dledger_inside_replay`).  The rebuild's dispatch appends no parsed unit of such a queue and
    drops none of those records for their ends: every cut unit is dispatched again
    (``dledger_inside_walked.inside_units`` refuses the rest), so the reput goes on at or before the first one's start,
    the parsed messages end there, below the end of that cut unit (the queue's max in the rebuild), and the records
    past the walk's end start past every walk unit."""
    write, top, appended = s.rebuild_write, s.rebuild_max, False
    for u in parsed:   # the rebuild's own dispatch of the parsed units, after every walk unit
        if u.offset + u.size > top and not (u.queue_offset != 0 and u.queue_offset * CQ_UNIT_SIZE < write):
            write, top, appended = write + CQ_UNIT_SIZE, u.offset + u.size, True
    assert not (appended and s.past), "no parsed unit of a queue whose cut units all go again appended"
    for offset, size, queue_offset in s.past:
        assert offset + size > top, "a record past the walk's end ends past every walk unit"
        if queue_offset != 0 and queue_offset * CQ_UNIT_SIZE < write:
            raise refuse(at, f"for {key[0]}/{key[1]}, a queue the cut left with no file whose record past the walk's "
                              f"end at {offset} the rebuild's dispatch does not append right after the walk's units "
                              "(its queue offset below the rebuild's write position)")
        write, top = write + CQ_UNIT_SIZE, offset + size
