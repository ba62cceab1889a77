"""Where a 5.5.1 DLedger broker's start's reput set at 2147483647 inside an old commitlog file goes on from
(:func:`store_format.dledger_crash_old.reput_inside_old_file`), on old files' bytes built here, as read from the
5.5.1 source (``DLedgerCommitLog.getData`` below ``dividedCommitlogOffset``: the base ``CommitLog``'s, the file's bytes
to its end; ``DLedgerCommitLog.checkMessageAndReturnSize``; ``ReputMessageService.doReput``'s jump to the end of
those bytes on size -1, ``rollNextFile`` on size 0).  The body case is checked against the broker in
``tests/test_dledger_2gib_broker.py`` (``DLEDGER_2GIB_CONVERTED=1``); these are the other branches, source only."""
from __future__ import annotations

from store_format.dledger_crash_old import reput_inside_old_file
from store_format.layout import MAGIC_BLANK, MAGIC_V1

SIZE = 100_000_000
BASE = 21 * SIZE          # the old file holding 2147483647
POS = 2**31 - 1
END = BASE + SIZE


def _file(at_pos: bytes) -> bytes:
    """The old file's bytes around ``POS``: 'x' body bytes, ``at_pos`` written at ``POS``."""
    data = bytearray(b"x" * (POS - BASE + 4096))
    data[POS - BASE:POS - BASE + len(at_pos)] = at_pos
    return bytes(data)


def _gone_on(data: bytes, pos: int = POS) -> int:
    def read(at: int, n: int) -> bytes:
        return data[at - BASE:at - BASE + n]
    gone_on, records = reput_inside_old_file(read, pos, file_base=BASE, file_size=SIZE, v55=True)
    assert not records, records
    return gone_on


def _i32(v: int) -> bytes:
    return v.to_bytes(4, "big", signed=True)


def test_inside_a_body_the_reput_jumps_to_the_old_files_end():
    # neither int is a magic code: the base check 48 bytes further reads a total size ('xxxx') past the bytes
    assert _gone_on(_file(b"")) == END


def test_on_dledgers_blank_magic_it_rolls_to_the_next_file():
    assert _gone_on(_file(_i32(-1) + b"\x00" * 60)) == END


def test_a_commitlog_blank_there_rolls_to_the_next_file():
    # the second int a blank's magic code: the base check right there, a blank: size 0, rollNextFile
    assert _gone_on(_file(_i32(64) + _i32(MAGIC_BLANK))) == END


def test_fewer_than_eight_bytes_left_jump_to_the_files_end():
    data = bytes(SIZE)
    assert _gone_on(data, BASE + SIZE - 3) == END


def test_a_message_there_is_dispatched_then_the_reput_jumps_to_the_old_files_end():
    # a message's total size and magic code: the base check parses (dispatches) a message from there, then checks
    # on at its end, in the 'x' bytes: the base check 48 bytes further reads a total size past the bytes, a jump
    data = _file(_i32(300) + _i32(MAGIC_V1))
    got = reput_inside_old_file(lambda at, n: data[at - BASE:at - BASE + n], POS, file_base=BASE, file_size=SIZE,
                                v55=True)
    assert got == (END, ((POS, POS + 300),))


def test_a_message_48_bytes_further_is_dispatched_then_the_reput_jumps_to_the_old_files_end():
    # neither int there a magic code nor DLedger's blank: the base check 48 bytes further parses a message there (the
    # request's bufferSize its size + 48), dispatched, then checks on at its end in the 'x' bytes: a jump
    data = _file(b"x" * 48 + _i32(300) + _i32(MAGIC_V1))
    got = reput_inside_old_file(lambda at, n: data[at - BASE:at - BASE + n], POS, file_base=BASE, file_size=SIZE,
                                v55=True)
    assert got == (END, ((POS + 48, POS + 348),))
