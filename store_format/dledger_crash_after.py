"""A 5.x DLedger crash restart whose recovery's walk ended at a damaged message: where the start's reput goes past
it, and the one-line refusal every crash-restart prediction shares.

Mirrors ``DefaultMessageStore.ReputMessageService.doReput`` over ``DLedgerCommitLog.getData`` and
``DLedgerCommitLog.checkMessageAndReturnSize`` (rocketmq-all-5.3.3 and rocketmq-store 5.5.1): the reput's check reads
no CRC, a DLedger blank moves it to the next data file, and a record it cannot read sends it to the end of the buffer
``getData`` gave (:func:`reput_goes_on`, :func:`reput_skips`).  Called by :mod:`store_format.dledger_crash`.
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from . import commitlog as cl
from .config import BrokerConfig
from .dledger import ENTRY_HEADER_SIZE
from .dledger_crash_cut import U_QUEUE, QueueTrack
from .errors import UnsupportedConfigError
from .recovery import CheckStop, check_rows
from .store import Segment, StoreLocation

__all__ = ["checked_windows", "refusal", "reput_goes_on", "reput_skips", "walk_after"]

_WINDOW = 16 << 20


def refusal(why: str) -> UnsupportedConfigError:
    """The one line every crash-restart prediction refuses with: ``why``, and that the broker's own recovery is
    the way on."""
    return UnsupportedConfigError(f"a 5.x DLedger store whose last shutdown was not clean (abort file; "
                                  f"DLedgerCommitLog.dledgerRecoverAbnormally): {why}; not modelled, let the broker "
                                  "recover")


def checked_windows(st: StoreLocation, seg: Segment, pos: int, config: BrokerConfig, scratch: cl.Scratch, *,
                    check_crc: bool = False,
                    prop_crc: bool = False) -> Iterator[tuple[cl.WalkResult, CheckStop | None, int]]:
    """A message check's walk over one file ``seg`` (a DLedger data file, behind entry headers, or an old commitlog
    file) from position ``pos``, window by window: ``commitlog.walk_range``, then
    :func:`store_format.recovery.check_rows` (``checkMessageAndReturnSize``; with ``check_crc`` the body CRC, with
    ``prop_crc`` the CRC property) on its records.  Yields ``(result, halt, n_ok)`` per window: ``halt`` the first
    record the check refuses (None: none), ``n_ok`` the records before it; the last window is the one with a halt
    or whose walk stopped other than at the window's end (``result.stop``, ``result.state``)."""
    state = cl.WalkState.at_slice_start(pos, seg.size)
    with st.reader(seg) as read:
        while True:
            split_end = min(state.bufpos + _WINDOW, seg.size + 1)
            res = cl.walk_range(read, seg.base, seg.size, state, split_end, config, window=_WINDOW + (1 << 20),
                                keep_text=True, scratch=scratch, dledger=seg.dledger)
            halt, n_ok = check_rows(res, seg, check_crc=check_crc, is_5x=True, prop_crc=prop_crc)
            yield res, halt, n_ok
            if halt is not None or res.stop != cl.Stop.SPLIT_END:
                return
            state = res.state


def walk_after(st: StoreLocation, files: list[Segment], stop: int, log_end: int, last_base: int, reason: str,
               config: BrokerConfig, track: QueueTrack, committed: int) -> tuple[np.ndarray, int]:
    """The consume queue units (rows of :data:`store_format.dledger_queue_track.UNIT_COLUMNS`, queue numbers of
    ``track``) of the records from ``stop``, where the walk's message check failed, to DLedger's log end
    ``log_end``, as the start's reput hands them to the queues when it walks them (``doReput``'s message check:
    ``checkMessageAndReturnSize`` without CRC; a DLedger blank moves it to the next data file), in commitlog order:
    the cut's ``after`` (a batch queue's units numbered from 0 here: the cut numbers them after its queue's), and
    where the reput's dispatch ends before ``log_end`` (-1: it does not).

    A record the reput's check refuses past ``stop`` (a bad magic code, which DLedger's recovery does not read) in a
    data file before the last sends it on to the next data file where :func:`reput_goes_on` says so (the rest of
    that file gets no unit), and in the last ends the units there when :func:`reput_skips` models it.  Where the
    start's reput begins at the committed position past such a record (``committed``, without
    ``recheckReputOffsetFromCq``), it never reads it: the units go on from the committed position.

    Raises:
        UnsupportedConfigError: the reput's check would end elsewhere than the log's end, unless
            :func:`reput_goes_on` or :func:`reput_skips` models where it goes on.
    """
    k = next((n for n, f in enumerate(files) if f.base <= stop < f.end), -1)
    assert k >= 0 and files[k].base == last_base, (stop, last_base)
    alone = config.dledger_group_of_one

    def reads(at: int) -> bool:
        """Whether the start's reput reads the record at ``at``: from the committed position, only at or past it."""
        return config.recheckReputOffsetFromCq or committed <= at
    after = QueueTrack(config.batch_topics)
    scratch = cl.Scratch()
    found: list[np.ndarray] = []
    pos = stop - files[k].base
    while stop < log_end:
        seg = files[k]
        for window in checked_windows(st, seg, pos, config, scratch):
            res, halt, n_ok = window
            after.add(res, n_ok, seg.base)
        at = halt.offset - ENTRY_HEADER_SIZE if halt is not None else \
            seg.end if res.stop == cl.Stop.BLANK else seg.base + res.state.bufpos
        found.append(after.last_file())
        if halt is None and res.stop == cl.Stop.BLANK and k + 1 < len(files):
            k, pos = k + 1, 0
            continue
        if halt is None and res.stop == cl.Stop.BAD and reads(at) and reput_goes_on(files, k, at, committed, alone):
            k, pos = k + 1, 0   # a record it cannot read (size -1): the rest of this data file skipped
            continue
        if (halt is not None or res.stop == cl.Stop.BAD) and not reads(at) and committed < log_end:
            # the reput starts at the committed position, past this record: it reads the records from there
            k = next(n for n, f in enumerate(files) if f.base <= committed < f.end)
            pos = committed - files[k].base
            continue
        break
    rows = np.concatenate(found) if found else np.zeros((0, 5), dtype=np.int64)
    ends = -1
    if found and at != log_end:
        if reads(at):   # else the reput starts past it: never read
            reput_skips(files, k, at, stop, log_end, committed, reason, alone)
            ends = at
    if len(rows):
        ids = np.array([track.queue_id(name) for name in after.names], dtype=np.int64)
        rows[:, U_QUEUE] = ids[rows[:, U_QUEUE]]
    return rows, ends


def reput_goes_on(files: list[Segment], k: int, at: int, committed: int, alone: bool) -> bool:
    """Whether the start's reput, its message check refusing the record at ``at`` in data file ``files[k]``, goes on
    at the next data file's start: ``doReput`` moves ``reputFromOffset`` to the end of the buffer ``getData`` gave
    (``reputFromOffset += result.getSize() - readSize``) and its next call reads on from there.  That buffer is the
    data file's bytes from the reput's position to its read position (the file's size in a data file before the
    last: ``MmapFileList.load`` sets it so and DLedger's recovery moves the last file's only), cut at DLedger's
    committed position when that lies inside (``DLedgerCommitLog.truncate``).  With the committed position at the
    start at or past that file's end, that is the file's end; at or before ``at``, the buffer that reaches ``at`` is
    read once the group committed past it, and in a group of one (``alone``) the leader's first commit is its whole
    log (past this file): the file's end too, so the reput goes on at ``files[k + 1]``, the rest of ``files[k]``
    never dispatched (5.3.3 and 5.5.1 ``ReputMessageService.doReput``, ``DLedgerCommitLog.getData``).  The rebuild's
    walk skips the rest of a data file at a record it cannot read likewise
    (:func:`store_format.reput.next_reput_offset`).  The last data file, a committed position inside this file past
    ``at`` (the buffer ends there or at the file's end: thread timing) or several peers: False
    (:func:`reput_skips`)."""
    return alone and k + 1 < len(files) and (committed <= at or committed >= files[k].end)


def reput_skips(files: list[Segment], k: int, at: int, stop: int, log_end: int, committed: int, reason: str,
                alone: bool) -> None:
    """The start's reput's message check (no CRC) refuses the record at ``at``, in data file ``files[k]``, past the
    walk's end ``stop``, and does not go on at the next data file (:func:`reput_goes_on`):
    ``DefaultMessageStore.ReputMessageService.doReput`` on a DLedger store then moves ``reputFromOffset`` to the end
    of the buffer ``DLedgerCommitLog.getData`` gave (the data file's written end, cut at DLedger's committed
    position), so nothing else in that buffer is dispatched.  With the committed position at the start at or before
    the refused record, the buffer that reaches it is read once the group has committed past it: in a group of one
    (``alone``: one peer in ``dLegerPeers``; none given: not known) the leader's first commit is its whole log
    (``DLedgerEntryPusher.QuorumAckChecker``, its own water mark the quorum), so in the last data file the buffer
    ends at the log's end, and the dispatch ends at ``at`` (modelled: the caller's units end there).

    Raises:
        UnsupportedConfigError: the committed position lies past the record in its data file (whether the buffer
            ends there or at the file's or the log's end depends on whether the reput read it before the group's
            first commit: thread timing), or a group of several peers (the followers' acks set how far each commit
            goes).
    """
    if alone and k == len(files) - 1 and committed <= at and at < log_end <= files[k].end:
        return
    why = "in a group of several peers (where the reput goes on depends on their acks)" if not alone else \
        f"below the committed position {committed} (where the reput goes on depends on the group's first commit)"
    raise refusal(f"its message check ends the walk at {stop} ({reason}), DLedger's recovery the log at {log_end}, "
                  f"and the start's reput's check past it ends at {at}, {why}")
