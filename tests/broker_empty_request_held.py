"""The stores of :mod:`test_empty_request_held_broker`: the small DLedger crash store whose start's reput, set
inside an entry (processOffset - 1), dispatches a blank's empty request (``-emptied-batch-embedded-blank-48``), with
files planted in ``consumequeue/0/`` (and ``consumequeue_ext/0/``) before the restart (the writer's ``plantFiles``)."""
from __future__ import annotations

import base64

from broker_dledger_2gib import EMPTY_BLANK, embedded_message
from broker_dledger_inside_scenarios import (
    EMBED_HOST_AT,
    EMBED_HOST_BODY,
    EMBED_PROCESS_OFFSET,
    emptied_embedded_abort_scenarios,
)

EXT_SIZE = 204
# where the reput is set (processOffset - 1, a batch queue the cut emptied leaving its max there): 'x' bytes, 48 bytes
# on a blank's header (the check there reads the blank: its empty request), then a well-formed T5 message
REPUT = EMBED_PROCESS_OFFSET - 1


def planted_bytes(size: int, seed: int) -> bytes:
    """``size`` non-zero bytes."""
    return bytes((i * 7 + seed) % 251 + 1 for i in range(size))


def blank_48_scenario(line: str) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-blank-48`` (5.5.1): the -emptied-batch-embedded store with, where
    the reput is set, 48 'x' bytes, a blank's header and a T5 message (its PHYSICALOFFSET field the reput)."""
    base = emptied_embedded_abort_scenarios(line)[0]
    assert base["name"].endswith("-emptied-batch-embedded"), base["name"]
    msg = embedded_message(REPUT)
    body = bytearray(b"x" * EMBED_HOST_BODY)
    at = REPUT - EMBED_HOST_AT
    body[at + 48:at + 56] = EMPTY_BLANK
    body[at + 56:at + 56 + len(msg)] = msg
    *rest, host, last = base["messages"]
    host = {**host, "body": base64.b64encode(bytes(body)).decode()}
    return {**base, "messages": [*rest, host, last], "name": f"{base['name']}-blank-48"}


def plant(sc: dict, files: dict[str, bytes], suffix: str, **config: str) -> dict:
    """``sc`` with ``files`` planted before its restart (and ``config`` added), named with ``suffix``."""
    return {**sc, "config": {**sc["config"], **config}, "name": f"{sc['name']}{suffix}",
            "plantFiles": {rel: base64.b64encode(data).decode() for rel, data in files.items()}}


CQ = "consumequeue/0/00000000000000000000"
CQ_NEXT = "consumequeue/0/00000000000000000220"
EXT = "consumequeue_ext/0/00000000000000000000"
EXT_NEXT = f"consumequeue_ext/0/{EXT_SIZE:020d}"


def held_scenarios(line: str) -> list[dict]:
    """``-blank-48-held``: a full-size file of non-zero bytes where the empty request's unit goes and a shorter
    second file; ``-blank-48-held-short``: the first file shorter than the queue's file size; ``-blank-48-held-ext``
    (``enableConsumeQueueExt``, ext files of :data:`EXT_SIZE` bytes): full-size first consume queue and ext files
    and a second ext file; ``-emptied-batch-embedded-held``: the store whose reput parses a message there and
    dispatches no empty request, with the -held files; and ``-blank-48`` itself, nothing planted."""
    blank = blank_48_scenario(line)
    cq_size = int(blank["config"]["mappedFileSizeConsumeQueue"])
    full = {CQ: planted_bytes(cq_size, 1), CQ_NEXT: planted_bytes(40, 2)}
    ext = {CQ: planted_bytes(cq_size, 3), EXT: planted_bytes(EXT_SIZE, 4), EXT_NEXT: planted_bytes(60, 5)}
    base = emptied_embedded_abort_scenarios(line)[0]
    return [plant(blank, full, "-held"), plant(blank, {CQ: planted_bytes(cq_size // 2, 6)}, "-held-short"),
            plant(blank, ext, "-held-ext", enableConsumeQueueExt="true", mappedFileSizeConsumeQueueExt=str(EXT_SIZE)),
            plant(base, full, "-held"), blank]
