"""5.x ``ConcurrentReputMessageService`` over a record its pre-check accepts but the batch parse cannot read.

Mirrors, in ``DefaultMessageStore`` (rocketmq-all-5.3.3 and the rocketmq-store 5.5.1 sources: the same code),
``ConcurrentReputMessageService.doReput`` with ``preCheckMessageAndReturnSize`` and
``createBatchDispatchRequest``, the task ``MainBatchDispatchRequestService.pollBatchDispatchRequest`` hands
its executor, and ``CommitLog.checkMessageAndReturnSize(buffer, false, false, false)`` as that task calls it.

The reput takes one file's readable slice (``CommitLog.getData``; from the file's start on a reput from the
commitlog's min offset) and walks it by the totalSize the pre-check reads (the header only), gathering the
records into batches: a batch is handed over once its size passes 4 MiB (``BATCH_SIZE``, the record that
passes it included), and when the walk ends.  A damaged record with a record's magic code and a positive
totalSize within the data is taken into a batch as if whole; the walk then reads whatever lies that many
bytes further on.  Each batch's task parses its bytes again, record after record, until none are left; a
record it cannot read leaves the buffer wherever that parse stopped (after the fields read, or before the
one that did not fit) and the next parse starts there.  Two ends are possible for a batch holding the damage:

* the parses use up the batch exactly: the task puts what it read into the orderly queue and
  ``DispatchService`` dispatches it in batch order;
* a parse meets 1 to 4 bytes left (``remaining() <= 4`` returns -1 without reading: the loop never ends),
  or the batch runs past the slice (``limit`` throws, and the task's catch leaves ``mappedPageHoldCount``
  up): the task never puts its requests, ``DispatchService`` waits for that batch for ever, and the reput
  thread waits in ``doReput``'s ``finally`` for ever.  Nothing of this batch or any later one is dispatched.

The walk and the parses are functions of the bytes, not of the threads: the reput waits for every batch of a
slice before the next slice, and the batches are dispatched in their order.  :func:`damaged_batch_outcome`
follows them over the damaged bytes.  A successful request a parse makes inside the damaged bytes (a whole
record read there, or a blank's magic code: ``DispatchRequest(0, true)``) moves the buffer as any parse does, so
it matters only when its task ends: a task that never ends dispatches nothing, whatever it read, while the
ended tasks of the batches before it have theirs dispatched (``DispatchRequestOrderlyQueue.get`` hands the
batches over in order up to the first one not put).  Likewise a
pre-check walk that goes on past the damage into the next file (a blank or a zero totalSize read there, or the
slice's end reached) matters only when every task ends: the reput thread waits in ``doReput``'s ``finally`` for
a task that never ends before it reads the next file.  A task that ends dispatches the records it read whole
(:attr:`BatchOutcome.read_whole`: after a size mismatch its parse goes on at the record's structural end, as the
sequential reput does) and each blank's empty request (:attr:`BatchOutcome.empty_request`, the first, and
:attr:`BatchOutcome.empty_requests`: ``DispatchService`` hands it to ``doDispatch`` like any other: what the
dispatchers do with it is :func:`store_format.concurrent_reput.empty_request_files`'s);
where every task ends and the pre-check's walk went on, the reput goes on at the next file's start
(:attr:`BatchOutcome.resume`).  Not followed (:class:`NotFollowed`, a one-line reason): for 5.5.1 only, a field
longer than its record's totalSize: 5.5.1 reads into a buffer each executor thread keeps
(``borrowCheckMessageBuffer``), as long as the longest record that thread read before, so whether the read fits
depends on which thread got which batch.
"""
from __future__ import annotations

import dataclasses

import numba
import numpy as np

from .layout import MAGIC_BLANK, MAGIC_V1, MAGIC_V2, SYSFLAG_BORNHOST_V6, SYSFLAG_STOREHOST_V6

__all__ = ["BATCH_SIZE", "BatchOutcome", "NotFollowed", "PreCheck", "batch_spans", "damaged_batch_outcome",
           "pre_check"]

BATCH_SIZE = 4 * 1024 * 1024   # ConcurrentReputMessageService.BATCH_SIZE

# the task's scan (_scan): how it stopped
_DONE, _HANGS, _CANDIDATE, _BLANK = 0, 1, 2, 3


class NotFollowed(Exception):
    """What the damaged bytes make the concurrent reput do is not followed here: the reason."""


@dataclasses.dataclass(frozen=True)
class PreCheck:
    """``ConcurrentReputMessageService.preCheckMessageAndReturnSize`` at one record, and what ``doReput`` does
    with its answer.  ``how``:

    * ``"accepts"``: a record's magic code and a positive totalSize within the data: the record goes into the
      open batch and the walk moves by ``total``;
    * ``"rolls"``: 0 (a blank's magic code, or a record's with totalSize 0): ``rollNextFile``;
    * ``"cut"``: the slice ends inside the header (fewer than 4 bytes, or fewer than 8 with a totalSize within
      the data): ``getInt`` throws out of ``doReput``, whose caller calls it again at the same offset;
    * ``"past_end"``: ``reputFromOffset + totalSize`` passes ``getConfirmOffset()``: -1;
    * ``"illegal_magic"``: neither a record's (V1, V2) nor a blank's magic code: -1;
    * ``"negative"``: a record's magic code and a negative totalSize, which ``doReput`` takes as -1.

    The last four leave ``reputFromOffset`` at the record for good (:attr:`stays`).  ``total`` and ``magic``:
    what was read (None: not read)."""
    how: str
    total: int | None
    magic: int | None

    @property
    def stays(self) -> bool:
        return self.how not in ("accepts", "rolls")


def pre_check(head: bytes, at: int, confirm: int) -> PreCheck:
    """``preCheckMessageAndReturnSize`` over ``head`` (the slice's bytes at commitlog offset ``at``, at most 8:
    fewer where the slice ends) with ``getConfirmOffset()`` = ``confirm``, read in its order: totalSize, the
    check against the confirm offset, the magic code.  The one place for the pre-check's rule, read by the
    first damaged record's classification (:func:`store_format.concurrent_reput.concurrent_reput_stop`) and by
    the walk over the damaged bytes (:func:`damaged_batch_outcome`)."""
    if len(head) < 4:
        return PreCheck("cut", None, None)
    total = int.from_bytes(head[:4], "big", signed=True)
    if at + total > confirm:
        return PreCheck("past_end", total, None)
    if len(head) < 8:
        return PreCheck("cut", total, None)
    magic = int.from_bytes(head[4:8], "big", signed=True)
    if magic == MAGIC_BLANK:
        return PreCheck("rolls", total, magic)
    if magic not in (MAGIC_V1, MAGIC_V2):
        return PreCheck("illegal_magic", total, magic)
    return PreCheck("accepts" if total > 0 else "rolls" if total == 0 else "negative", total, magic)


@dataclasses.dataclass(frozen=True)
class BatchOutcome:
    """Where the concurrent reput ends on a damaged file: records before ``cut`` (a commitlog offset) are
    dispatched, none at or after it; ``stood`` is where ``reputFromOffset`` stays; ``hung``: the batch
    (commitlog offset, size) whose task never ends, or None when every task ended; ``read_whole``: the records
    (commitlog offset, length) the ended tasks' parses read whole inside the damaged bytes, which are
    dispatched (the records before ``cut`` past the damaged one must be exactly these); ``empty_request``: the
    slice position where an ended task's parse read a blank's magic code first (a ``DispatchRequest(0, true)``
    dispatched; None: none); ``resume``: where the reput goes on when every task ended and the pre-check's walk
    went on into the next file (its start; None: it stays at ``stood`` for good); ``parsed_to``: where the last
    batch holding damaged bytes whose task is dispatched ends (the end of the slice the tasks parsed: a commitlog
    offset; where a later batch's task never ends, that batch's start, the ended ones' requests dispatched)."""
    cut: int
    stood: int
    hung: tuple[int, int] | None
    read_whole: tuple[tuple[int, int], ...] = ()
    empty_request: int | None = None
    resume: int | None = None
    parsed_to: int | None = None
    # how many blanks' magic codes the ended tasks read (each an empty request dispatched), and where the last
    # one is (a commitlog offset; None: none)
    empty_requests: int = 0
    last_empty_request: int | None = None


def batch_spans(sizes: np.ndarray, start: int) -> tuple[list[tuple[int, int]], int, int]:
    """The batches ``doReput`` hands over while walking whole records of ``sizes`` bytes from slice position
    ``start``: ``(position, size)`` each, and the open batch left (position, size; -1, -1 when none)."""
    spans: list[tuple[int, int]] = []
    ends = np.cumsum(np.asarray(sizes, dtype=np.int64))
    first, base = 0, 0
    while first < len(ends):
        over = int(np.searchsorted(ends, base + BATCH_SIZE, side="right"))  # first record passing the size
        if over >= len(ends):
            return spans, start + base, int(ends[-1]) - base
        spans.append((start + base, int(ends[over]) - base))
        first, base = over + 1, int(ends[over])
    return spans, -1, -1


def _i32(b: np.ndarray, p: int) -> int:
    v = (int(b[p]) << 24) | (int(b[p + 1]) << 16) | (int(b[p + 2]) << 8) | int(b[p + 3])
    return v - (1 << 32) if v >= 1 << 31 else v


@numba.njit(cache=True, nogil=True)
def _be32(b: np.ndarray, p: int) -> np.int64:
    v = (np.int64(b[p]) << 24) | (np.int64(b[p + 1]) << 16) | (np.int64(b[p + 2]) << 8) | np.int64(b[p + 3])
    return v - (np.int64(1) << 32) if v >= (np.int64(1) << 31) else v


@numba.njit(cache=True, nogil=True)
def _scan(b: np.ndarray, pos: int, lim: int, negative_rejected: bool, v1: int, v2: int,
          blank: int) -> tuple[int, int, np.int64]:
    """The task's loop from ``pos`` to ``lim`` over headers that are no readable record: each
    ``checkMessageAndReturnSize`` that gives -1 from its first two reads.  Returns (how it stopped, the
    buffer position, the last totalSize read); stops at a header with a record's magic code (``_CANDIDATE``:
    the buffer after the magic code) or a blank's (``_BLANK``)."""
    while True:
        rem = lim - pos
        if rem == 0:
            return _DONE, pos, np.int64(0)
        if rem <= 4:
            return _HANGS, pos, np.int64(0)
        total = _be32(b, pos)
        pos += 4
        if negative_rejected and total < 0:       # 5.5.1: totalSize < 0 gives -1 after the first read
            continue
        need = total - 4
        if need < -(np.int64(1) << 31):           # int overflow of totalSize - 4
            need += np.int64(1) << 32
        if rem - 4 < need:
            continue
        if rem - 4 < 4:                            # getInt throws: caught, -1, the buffer where it was
            continue
        magic = _be32(b, pos)
        pos += 4
        if magic == blank:
            return _BLANK, pos, total
        if magic == v1 or magic == v2:
            return _CANDIDATE, pos, total


class _Thrown(Exception):
    """An exception inside ``checkMessageAndReturnSize``: caught there, -1, the buffer where the read failed."""


class _Parse:
    """The rest of one ``checkMessageAndReturnSize`` after a record's magic code, over ``b`` up to ``lim``."""

    def __init__(self, b: np.ndarray, pos: int, lim: int, total: int, v551: bool) -> None:
        self.b, self.pos, self.lim, self.total, self.v551 = b, pos, lim, total, v551

    def num(self, n: int, signed: bool = True) -> int:
        if self.lim - self.pos < n:
            raise _Thrown
        v = int.from_bytes(self.b[self.pos:self.pos + n].tobytes(), "big", signed=signed)
        self.pos += n
        return v

    def into_content(self, n: int) -> None:
        """``get(bytesContent, 0, n)``: throws for a negative n, for n past the buffer's remaining bytes, and
        for n past the array (5.3.3: ``new byte[totalSize]``; 5.5.1: a per-thread array at least that long)."""
        if n < 0 or n > self.lim - self.pos:
            raise _Thrown
        if n > self.total:
            if self.v551:
                raise NotFollowed(f"a field of {n} bytes in a record whose totalSize says {self.total}: 5.5.1 "
                                  "reads it into the executor thread's reused buffer, whose length depends on "
                                  "which records that thread read before")
            raise _Thrown
        self.pos += n

    def run(self, v2: bool) -> int:
        """The parse; returns the length its fields give (``MessageExtEncoder.calMsgLength``)."""
        if self.total < 0:                       # 5.3.3: new byte[totalSize] throws
            raise _Thrown
        self.num(4), self.num(4), self.num(4), self.num(8), self.num(8)   # bodyCRC queueId flag qOffset phys
        sys_flag = self.num(4)
        self.num(8)
        born = 20 if sys_flag & SYSFLAG_BORNHOST_V6 else 8
        self.into_content(born)
        self.num(8)
        store = 20 if sys_flag & SYSFLAG_STOREHOST_V6 else 8
        self.into_content(store)
        self.num(4), self.num(8)
        body = self.num(4)
        if body > 0:
            if self.pos + body > self.lim:      # position(newPosition) throws
                raise _Thrown
            self.pos += body
        topic = self.num(2) if v2 else self.num(1)
        self.into_content(topic)
        props = self.num(2)
        if props > 0:
            self.into_content(props)
        length = (4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + born + 8 + store + 4 + 8 + 4 + max(body, 0)
                  + (2 if v2 else 1) + topic + 2 + max(props, 0))
        return ((length + (1 << 31)) % (1 << 32)) - (1 << 31)


def _task(b: np.ndarray, origin: int, pos: int, lim: int,
          v551: bool) -> tuple[bool, list[tuple[int, int]], list[int]]:
    """The batch task's loop over ``b`` (slice bytes from slice position ``origin``) from ``pos`` to ``lim``
    (slice positions): whether it ends (False: it never does), the records its parses read whole (slice
    position, length), and the slice positions of the blanks' magic codes they met (each a successful empty
    request, ``DispatchRequest(0, true)``).  Either moves the buffer as any parse does, so whether the loop
    ends does not depend on what is done with them; they are dispatched only if the task ends."""
    whole: list[tuple[int, int]] = []
    blanks: list[int] = []
    while True:
        how, at, total = _scan(b, pos - origin, lim - origin, v551, MAGIC_V1, MAGIC_V2, MAGIC_BLANK)
        pos = origin + int(at)
        if how == _DONE:
            return True, whole, blanks
        if how == _HANGS:
            return False, whole, blanks
        if how == _BLANK:
            blanks.append(pos - 8)
            continue
        parse = _Parse(b, pos - origin, lim - origin, int(total), v551)
        v2 = _i32(b, pos - 4 - origin) == MAGIC_V2
        try:
            length = parse.run(v2)
        except _Thrown:
            pos = origin + parse.pos
            continue
        pos = origin + parse.pos
        if length == total:
            whole.append((pos - int(total), int(total)))
        # else a size mismatch: "[BUG]" logged, the next parse from where this one stopped


def damaged_batch_outcome(read, seg_base: int, slice_start: int, slice_end: int, sizes: np.ndarray,  # noqa: ANN001
                          damaged: int, confirm: int, v551: bool, file_size: int) -> BatchOutcome:
    """What the concurrent reput does with the slice ``[slice_start, slice_end)`` (segment positions) of the
    segment at ``seg_base`` whose whole records before segment position ``damaged`` are ``sizes`` long, the
    record at ``damaged`` being one the pre-check accepts (a record's magic code, a positive totalSize not
    past ``confirm``, ``getConfirmOffset()``).  ``read(pos, n)``: the segment's bytes; ``file_size``:
    ``mappedFileSizeCommitLog`` (``rollNextFile``).

    Raises:
        NotFollowed: a case the module docstring lists, with the reason.
    """
    spans, start, size = batch_spans(sizes, slice_start)
    p = damaged
    stood: int | None = None
    onward = False                 # the pre-check's walk ends by going on in the next file
    while stood is None:
        if seg_base + p >= confirm:              # reputFromOffset < getReputEndOffset() no longer holds
            stood = p
            break
        if p >= slice_end:                       # readSize reaches the slice's size: getData at the next file
            onward, stood = True, slice_end
            break
        check = pre_check(bytes(read(p, min(8, slice_end - p))), seg_base + p, confirm)
        if check.stays:                          # -1, or getInt throws and the next doReput at the same offset
            stood = p
            break
        if check.how == "rolls":                 # rollNextFile: the next file's start
            onward = True
            stood = p + file_size - (seg_base + p) % file_size
            break
        assert check.total is not None
        total = check.total
        if start < 0:
            start, size = p, 0
        size += total
        if size > BATCH_SIZE:
            spans.append((start, size))
            start, size = -1, -1
        if p + total > slice_end:                # position(newPosition) throws: doReput's finally hands over
            stood = p                            # the batch, whose task's limit() throws in turn
            break
        p += total
    assert stood is not None
    if start >= 0:
        spans.append((start, size))
    held = [s for s in spans if s[0] + s[1] > damaged]
    end = min(max(s[0] + s[1] for s in held), slice_end) if held else damaged
    data = np.frombuffer(bytes(read(damaged, end - damaged)), dtype=np.uint8) if end > damaged else \
        np.zeros(0, dtype=np.uint8)
    read_whole: list[tuple[int, int]] = []
    empty: list[int] = []
    for first, length in held:
        ends, whole, blanks = (False, [], []) if first + length > slice_end else \
            _task(data, damaged, max(first, damaged), first + length, v551)
        if not ends:   # doReput's finally waits for this batch for ever: the reput never leaves this file
            return _hung(seg_base, damaged, stood, (first, length), read_whole, empty)
        empty += blanks
        read_whole += whole
    cut = read_whole[-1][0] + read_whole[-1][1] if read_whole else damaged
    return BatchOutcome(seg_base + cut, seg_base + stood, None, tuple((seg_base + p, n) for p, n in read_whole),
                        seg_base + empty[0] if empty else None, seg_base + stood if onward else None,
                        seg_base + end, len(empty), seg_base + empty[-1] if empty else None)


def _hung(seg_base: int, damaged: int, stood: int, batch: tuple[int, int], read_whole: list[tuple[int, int]],
          empty: list[int]) -> BatchOutcome:
    """The outcome where the task of ``batch`` (slice position, size) never ends.  ``DispatchService`` takes the
    batches from ``DispatchRequestOrderlyQueue.get`` in their order, up to the first one not put: those before
    ``batch`` are dispatched, whatever follows.  Where ``batch`` holds the damaged record, nothing from its start
    on is; where it is a later one, the ended tasks before it dispatched ``read_whole`` and the empty requests of
    ``empty`` (slice positions of the blanks' magic codes), all before its start, where their walk ends
    (``parsed_to``: their last batch ends there, the slice they parsed)."""
    first, length = batch
    whole = tuple((seg_base + p, n) for p, n in read_whole)
    if first <= damaged:
        return BatchOutcome(seg_base + first, seg_base + stood, (seg_base + first, length), whole)
    cut = read_whole[-1][0] + read_whole[-1][1] if read_whole else damaged
    return BatchOutcome(seg_base + cut, seg_base + stood, (seg_base + first, length), whole,
                        seg_base + empty[0] if empty else None, None, seg_base + first, len(empty),
                        seg_base + empty[-1] if empty else None)
