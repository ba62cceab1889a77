"""The 5.5.1 DLedger crash stores past 2 GiB whose recovery walk dispatches nothing and whose start's reput, set at
2147483647 by the cut, goes on at the end of the data file holding it, the next data file's start, before DLedger's
committed position (``DLEDGER_2GIB=1`` only; ``tests/test_dledger_walked_nothing_2gib_next_file_broker.py``).

``5.5.1-dledger-abort-propcrc-kept-past-2gib-next-file`` (:func:`next_file_scenario`): data files of 100,000,000
bytes; a T9 message, T0 messages (4096-byte bodies of 'x') filling the first 22 data files (2147483647 inside the body
of a T0 entry of the 22nd, a last T0 message of a 2322-byte body leaving it 100 bytes, which DLedger's
``MmapFileList.preAppend`` ends with a blank), then a 23rd data file of a T9 message, :data:`NEXT_T0` T0 messages and
a last T9 message (keys ``K9``); ``forceVerifyPropCRC=true``, the queues kept, T9's queue file planted with a
``fillPreBlank`` unit and the 23rd data file's first T9 unit (queue offset 1), and the checkpoint's
``logicsPhysicalOffset`` set inside the 22nd data file (:data:`CHECKPOINT_AT`), so that the walk starts there
(``isMmapFileMatchedRecover``: the 23rd's first message lies past it) and dispatches nothing: ``processOffset`` is
the 22nd file's start, the cut there leaves T9 with its ``fillPreBlank`` unit only (max 2147483647, the largest) and
T0 its units of the earlier files, and ``doRecheckReputOffsetFromCq`` sets the reput at 2147483647, where
``DLedgerCommitLog``'s check fails on the body's 'x' bytes: ``doReput`` jumps to the end of the bytes ``getData``
hands, the 22nd file's end (its read position: the whole file; DLedger's committed position lies further, in the
23rd), and walks the 23rd file's entries from its start.

``-embedded`` (:func:`next_file_embedded_scenario`): the same with a well-formed T5 message (keys ``E5``) at
2147483647 in that T0 body: the check parses it first, then fails on the 'x' bytes after it; ``-embedded-t0``
(:func:`next_file_embedded_t0_scenario`), a T0 message there, for a queue the store holds files of; ``-roll``
(:func:`next_file_roll_scenario`), DLedger's blank magic there; ``-committed`` (:func:`next_file_committed_scenario`),
DLedger's committed position one entry behind the log's end; ``-ext`` and ``-embedded-t0-ext``
(:func:`next_file_ext_scenario`, :func:`next_file_embedded_t0_ext_scenario`), ``enableConsumeQueueExt=true``.

``-embedded-t0-past-end`` (:func:`next_file_embedded_t0_past_end_scenario`), ``-embedded-t0-past-all`` and
``-embedded-t0-past-end-ext``: the T0 message's PHYSICALOFFSET field set so that its unit ends past the 22nd file's
end (``tests/test_dledger_walked_nothing_2gib_next_file_past_broker.py``).  ``-committed-in-file``
(:func:`next_file_committed_in_file_scenario`), DLedger's committed position inside the 22nd file past 2147483647;
``-to-entry`` (:func:`next_file_to_entry_scenario`), a T5 message from 2147483647 to the T0 record's end, so that the
check meets the next entry's start after parsing it, and ``-to-entry-t0-past``, that message for T0 with a unit
ending past that entry, and its ``-ext`` (``tests/test_dledger_walked_nothing_2gib_in_file_broker.py``).
"""
from __future__ import annotations

import base64
import struct

from broker_dledger_2gib import (
    EMBED_AT_BODY_DATA,
    EMBED_T0_DATA,
    PAST_2GIB_FILLER,
    PAST_2GIB_FULL,
    T0_TAIL,
    entry_bound_message,
    retargeted,
    with_embedded_message,
)
from broker_dledger_scenarios import (
    NO_FORCED_CLEAN,
    PAST_2GIB_BATCH,
    PAST_2GIB_FILE,
    THOROUGH_CHECKPOINT,
    config,
)
from broker_dledger_walked_nothing_inside_scenarios import PAST_2GIB_T9_FILE, PROP

from store_format.dledger import ENTRY_BLANK_MAGIC, ENTRY_HEADER_SIZE

NEXT_FILE = 22 * PAST_2GIB_FILE   # the 23rd data file's start: the 22nd's end
NEXT_T0 = 20                      # the T0 messages of the 23rd data file
CHECKPOINT_AT = 21 * PAST_2GIB_FILE + 50_000_000   # logicsPhysicalOffset: inside the 22nd data file
T9_RECORD, T9_SIZE = 193, 241     # a T9 message's record and entry (100-byte body)
LAST_T9_RECORD = T9_RECORD + len(b"KEYS\x01K9\x02")   # the last T9 message's record (keys K9)
T0_ENTRY = 4237                   # a T0 entry (4096-byte body)
NEXT_T9 = NEXT_FILE + ENTRY_HEADER_SIZE   # the 23rd file's first T9 record (queue offset 1)
LAST_T9 = NEXT_FILE + T9_SIZE + NEXT_T0 * T0_ENTRY + ENTRY_HEADER_SIZE   # the last T9 record (queue offset 2)


def next_file_scenario(line: str = "5.5.1") -> dict:
    """``<line>-dledger-abort-propcrc-kept-past-2gib-next-file``: above."""
    conf = {**config(line), **THOROUGH_CHECKPOINT, **NO_FORCED_CLEAN, **PROP,
            "mappedFileSizeCommitLog": str(PAST_2GIB_FILE), "mappedFileSizeConsumeQueue": "6000000",
            "maxIndexNum": "4000"}
    messages: list[dict] = [{"topic": "T9", "queueId": 0, "bodySize": 100}]
    for k in range(0, PAST_2GIB_FULL, PAST_2GIB_BATCH):
        messages.append({"topic": "T0", "queueId": 0,
                         "batch": [{"bodySize": 4096}] * min(PAST_2GIB_BATCH, PAST_2GIB_FULL - k)})
    messages.append({"topic": "T0", "queueId": 0, "bodySize": PAST_2GIB_FILLER})
    messages.append({"topic": "T9", "queueId": 0, "bodySize": 100})
    messages.append({"topic": "T0", "queueId": 0, "batch": [{"bodySize": 4096}] * NEXT_T0})
    messages.append({"topic": "T9", "queueId": 0, "bodySize": 100, "keys": "K9"})
    t9 = bytes(8) + struct.pack(">i", 2**31 - 1) + bytes(8) + struct.pack(">qiq", NEXT_T9, T9_RECORD, 0)
    plant = {f"consumequeue/T9/0/{0:020d}": base64.b64encode(t9 + bytes(PAST_2GIB_T9_FILE - len(t9))).decode()}
    return {"config": conf, "messages": messages, "abort": True, "keepQueues": True, "plantFiles": plant,
            "checkpointLogicsPhysicalOffset": {"set": CHECKPOINT_AT},
            "name": f"{line}-dledger-abort-propcrc-kept-past-2gib-next-file"}


def next_file_embedded_scenario(line: str = "5.5.1") -> dict:
    """``<line>-dledger-abort-propcrc-kept-past-2gib-next-file-embedded``: above."""
    sc = next_file_scenario(line)
    return with_embedded_message(sc, EMBED_T0_DATA, EMBED_AT_BODY_DATA, f"{sc['name']}-embedded")


def next_file_roll_scenario(line: str = "5.5.1") -> dict:
    """``<line>-dledger-abort-propcrc-kept-past-2gib-next-file-roll``: :func:`next_file_scenario` whose T0 body holds
    DLedger's blank magic (``MmapFileList.BLANK_MAGIC_CODE``, -1) at 2147483647, 'x' bytes after it: the check there
    gives size 0 (success) and ``doReput`` rolls to the next data file (``DLedgerCommitLog.rollNextFile``)."""
    sc = next_file_scenario(line)
    return with_embedded_message(sc, EMBED_T0_DATA, EMBED_AT_BODY_DATA, f"{sc['name']}-roll",
                                 msg=struct.pack(">i", ENTRY_BLANK_MAGIC))


def next_file_committed_scenario(line: str = "5.5.1") -> dict:
    """``<line>-dledger-abort-propcrc-kept-past-2gib-next-file-committed``: :func:`next_file_scenario` with DLedger's
    checkpoint one entry behind the log's end (its committed position the last T9 entry's start, in the 23rd data
    file): the jump still goes to the 22nd file's end, and the reput walks the 23rd file up to that position."""
    sc = next_file_scenario(line)
    return {**sc, "dledgerCommittedBack": 1, "name": f"{sc['name']}-committed"}


EMBEDDED_T0_QUEUE_OFFSET = 600_000   # -embedded-t0: past T0's write position after the cut (495621 units)


def next_file_embedded_t0_scenario(line: str = "5.5.1") -> dict:
    """``<line>-dledger-abort-propcrc-kept-past-2gib-next-file-embedded-t0``: :func:`next_file_scenario` with a
    well-formed T0 message (:func:`broker_dledger_2gib.retargeted`: queue offset
    :data:`EMBEDDED_T0_QUEUE_OFFSET`, PHYSICALOFFSET field 2147483647, keys ``E5``) at 2147483647: the check parses
    it and ``putMessagePositionInfo`` appends its unit to T0, a queue the store holds files of, at the write position
    the cut left, before the next data file's T0 units."""
    sc = next_file_scenario(line)
    return with_embedded_message(sc, EMBED_T0_DATA, EMBED_AT_BODY_DATA, f"{sc['name']}-embedded-t0",
                                 retargeted(2**31 - 1, b"T0", EMBEDDED_T0_QUEUE_OFFSET))


def next_file_ext_scenario(line: str = "5.5.1") -> dict:
    """``<line>-dledger-abort-propcrc-kept-past-2gib-next-file-ext``: :func:`next_file_scenario` with
    ``enableConsumeQueueExt=true`` (default ext file size)."""
    sc = next_file_scenario(line)
    return {**sc, "config": {**sc["config"], "enableConsumeQueueExt": "true"}, "name": f"{sc['name']}-ext"}


def next_file_embedded_t0_ext_scenario(line: str = "5.5.1") -> dict:
    """``<line>-dledger-abort-propcrc-kept-past-2gib-next-file-embedded-t0-ext``: :func:`next_file_embedded_t0_scenario`
    with ``enableConsumeQueueExt=true``."""
    sc = next_file_embedded_t0_scenario(line)
    return {**sc, "config": {**sc["config"], "enableConsumeQueueExt": "true"}, "name": f"{sc['name']}-ext"}


PAST_END_DROPPED = 5   # -embedded-t0-past-end: the 23rd data file's first T0 units the parsed unit's max drops
FIRST_NEXT_T0 = NEXT_FILE + T9_SIZE + ENTRY_HEADER_SIZE   # the 23rd data file's first T0 record


def past_end_field(dropped: int = PAST_END_DROPPED) -> int:
    """The PHYSICALOFFSET field that makes :func:`next_file_embedded_t0_scenario`'s T0 message's unit end exactly
    where the 23rd data file's ``dropped``-th T0 unit ends (its record's end: ``putMessagePositionInfo`` drops a unit
    ending at or below the queue's max)."""
    size = len(retargeted(0, b"T0", 0))
    return FIRST_NEXT_T0 + (dropped - 1) * T0_ENTRY + (T0_ENTRY - ENTRY_HEADER_SIZE) - size


def next_file_embedded_t0_past_end_scenario(line: str = "5.5.1", field: int | None = None,
                                            suffix: str = "past-end") -> dict:
    """``<line>-dledger-abort-propcrc-kept-past-2gib-next-file-embedded-t0-past-end``:
    :func:`next_file_embedded_t0_scenario` whose T0 message's PHYSICALOFFSET field (the unit's offset, which the
    check does not compare with where the message lies) is :func:`past_end_field`: its unit, appended at T0's write
    position, ends past the 22nd data file's end, at the end of the 23rd file's :data:`PAST_END_DROPPED`-th T0 unit;
    ``field``, ``suffix``: another field and name."""
    sc = next_file_scenario(line)
    at = past_end_field() if field is None else field
    return with_embedded_message(sc, EMBED_T0_DATA, EMBED_AT_BODY_DATA, f"{sc['name']}-embedded-t0-{suffix}",
                                 retargeted(at, b"T0", EMBEDDED_T0_QUEUE_OFFSET))


def next_file_embedded_t0_past_all_scenario(line: str = "5.5.1") -> dict:
    """``<line>-dledger-abort-propcrc-kept-past-2gib-next-file-embedded-t0-past-all``: the same with the field one byte
    past the last T9 record's start: the unit ends past every T0 unit of the 23rd data file, and its keys ``E5`` leave
    the index's ``endPhyOffset`` past the last T9 record's (keys ``K9``)."""
    return next_file_embedded_t0_past_end_scenario(line, LAST_T9 + 1, "past-all")


def next_file_embedded_t0_past_end_ext_scenario(line: str = "5.5.1") -> dict:
    """``<line>-dledger-abort-propcrc-kept-past-2gib-next-file-embedded-t0-past-end-ext``:
    :func:`next_file_embedded_t0_past_end_scenario` with ``enableConsumeQueueExt=true``."""
    sc = next_file_embedded_t0_past_end_scenario(line)
    return {**sc, "config": {**sc["config"], "enableConsumeQueueExt": "true"}, "name": f"{sc['name']}-ext"}


IN_FILE_BACK = 100   # -committed-in-file: DLedger's committed position that many entries before the 22nd file's end


def next_file_committed_in_file_scenario(line: str = "5.5.1") -> dict:
    """``<line>-dledger-abort-propcrc-kept-past-2gib-next-file-committed-in-file``: :func:`next_file_scenario` with
    DLedger's checkpoint :data:`IN_FILE_BACK` entries before the 22nd data file's last one (the 23rd file's
    ``NEXT_T0 + 2`` entries further back): its committed position inside the 22nd file, past 2147483647, where
    ``getData`` cuts the bytes it hands (``truncate``)."""
    sc = next_file_scenario(line)
    return {**sc, "dledgerCommittedBack": NEXT_T0 + 2 + IN_FILE_BACK, "name": f"{sc['name']}-committed-in-file"}


TO_ENTRY_DROPPED = 3   # -to-entry-t0-past: the T0 units from the entry the reput goes on at that its max drops


def to_entry_message(field: int, topic: bytes = b"T5", queue_offset: int = 0) -> bytes:
    """:func:`broker_dledger_2gib.entry_bound_message` (keys ``E5``; it ends where the entry after the T0 entry holding
    2147483647 starts) with its PHYSICALOFFSET field ``field``, another two-letter topic and queue offset."""
    msg = bytearray(entry_bound_message(field))
    at = 88 + int.from_bytes(msg[84:88], "big") + 1   # the topic, after the header, the body and its length byte
    assert msg[at:at + 2] == b"T5" and len(topic) == 2
    msg[at:at + 2], msg[20:28] = topic, queue_offset.to_bytes(8, "big")
    return bytes(msg)


def next_file_to_entry_scenario(line: str = "5.5.1", msg: bytes | None = None, suffix: str = "to-entry") -> dict:
    """``<line>-dledger-abort-propcrc-kept-past-2gib-next-file-to-entry``: :func:`next_file_scenario` whose T0 body
    holding 2147483647 holds from there to its end a well-formed T5 message (:func:`to_entry_message`, its
    PHYSICALOFFSET field 2147483647) whose last bytes are the T0 record's tail: the check parses it, then meets the
    next T0 entry's start, from which the reput walks the entries; ``msg``, ``suffix``: another message, name."""
    sc = next_file_scenario(line)
    msg = to_entry_message(2**31 - 1) if msg is None else msg
    return with_embedded_message(sc, EMBED_T0_DATA, EMBED_AT_BODY_DATA, f"{sc['name']}-{suffix}",
                                 msg[:-len(T0_TAIL)])


def to_entry_t0_field(dropped: int = TO_ENTRY_DROPPED) -> int:
    """The PHYSICALOFFSET field that makes the T0 :func:`to_entry_message` end exactly where the ``dropped``-th T0
    record from the entry it ends at ends."""
    first = 2**31 - 1 + len(to_entry_message(0)) + ENTRY_HEADER_SIZE   # that entry's record
    return first + (dropped - 1) * T0_ENTRY + (T0_ENTRY - ENTRY_HEADER_SIZE) - len(to_entry_message(0))


def next_file_to_entry_t0_past_scenario(line: str = "5.5.1") -> dict:
    """``<line>-dledger-abort-propcrc-kept-past-2gib-next-file-to-entry-t0-past``: :func:`next_file_to_entry_scenario`
    with a T0 message (queue offset :data:`EMBEDDED_T0_QUEUE_OFFSET`) whose unit, appended at T0's write position,
    ends past the entry it ends at, where the :data:`TO_ENTRY_DROPPED`-th T0 record from there ends
    (:func:`to_entry_t0_field`)."""
    return next_file_to_entry_scenario(line, to_entry_message(to_entry_t0_field(), b"T0", EMBEDDED_T0_QUEUE_OFFSET),
                                       "to-entry-t0-past")


def next_file_to_entry_t0_past_ext_scenario(line: str = "5.5.1") -> dict:
    """``<line>-dledger-abort-propcrc-kept-past-2gib-next-file-to-entry-t0-past-ext``:
    :func:`next_file_to_entry_t0_past_scenario` with ``enableConsumeQueueExt=true``."""
    sc = next_file_to_entry_t0_past_scenario(line)
    return {**sc, "config": {**sc["config"], "enableConsumeQueueExt": "true"}, "name": f"{sc['name']}-ext"}
