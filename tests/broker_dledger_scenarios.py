"""DLedger scenarios for the broker harness (:mod:`broker_harness`): small stores the broker's
``DLedgerCommitLog`` writes (``enableDLegerCommitLog=true``, a single-node group), fixed rather than
drawn, the same on every run.

Each scenario's settings carry the group (``dLegerGroup``, ``dLegerSelfId``, and ``dLegerPeers`` with
a ``{port}`` the writer fills with a free port on 127.0.0.1), 64 KiB data files
(``mappedFileSizeCommitLog``) that 1-3 KiB bodies fill in a few dozen messages, so that every store
spans several files ending in DLedger blanks, and small consume queue and index files. On the 5.x lines
they also set ``recheckReputOffsetFromCq=true``: without it a 5.x restart does not dispatch a DLedger
commitlog again (see the Writer's javadoc). ``converted`` is a store converted in place: messages put
with an ordinary commitlog, then ``{"switchToDLedger": true}`` and more messages through DLedger.
"""
from __future__ import annotations

import base64
import random

from broker_scenarios import KEYS, TAGS

FILE_SIZE = 64 * 1024
# FlushConsumeQueueService writes the checkpoint's logicsPhysicalOffset (and logicsMsgTimestamp) only on a flush
# at least flushConsumeQueueThoroughInterval (60 s) after the last such one: with the default, a store written in
# a few seconds keeps what its first flush saw, one second after the start, which depends on the machine's pace.
# 0: every flush, the store's last one at shutdown included, writes where the dispatch is, so the crash
# restart's start file and its 5.5.1 queue cut are the same on every run.
THOROUGH_CHECKPOINT = {"flushConsumeQueueThoroughInterval": "0"}


def config(line: str) -> dict[str, str]:
    """The settings every DLedger scenario of ``line`` starts from."""
    c = {
        "mappedFileSizeCommitLog": str(FILE_SIZE),
        "mappedFileSizeConsumeQueue": "120",  # 6 units a file: most queues span several
        "maxHashSlotNum": "101",
        "maxIndexNum": "400",
        "enableDLegerCommitLog": "true",
        "dLegerGroup": "g0",
        "dLegerSelfId": "n0",
        "dLegerPeers": "n0-127.0.0.1:{port}",
    }
    if not line.startswith("4"):
        c["recheckReputOffsetFromCq"] = "true"
    return c


class Messages:
    """Deterministic message objects (the writer's JSON, see :mod:`broker_harness`)."""

    def __init__(self, seed: int, topics: list[str]) -> None:
        self.rng = random.Random(seed)
        self.topics = topics
        self.n = 0

    def body(self, low: int = 1024, high: int = 3072) -> str:
        return base64.b64encode(self.rng.randbytes(self.rng.randint(low, high))).decode()

    def one(self, keyed: bool = False, **extra) -> dict:
        self.n += 1
        m = {"topic": self.rng.choice(self.topics), "queueId": self.rng.randint(0, 3), "body": self.body(),
             "uniqKey": f"7F00000100002A9F0000{self.n:012X}"}
        if keyed:
            keys = self.rng.sample(KEYS, self.rng.randint(0, 3))
            if keys:
                m["keys"] = " ".join(keys)
            if self.rng.random() < 0.7:
                m["tags"] = self.rng.choice(TAGS)
        m.update(extra)
        return m

    def batch(self, size: int) -> dict:
        parts = []
        for _ in range(size):
            self.n += 1
            part = {"body": self.body(512, 1536), "uniqKey": f"7F00000100002A9F0000{self.n:012X}"}
            if self.rng.random() < 0.5:
                part["keys"] = self.rng.choice(KEYS[:4])
                part["tags"] = self.rng.choice(TAGS)
            parts.append(part)
        return {"topic": self.rng.choice(self.topics), "queueId": self.rng.randint(0, 3), "batch": parts}


def _topics(line: str) -> list[str]:
    topics = ["T0", "T1", "%RETRY%cg1"]
    if not line.startswith("4"):
        topics.append("LongTopic-" + "x" * 190)  # a V2 record (2-byte topic length)
    return topics


def dledger_scenarios(line: str) -> list[dict]:
    """The DLedger scenarios of broker line ``line`` (named ``<line>-dledger-<what>``): ``plain``
    (single messages, half of them with keys and tags, over three data files), ``mixed`` (batches,
    delayed messages, prepared/commit/rollback transactions), ``converted`` (both kinds, before and
    after the switch)."""
    topics = _topics(line)
    scenarios: dict[str, dict] = {}

    g = Messages(1, topics)
    scenarios["plain"] = {"config": config(line), "messages": [g.one(keyed=i % 2 == 0) for i in range(60)]}

    g = Messages(2, topics)
    scenarios["mixed"] = {"config": {**config(line), "messageDelayLevel": "1s 5s 10s 30s 1m"},
                          "messages": [_mixed(g, i) for i in range(48)]}

    g = Messages(3, topics)
    before = [g.one(keyed=True) for _ in range(35)]  # an ordinary commitlog of about 1.3 files
    after = [_mixed(g, i) for i in range(30)]
    scenarios["converted"] = {"config": config(line), "messages": [*before, {"switchToDLedger": True}, *after]}

    return [{**sc, "name": f"{line}-dledger-{what}"} for what, sc in scenarios.items()]


def no_recheck_scenario(line: str) -> dict:
    """``<line>-dledger-norecheck`` (5.x lines): the ``plain`` messages without
    ``recheckReputOffsetFromCq``, so that the broker's restart rebuilds nothing (the writer's
    ``restartRebuildsNothing``)."""
    plain = dledger_scenarios(line)[0]
    conf = {k: v for k, v in plain["config"].items() if k != "recheckReputOffsetFromCq"}
    return {**plain, "config": conf, "restartRebuildsNothing": True, "name": f"{line}-dledger-norecheck"}


def abort_scenarios(line: str) -> list[dict]:
    """``<line>-dledger-abort``: the ``plain`` messages, restarted after a crash (the writer's ``abort``:
    an ``abort`` file before the restart, so its recovery is the abnormal one; ``before/`` keeps the store
    as the restart found it, its ``checkpoint`` and ``dledger-n0/`` too).  On the 5.x lines the restart runs
    again on a fresh copy of ``before/`` (``restartCopies``: the same files must give the same bytes), with
    DLedger's checkpoint seven entries behind the log's end (``dledgerCommittedBack``: the crash came before
    the group committed them), and ``<line>-dledger-abort-norecheck`` is the same without
    ``recheckReputOffsetFromCq``, its whole log committed, and ``<line>-dledger-abort-converted`` the
    ``converted`` store restarted after a crash (old ``commitlog/`` files before the DLedger data).  5.5.1:
    ``<line>-dledger-abort-accel`` is ``<line>-dledger-abort`` with ``enableAcceleratedRecovery=true`` and
    ``checkCommitLogOffsetOnRecover=true`` (which ``dledgerRecoverAbnormally`` does not read), and
    ``-accel-load-fails`` that with the checkpoint's logicsPhysicalOffset set to 0, on which the broker's
    ``load()`` fails (``loadMayFail``)."""
    plain, _, converted = dledger_scenarios(line)
    if line.startswith("4"):
        return [{**plain, "abort": True, "name": f"{line}-dledger-abort"}]
    conf = {k: v for k, v in plain["config"].items() if k != "recheckReputOffsetFromCq"}
    out = [{**plain, "abort": True, "restartCopies": 1, "dledgerCommittedBack": 7, "name": f"{line}-dledger-abort"},
           {**plain, "config": conf, "abort": True, "name": f"{line}-dledger-abort-norecheck"},
           {**converted, "abort": True, "name": f"{line}-dledger-abort-converted"}]
    if line.startswith("5.5"):
        accel = {**plain, "abort": True, "dledgerCommittedBack": 7, "name": f"{line}-dledger-abort-accel",
                 "config": {**plain["config"], "enableAcceleratedRecovery": "true",
                            "checkCommitLogOffsetOnRecover": "true"}}
        out += [accel, {**accel, "name": f"{line}-dledger-abort-accel-load-fails", "loadMayFail": True,
                        "checkpointLogicsPhysicalOffset": {"set": 0}}]
    return out


def damaged_abort_scenarios(line: str) -> list[dict]:
    """``<line>-dledger-abort-damaged`` (5.x lines): the ``plain`` store with a body byte of its 56th message (in
    the last data file) flipped, restarted after a crash: ``dledgerRecoverAbnormally``'s message check (body CRC)
    ends the walk there while DLedger's recovery, which reads no CRC, keeps the log; with
    ``recheckReputOffsetFromCq`` the start's reput from the walk's last unit dispatches the rest, the damaged
    message too.  ``-damaged-norecheck``: without the switch, the reput starts at the committed position, the log's
    end: nothing after the damage is dispatched (5.3.3 only, which ``DLEDGER_LINES`` adds: the same code as 5.5.1's
    there, kept out of the default suite).  The checkpoint's ``logicsPhysicalOffset`` is set to 100, so that 5.5.1
    cuts no queue (and its walk starts at the first data file)."""
    plain = dledger_scenarios(line)[0]
    sc = {**plain, "abort": True, "damageMessage": 55, "checkpointLogicsPhysicalOffset": {"set": 100},
          "name": f"{line}-dledger-abort-damaged"}
    conf = {k: v for k, v in plain["config"].items() if k != "recheckReputOffsetFromCq"}
    return [sc] + ([{**sc, "config": conf, "name": f"{line}-dledger-abort-damaged-norecheck"}]
                   if line.startswith("5.3") else [])


def damaged_cut_abort_scenarios(line: str, more: bool = False) -> list[dict]:
    """The ``partial`` crash restart (one queue, some 100 entries in the last data file, no
    ``recheckReputOffsetFromCq``) with a body byte of its 399th message (of 400) flipped and DLedger's checkpoint
    two entries behind the log's end, the damaged entry the first past the committed position:
    ``dledgerRecoverAbnormally``'s message check (body CRC) ends the walk there, DLedger's recovery (no CRC) keeps
    the log, and on 5.5.1 ``truncateDirtyLogicFiles`` cuts the queue at the walk's short ``processOffset``; the
    start's reput from the committed position, the damaged entry, reaches no cut unit and appends the damaged
    message and the one after it at the queue's write position, over the cut units
    (``<line>-dledger-abort-damaged-cut``, 5.5.1; ``reportQueues``).  ``more`` (``DLEDGER_MORE_LAYOUTS=1``,
    5.5.1): ``-damaged-cut-recheck`` with ``recheckReputOffsetFromCq=true`` and ``messageIndexEnable=false`` (the
    reput from the cut queue's max puts every cut unit back, then the rest; with the index on it would index the
    walk's last indexed record again before the records past the walk, which is refused), and ``-damaged-cut-end``
    with the whole log committed (the reput from the log's end: the cut units stay cut, nothing past the damage is
    dispatched).  5.3.3 (``DLEDGER_LINES``), which cuts only the queues it loads: ``-damaged-cut`` itself (no cut
    with the queues deleted: the reput from the damaged entry dispatches the rest) and ``-damaged-cut-kept`` with
    the queues kept (``keepQueues``: the cut, then the reput as on 5.5.1; checked through ``verify``)."""
    sc = {**partial_abort_scenario(line), "damageMessage": 398, "dledgerCommittedBack": 2,
          "name": f"{line}-dledger-abort-damaged-cut"}
    if line.startswith("5.3"):
        return [sc, {**sc, "keepQueues": True, "name": f"{line}-dledger-abort-damaged-cut-kept"}]
    if not line.startswith("5.5"):
        return []
    out = [sc]
    if more:
        out += [{**sc, "config": {**sc["config"], "recheckReputOffsetFromCq": "true", "messageIndexEnable": "false"},
                 "name": f"{line}-dledger-abort-damaged-cut-recheck"},
                {**{k: v for k, v in sc.items() if k != "dledgerCommittedBack"},
                 "name": f"{line}-dledger-abort-damaged-cut-end"}]
    return out


def damaged_gap_abort_scenarios(line: str) -> list[dict]:
    """The damaged-cut store with its 398th message (of 400) damaged instead, DLedger's checkpoint still two entries
    behind the log's end: ``dledgerRecoverAbnormally``'s message check ends the walk at the damaged message, and the
    start's reput from the committed position, the entry after it, dispatches the last two messages: the damaged
    one is never dispatched (no unit, no key), and the queue appends the last two at its write position, one below
    their own queue offsets (``<line>-dledger-abort-damaged-gap``: 5.5.1 cuts the queue at the walk's short
    ``processOffset`` first, the last two then go over the cut units; 5.3.3 with its queues deleted cuts nothing).
    ``-damaged-gap-nocut`` (5.5.1): the checkpoint's ``logicsPhysicalOffset`` set to 100, so that no queue is cut
    (and the walk starts at the first data file).  ``-damaged-gap-layouts`` and ``-damaged-cut-layouts`` (5.5.1):
    the layouts store (ext files, a light queue, a BatchCQ topic; DLedger's checkpoint six entries behind the
    log's end) with its 391st message (T0) damaged, so that the reput begins past it, or its 395th, where it begins:
    the cut queues get the units of the records from the reput's start appended at their write positions, a batch
    queue's too, each holding the address of the ext unit its own dispatch put.  ``-damaged-gap-emptied`` (5.5.1): the
    partial store with three messages to a topic of their own (T9) after it, the second damaged, DLedger's checkpoint
    one entry behind: the cut empties T9's queue, and the reput from the last entry puts T9's last message in a new
    file at its own queue offset (``fillPreBlank`` before it), not where the rebuild's walk, which left the damaged
    one out, appended it."""
    sc = {**partial_abort_scenario(line), "damageMessage": 397, "dledgerCommittedBack": 2,
          "name": f"{line}-dledger-abort-damaged-gap"}
    if not line.startswith("5.5"):
        return [sc] if line.startswith("5.3") else []
    layouts = layouts_abort_scenario(line)
    g = Messages(7, ["T9"])
    t9 = [{**g.one(), "queueId": 0, "body": g.body(10, 60), "keys": f"k9-{i}"} for i in range(3)]
    return [sc, {**sc, "checkpointLogicsPhysicalOffset": {"set": 100},
                 "name": f"{line}-dledger-abort-damaged-gap-nocut"},
            {**sc, "messages": [*sc["messages"], *t9], "damageMessage": 401, "dledgerCommittedBack": 1,
             "name": f"{line}-dledger-abort-damaged-gap-emptied"},
            {**layouts, "damageMessage": 390, "name": f"{line}-dledger-abort-damaged-gap-layouts"},
            {**layouts, "damageMessage": 394, "name": f"{line}-dledger-abort-damaged-cut-layouts"}]


def damaged_twice_abort_scenarios(line: str) -> list[dict]:
    """The partial store with a body byte of its 397th message (of 400) flipped and the magic code of its 399th,
    DLedger's checkpoint four entries behind the log's end (the committed position at the first damaged entry):
    ``dledgerRecoverAbnormally``'s message check (body CRC) ends the walk at the first, DLedger's recovery (which
    reads neither) keeps the log, and the start's reput from the committed position dispatches the first damaged
    message and the next (its check reads no CRC), then fails at the bad magic code: ``doReput`` (a DLedger store)
    moves ``reputFromOffset`` to the end of what ``getData`` gave, the data file's end or the committed position,
    so neither it nor the last message is dispatched.  ``<line>-dledger-abort-damaged-twice``: 5.5.1 cuts the
    queue at the walk's short ``processOffset`` first; 5.3.3 (its queues deleted) cuts nothing, and adds
    ``-damaged-twice-kept`` with the queues kept (``keepQueues``: the cut)."""
    if not line.startswith(("5.3", "5.5")):
        return []
    sc = {**partial_abort_scenario(line), "damageMessage": 396, "damageMagic": 398, "dledgerCommittedBack": 4,
          "name": f"{line}-dledger-abort-damaged-twice"}
    return [sc] + ([{**sc, "keepQueues": True, "name": f"{sc['name']}-kept"}] if line.startswith("5.3") else [])


def damaged_twice_early_abort_scenarios(line: str) -> list[dict]:
    """The partial store (400 messages over two data files, some 300 in the first) with a body byte of its 61st
    message flipped and the magic code of its 121st, both in the first data file, DLedger's checkpoint 340 entries
    behind the log's end (the committed position at the first damaged entry) and the checkpoint's
    ``logicsPhysicalOffset`` set to 100 (5.5.1's walk from the first data file, no queue cut; 5.3.3 with its queues
    deleted cuts nothing): the walk ends at the first damage, and the start's reput from the committed position
    dispatches it and the messages up to the bad magic code, then jumps to the end of ``getData``'s buffer, the
    first data file's end (the group's first commit takes the whole log), and goes on at the second data file:
    the rest of the first file gets no unit (``<line>-dledger-abort-damaged-twice-early``).
    ``-damaged-twice-early-recheck``: with ``recheckReputOffsetFromCq=true`` and DLedger's checkpoint two entries
    behind, in the second data file: the reput from the queue's max (the walk's end) reads the first file's buffer
    up to its end, committed from the start, and goes on at the second file the same way.  5.5.1 adds
    ``-damaged-twice-early-cut`` with ``logicsPhysicalOffset`` at the 150th put's offset (the walk still from the
    first data file, whose ``processOffset`` it reaches): ``truncateDirtyLogicFiles`` cuts the queue first.
    ``-damaged-twice-early-past`` (and 5.5.1 ``-past-cut``): DLedger's checkpoint 200 entries behind, past the bad
    magic code in the first file: the reput from there never reads it (nor the messages from the first damage to
    there) and dispatches the rest of the log."""
    if not line.startswith(("5.3", "5.5")):
        return []
    sc = {**partial_abort_scenario(line), "damageMessage": 60, "damageMagic": 120, "dledgerCommittedBack": 340,
          "checkpointLogicsPhysicalOffset": {"set": 100}, "name": f"{line}-dledger-abort-damaged-twice-early"}
    recheck = {**sc, "config": {**sc["config"], "recheckReputOffsetFromCq": "true"}, "dledgerCommittedBack": 2,
               "name": f"{sc['name']}-recheck"}
    past = {**sc, "dledgerCommittedBack": 200, "name": f"{sc['name']}-past"}
    cut = {"checkpointLogicsPhysicalOffset": {"put": 150}}
    return [sc, recheck, past] + ([{**sc, **cut, "name": f"{sc['name']}-cut"},
                                   {**past, **cut, "name": f"{past['name']}-cut"}] if line.startswith("5.5") else [])



def converted_walked_nothing_abort_scenario(line: str) -> list[dict]:
    """``<line>-dledger-abort-converted-propcrc`` (5.x lines): the ``converted`` store (old ``commitlog/`` files,
    then DLedger's data files) written with ``enabledAppendPropCRC`` and ``forceVerifyPropCRC``, restarted after a
    crash with ``recheckReputOffsetFromCq=true`` and DLedger's checkpoint three entries behind the log's end:
    ``dledgerRecoverAbnormally``'s message check fails at the first entry (DLedger's encoder writes no CRC
    property), so it dispatches nothing, and the start's reput over the empty queues begins at the min offset, the
    first old file's: it dispatches the old records, rolls into the data files at the last old file's blank, and
    dispatches the entries to the log's end."""
    if not line.startswith(("5.3", "5.5")):
        return []
    converted = dledger_scenarios(line)[2]
    return [{**converted, "abort": True, "dledgerCommittedBack": 3, "name": f"{line}-dledger-abort-converted-propcrc",
             "config": {**converted["config"], "enabledAppendPropCRC": "true", "forceVerifyPropCRC": "true"}}]


def converted_queued_nothing_abort_scenario(line: str) -> list[dict]:
    """``<line>-dledger-abort-converted-prepared`` (5.x lines): a store converted in place whose old ``commitlog/``
    files hold ordinary keyed messages and whose DLedger data files hold prepared transaction messages only,
    restarted after a crash with ``recheckReputOffsetFromCq=true`` and DLedger's checkpoint three entries behind the
    log's end: ``dledgerRecoverAbnormally``'s walk dispatches the prepared messages (their keys) but queues none,
    so ``doRecheckReputOffsetFromCq`` finds every queue empty and sets the reput at the min offset, the first old
    file's: it dispatches the old records (their units; their keys skipped, below the index's ``endPhyOffset``),
    rolls into the data files at the last old file's blank and walks them again (the walk's last indexed record
    indexed again)."""
    if not line.startswith(("5.3", "5.5")):
        return []
    g = Messages(13, _topics(line))
    before = [g.one(keyed=True) for _ in range(35)]   # an ordinary commitlog of about 1.3 files
    after = [g.one(keyed=True, tranType="prepared") for _ in range(40)]
    return [{"config": config(line), "messages": [*before, {"switchToDLedger": True}, *after], "abort": True,
             "dledgerCommittedBack": 3, "name": f"{line}-dledger-abort-converted-prepared"}]


def converted_old_reput_abort_scenarios(line: str) -> list[dict]:
    """Crash restarts of a store converted in place whose start's reput, with ``recheckReputOffsetFromCq=true``,
    begins in the old ``commitlog/`` files (every queue's max -1: ``doRecheckReputOffsetFromCq`` keeps the min
    offset) after a walk that ended early or a queue cut.  ``<line>-dledger-abort-converted-prepared-damaged`` (5.x
    lines): the ``converted-prepared`` store with five keyed messages after the prepared ones, a body byte of the
    first of them flipped (in the last data file; ``reportQueues`` for both): the walk (body CRC) queues nothing
    and ends there, DLedger's recovery (no CRC) keeps the log; the reput dispatches the old records, the walk's
    again, then the damaged message and the rest.
    ``<line>-dledger-abort-converted-cut-emptied`` (5.5.1): 40 small prepared messages after the switch, then three
    small ones to a topic of their own (T7, queue 0) whose records lie past the walk's short ``processOffset`` (the
    40 entry headers it leaves out): ``truncateDirtyLogicFiles`` takes every T7 unit and deletes its only file,
    ``correctMinOffset`` sets its max to -1, so every queue is empty and the reput begins at the first old file;
    ``-converted-cut-emptied-ext`` (5.5.1): that store with ext files (``enableConsumeQueueExt``) and its first six
    old messages sent to T7 queue 0, so the walk's first T7 unit opens T7's second queue file (the one the cut
    deletes) and the units the reput puts back point at ext units counted from the old T7 records."""
    if not line.startswith(("5.3", "5.5")):
        return []
    (prepared,) = converted_queued_nothing_abort_scenario(line)
    g = Messages(14, ["T0", "T1"])
    tail = [g.one(keyed=True) for _ in range(5)]   # in the last data file, after its prepared messages
    switch = next(i for i, m in enumerate(prepared["messages"]) if "switchToDLedger" in m)
    # THOROUGH_CHECKPOINT: the 5.5.1 queue cut needs the checkpoint's logicsPhysicalOffset at the tail's last unit;
    # by default only the new store's first consume queue flush (about a second after its start) and one a minute
    # later read it, so a put phase slowed past that second left the old records' value there, and no cut
    out = [{**prepared, "config": {**prepared["config"], **THOROUGH_CHECKPOINT},
            "messages": [*prepared["messages"], *tail], "damageMessage": len(prepared["messages"]) - 1,
            "reportQueues": True, "name": f"{line}-dledger-abort-converted-prepared-damaged"}]
    if line.startswith("5.5"):
        g = Messages(15, ["T7"])
        small = [{**g.one(keyed=True, tranType="prepared"), "body": g.body(10, 60)} for _ in range(40)]
        t7 = [{**g.one(), "queueId": 0, "body": g.body(10, 20), "keys": f"k7{i}"} for i in range(3)]
        out.append({"config": {**config(line), **THOROUGH_CHECKPOINT},
                    "messages": [*prepared["messages"][:switch + 1], *small, *t7], "abort": True,
                    "reportQueues": True, "name": f"{line}-dledger-abort-converted-cut-emptied"})
        old = [{**m, "topic": "T7", "queueId": 0} if i < 6 else m for i, m in enumerate(prepared["messages"][:switch])]
        out.append({**out[-1], "config": {**out[-1]["config"], "enableConsumeQueueExt": "true",
                                          "mappedFileSizeConsumeQueueExt": "204"},
                    "messages": [*old, *out[-1]["messages"][switch:]],
                    "name": f"{line}-dledger-abort-converted-cut-emptied-ext"})
    return out


def damaged_again_abort_scenarios(line: str) -> list[dict]:
    """Crash restarts whose start's reput begins before the damaged message that ends the walk, and before the
    walk's last indexed record, with no queue cut (the checkpoint's ``logicsPhysicalOffset`` set to 100; 5.3.3 with
    its queues deleted cuts nothing): the reput walks the walk's last records again, then the rest, so
    ``IndexService.buildIndex`` puts the walk's last indexed record's keys again before those of the records past
    the damage.  ``<line>-dledger-abort-damaged-again``: the partial store, its 398th message of 400 damaged,
    DLedger's checkpoint five entries behind the log's end.  ``-damaged-again-layouts``: the layouts store (ext
    files, a light queue, a BatchCQ topic), its 391st message (T0) damaged, the checkpoint twelve entries behind:
    the reput also puts an ext unit again for each T0 record from its start to the damage, before those of the
    records past it.  5.5.1 adds both without the checkpoint's ``logicsPhysicalOffset`` moved (``-cut``), so that
    ``truncateDirtyLogicFiles`` cuts the queues at the walk's short ``processOffset`` first: the reput puts back
    the cut units from its start (an ext queue's pointing at the ext units it puts again) and appends the records
    past the damage behind them (a batch queue's too).  5.3.3, which cuts only the queues it loads, adds
    ``-damaged-again-kept`` and ``-damaged-gap-kept`` (the damaged-gap store) with the queues kept
    (``keepQueues``), checked through ``verify``."""
    if not line.startswith(("5.3", "5.5")):
        return []
    out = [{**partial_abort_scenario(line), "damageMessage": 397, "dledgerCommittedBack": 5,
            "name": f"{line}-dledger-abort-damaged-again"},
           {**layouts_abort_scenario(line), "damageMessage": 390, "dledgerCommittedBack": 12,
            "name": f"{line}-dledger-abort-damaged-again-layouts"}]
    cp = {"checkpointLogicsPhysicalOffset": {"set": 100}}
    kept = [{**sc, "keepQueues": True, "name": f"{sc['name']}-kept"}
            for sc in (out[0], damaged_gap_abort_scenarios(line)[0])]
    return [{**sc, **cp} for sc in out] + ([{**sc, "name": f"{sc['name']}-cut"} for sc in out]
                                          if line.startswith("5.5") else kept)


def before_abort_scenarios(line: str) -> list[dict]:
    """Crash restarts whose start's reput begins before the data file the recovery's walk starts at: DLedger's
    checkpoint 160 entries behind the log's end (the committed position in the first of two data files), the
    walk from the last data file (a pause of 3.5 s after the 320th put: 5.3.3's checkpoint timestamps, less 3 s,
    then match that file's first message; 5.5.1's checkpoint ``logicsPhysicalOffset`` set to the 320th put's
    offset, which that file's first message is below and the walk's short ``processOffset`` above, so no queue is
    cut).  The reput walks the first file's records from there, then the walk's ones again: a queue the walk wrote
    drops them, a queue it did not (T9, puts 100-104 and 250-259, the latter past the committed position) gets
    ``fillPreBlank`` units and them; ``IndexService.buildIndex`` skips them and indexes the walk's last indexed
    record again.  ``<line>-dledger-abort-before``: the partial store with T9.  ``-before-layouts``: the layouts
    store (ext files, a light queue, a BatchCQ topic): the reput also puts an ext unit for each T0 record from its
    start."""
    if not line.startswith(("5.3", "5.5")):
        return []

    def paused(sc: dict) -> dict:
        m = sc["messages"]
        return {**sc, "messages": [*m[:320], {"sleepMs": 3500}, *m[320:]], "dledgerCommittedBack": 160,
                "checkpointLogicsPhysicalOffset": {"put": 320}}
    partial = partial_abort_scenario(line)
    t9 = [{**m, "topic": "T9"} if 100 <= i < 105 or 250 <= i < 260 else m for i, m in enumerate(partial["messages"])]
    return [paused({**partial, "messages": t9, "name": f"{line}-dledger-abort-before"}),
            paused({**layouts_abort_scenario(line), "name": f"{line}-dledger-abort-before-layouts"})]


def before_walk_abort_scenarios(line: str) -> list[dict]:
    """The ``before`` crash restarts (the start's reput from the committed position in the first of two data files,
    the recovery's walk from the last) whose walk also ends at a damaged message or cuts the queues.
    ``<line>-dledger-abort-before-damaged``: the partial store with T9, a body byte of its 397th put (T0, in the
    last data file) flipped: the walk (body CRC) ends there, DLedger's recovery (no CRC) keeps the log, no queue is
    cut (5.5.1: the checkpoint's ``logicsPhysicalOffset`` at the 320th put; 5.3.3: its queues deleted); the reput
    walks the first file's records, the walk's again, then the damaged message and the rest, which T0 appends.
    ``-before-damaged-twice``: the 399th put's magic code flipped too, which the reput's own check refuses (the
    dispatch ends there: the last data file, a group of one, the committed position before it).
    ``-before-damaged-layouts`` (5.5.1): the same on the ``before-layouts`` store (ext files, a light queue, a BatchCQ
    topic), its 391st put (T0) damaged: the reput also puts an ext unit for each T0 record from its start.  5.5.1
    adds ``-before-cut``, ``-before-damaged-cut`` and ``-before-damaged-twice-cut`` with the checkpoint as the
    broker left it (past the walk's short ``processOffset``), so that ``truncateDirtyLogicFiles`` cuts T0 first and
    the reput puts the cut units back, and ``-before-cut-layouts`` and ``-before-damaged-cut-layouts`` on the
    layouts store (the units put back point at the ext units the reput put for them, counted from its start in the
    first file), and ``-before-cut-blank``, whose puts 262-270 and 394-397 go to a third topic T8: the walk finds
    its first T8 message at queue offset 9 (``fillPreBlank`` units before it) and the cut takes every T8 unit it
    wrote (the last two in a second queue file, which it deletes), leaving the blanks only (the queue's max
    2147483647), so the reput puts none back and that file stays deleted, and ``-before-cut-emptied``, whose puts
    262-272 and 394-397 go to T7: the walk's first T7 unit opens its second queue file, the cut deletes it, and
    5.5.1's max -1 lets the reput put the first file's T7 records, from a new first queue file, and
    ``-before-cut-magic`` and ``-before-cut-magic-layouts``, the magic code of the 246th put (T0; the layouts store:
    the 242nd) flipped, past the committed position in the first data file: the reput's own check refuses it and goes
    on at the second data file (a group of one), the rest of the first (T9's puts 250-259) dispatched by no one, no
    unit and no ext unit, and ``-before-cut-emptied-layouts``, the layouts store whose T0 puts 220-229 and 240-244
    (before and past the committed position, in the first data file) and 393-397 (past the cut) go to T7: eleven
    units before the walk's, whose first opens the queue's second file, which the cut deletes (no file left; the ext
    units the walk put stay, and the reput's follow them); 5.3.3, which cuts
    only the queues it loads, adds the partial ones with the queues kept (``-kept``: ``keepQueues``, checked
    through ``verify``)."""
    if not line.startswith(("5.3", "5.5")):
        return []
    plain, layouts = before_abort_scenarios(line)
    damaged = {**plain, "damageMessage": 396, "name": f"{line}-dledger-abort-before-damaged"}
    damaged_layouts = {**layouts, "damageMessage": 390, "name": f"{line}-dledger-abort-before-damaged-layouts"}
    twice = {**damaged, "damageMagic": 398, "name": f"{line}-dledger-abort-before-damaged-twice"}
    uncut = {k: v for k, v in plain.items() if k != "checkpointLogicsPhysicalOffset"}
    cut = [{**uncut, "name": f"{line}-dledger-abort-before-cut"},
           {**uncut, "damageMessage": 396, "name": f"{line}-dledger-abort-before-damaged-cut"},
           {**uncut, "damageMessage": 396, "damageMagic": 398,
            "name": f"{line}-dledger-abort-before-damaged-twice-cut"}]
    if line.startswith("5.3"):
        cut = [{**sc, "keepQueues": True, "name": f"{sc['name']}-kept"} for sc in cut]
    else:
        puts = iter(range(len(uncut["messages"])))
        t8 = [{**m, "topic": "T8"} if "topic" in m and next(puts) in (*range(262, 271), *range(394, 398)) else m
              for m in uncut["messages"]]
        puts = iter(range(len(uncut["messages"])))
        t7 = [{**m, "topic": "T7"} if "topic" in m and next(puts) in (*range(262, 273), *range(394, 398)) else m
              for m in uncut["messages"]]
        cut += [{**uncut, "messages": t8, "name": f"{line}-dledger-abort-before-cut-blank"},
                {**uncut, "messages": t7, "name": f"{line}-dledger-abort-before-cut-emptied"},
                {**uncut, "damageMagic": 245, "name": f"{line}-dledger-abort-before-cut-magic"}]
        uncut = {k: v for k, v in damaged_layouts.items() if k != "checkpointLogicsPhysicalOffset"}
        cut_layouts = {k: v for k, v in uncut.items() if k != "damageMessage"}
        cut += [{**cut_layouts, "name": f"{line}-dledger-abort-before-cut-layouts"},
                {**uncut, "name": f"{line}-dledger-abort-before-damaged-cut-layouts"},
                {**cut_layouts, "damageMagic": 241, "name": f"{line}-dledger-abort-before-cut-magic-layouts"}]
        # -before-cut-emptied-layouts: the layouts store with the -cut-emptied queue T7 (T0 puts only, ext units too)
        puts = iter(range(len(cut_layouts["messages"])))
        t7_puts = (220, 222, 223, 225, 226, 228, 229, 240, 241, 243, 244, 393, 394, 396, 397)
        t7 = [{**m, "topic": "T7"} if "topic" in m and next(puts) in t7_puts and m["topic"] == "T0" else m
              for m in cut_layouts["messages"]]
        cut += [{**cut_layouts, "messages": t7, "name": f"{line}-dledger-abort-before-cut-emptied-layouts"}]
    return [damaged, twice, *([damaged_layouts] if line.startswith("5.5") else []), *cut]


def small_abort_scenarios(line: str) -> list[dict]:
    """``<line>-dledger-abort-small`` (5.x lines): 200 keyed messages of 100-300 bytes (about 30 entries in
    the last data file), restarted after a crash: ``dledgerRecoverAbnormally``'s ``processOffset`` leaves
    out more entry headers (48 bytes each) than the last message is long, so on 5.5.1 the checkpoint's
    ``logicsPhysicalOffset`` reaches it and the queues are truncated there (two queues, whose last two units
    are cut; one of them starts a consume queue file; the writer reports the queues after the restart's
    reput: ``reportQueues``); ``<line>-dledger-abort-small-norecheck`` is the same
    without ``recheckReputOffsetFromCq``."""
    g = Messages(4, ["T0", "T1"])
    messages = [{**g.one(), "body": g.body(100, 300), "keys": f"k{i}"} for i in range(200)]
    # 11 units a consume queue file: the cut's first unit of one queue starts a file, which the cut deletes
    small = {"config": {**config(line), **THOROUGH_CHECKPOINT, "mappedFileSizeConsumeQueue": "220"},
             "messages": messages, "abort": True,
             "reportQueues": True, "name": f"{line}-dledger-abort-small"}
    conf = {k: v for k, v in small["config"].items() if k != "recheckReputOffsetFromCq"}
    return [small, {**small, "config": conf, "name": f"{line}-dledger-abort-small-norecheck"}]


def first_start_abort_scenario(line: str) -> dict:
    """``<line>-dledger-abort-first-start``: the ``converted`` store's messages before the switch, put with an
    ordinary commitlog, then the restart after a crash (an ``abort`` file) with DLedger on: its first start with
    DLedger, ``dledger-n0/`` not there yet, so ``DLedgerCommitLog`` recovers the old files with the base
    ``CommitLog``'s recovery (5.x the abnormal one, 4.9.8 the normal one) and creates the first data file after
    them."""
    converted = dledger_scenarios(line)[2]
    switch = next(i for i, m in enumerate(converted["messages"]) if "switchToDLedger" in m)
    return {**converted, "messages": converted["messages"][:switch + 1], "abort": True,
            "name": f"{line}-dledger-abort-first-start"}


def partial_abort_scenario(line: str) -> dict:
    """``<line>-dledger-abort-partial`` (5.x lines): 400 keyed messages of 10-60 bytes (some 100 entries in
    the last data file), all to one queue, restarted after a crash without ``recheckReputOffsetFromCq`` and
    with DLedger's checkpoint two entries behind the log's end.  On 5.5.1 the queue truncation at
    ``dledgerRecoverAbnormally``'s short ``processOffset`` (about 100 entry headers short) takes the queue's
    last twenty units or so, and the start's reput from the committed position puts back only the last ones:
    ``putMessagePositionInfo`` appends them at the queue's write position, over the units it leaves out
    (``reportQueues``: the queue after the reput)."""
    g = Messages(5, ["T0"])
    messages = [{**g.one(), "queueId": 0, "body": g.body(10, 60), "keys": f"k{i}"} for i in range(400)]
    conf = {k: v for k, v in config(line).items() if k != "recheckReputOffsetFromCq"}
    return {"config": {**conf, **THOROUGH_CHECKPOINT, "mappedFileSizeConsumeQueue": "220"}, "messages": messages,
            "abort": True,
            "dledgerCommittedBack": 2, "reportQueues": True, "name": f"{line}-dledger-abort-partial"}


def kept_abort_scenario(line: str) -> dict:
    """``<line>-dledger-abort-kept`` (5.x lines): the ``partial`` store restarted with its consume queues
    kept (``keepQueues``): the crash restart's walk finds its units there, the 5.5.1 cut takes the queue's own
    units past ``processOffset`` (5.3.3 cuts when the loaded queues reach it), and the reput from the
    committed position puts back only the last ones (the broker's queues after ``load()`` and after the
    reput: ``queuesAfterLoad``, ``queuesAfterDispatch``)."""
    return {**partial_abort_scenario(line), "keepQueues": True, "name": f"{line}-dledger-abort-kept"}

def layouts_abort_scenario(line: str) -> dict:
    """``<line>-dledger-abort-layouts`` (5.x lines): the ``partial`` crash restart (no
    ``recheckReputOffsetFromCq``, 10-60 byte bodies, some 100 entries in the last data file) with every queue
    kind the cut takes: ``enableConsumeQueueExt=true`` (ext files of 10 units), light queues
    (``enableMultiDispatch``/``enableLmq``: every other T0 message also to ``%LMQ%q1``; the message carries its
    ``INNER_MULTI_QUEUE_OFFSET``, which 5.5.1 assigns in ``CommitLog``'s append callback, never used by
    ``DLedgerCommitLog``: without it the dispatch puts no light queue unit) and a BatchCQ topic
    (``BT0``: single messages, and every tenth an inner batch of three), all on queue 0, with DLedger's
    checkpoint six entries behind the log's end.  On 5.5.1 ``truncateDirtyLogicFiles`` at the recovery's
    short ``processOffset`` cuts the last units of T0, ``%LMQ%q1`` and BT0, and the start's reput from the
    committed position puts back only those of the last six messages (``reportQueues``)."""
    g = Messages(6, ["T0"])
    messages, lmq = [], 0
    for i in range(400):
        if i % 3 == 2:
            if i % 10 == 5:
                parts = [{"body": g.body(10, 40), "uniqKey": f"7F00000100002A9F0001{i:08X}{k:04X}"} for k in range(3)]
                messages.append({"topic": "BT0", "queueId": 0, "batch": parts,
                                 "uniqKey": f"7F00000100002A9F0002{i:012X}", "properties": {"WAIT": "true"}})
                continue
            m = {**g.one(), "topic": "BT0"}
        else:
            m = g.one()
            if i % 2:   # the queue offset too: a DLedger commitlog does not assign it (see the docstring)
                m["properties"] = {"INNER_MULTI_DISPATCH": "%LMQ%q1", "INNER_MULTI_QUEUE_OFFSET": str(lmq)}
                lmq += 1
        m.update(queueId=0, body=g.body(10, 60), keys=f"k{i}")
        if i % 4:
            m["tags"] = TAGS[i % len(TAGS)]
        messages.append(m)
    conf = {k: v for k, v in config(line).items() if k != "recheckReputOffsetFromCq"}
    return {"config": {**conf, **THOROUGH_CHECKPOINT, "mappedFileSizeConsumeQueue": "220",
                       "enableConsumeQueueExt": "true", "mappedFileSizeConsumeQueueExt": "204",
                       "enableMultiDispatch": "true", "enableLmq": "true",
                       "mapperFileSizeBatchConsumeQueue": str(11 * 46)},
            "batchTopics": ["BT0"], "messages": messages, "abort": True, "dledgerCommittedBack": 6,
            "reportQueues": True, "name": f"{line}-dledger-abort-layouts"}


def layouts_early_abort_scenario(line: str) -> dict:
    """``<line>-dledger-abort-layouts-early`` (5.5.1): the ``layouts`` store (two data files, some 150 entries in
    the last) with DLedger's checkpoint 160 entries behind the log's end, in the first data file, and the
    checkpoint's ``logicsPhysicalOffset`` set to 100: ``isMmapFileMatchedRecover`` then matches the first data
    file (5.5.1 compares its first message's offset with it), so the crash recovery walks both files, and no
    queue is cut (the checkpoint lies behind ``processOffset``); the start's reput from the committed
    position, before the walk's last file, puts an ext unit for every record of T0 from there
    (``putMessagePositionInfoWrapper``) and drops every unit."""
    sc = layouts_abort_scenario(line)
    return {**sc, "dledgerCommittedBack": 160, "checkpointLogicsPhysicalOffset": {"set": 100},
            "name": f"{line}-dledger-abort-layouts-early"}


def layouts_recheck_abort_scenario(line: str) -> dict:
    """``<line>-dledger-abort-layouts-recheck``: the ``layouts`` store restarted with
    ``recheckReputOffsetFromCq=true``: the start's reput begins at the cut queues' largest max (a batch queue's
    counts with the start of its last kept unit), below every cut unit, and puts them all back at their own
    positions, an ext queue's pointing at the ext units it puts again."""
    sc = layouts_abort_scenario(line)
    return {**sc, "config": {**sc["config"], "recheckReputOffsetFromCq": "true"},
            "name": f"{line}-dledger-abort-layouts-recheck"}


def batch_kept_abort_scenario(line: str) -> dict:
    """``<line>-dledger-abort-batch-kept`` (5.x lines): the ``layouts`` store without consume queue ext files,
    restarted with its queues kept (``keepQueues``: ``batchconsumequeue/`` too): the crash restart's walk finds
    the units of T0, ``%LMQ%q1`` and the BatchCQ topic BT0 there, the cut (5.5.1; 5.3.3 when the loaded queues
    reach ``processOffset``) takes each queue's own units past ``processOffset``, a batch queue's by
    ``BatchConsumeQueue``'s rule, and the reput from the committed position puts back only the last ones."""
    sc = layouts_abort_scenario(line)
    conf = {k: v for k, v in sc["config"].items() if not k.startswith("enableConsumeQueueExt")
            and k != "mappedFileSizeConsumeQueueExt"}
    return {**sc, "config": conf, "keepQueues": True, "name": f"{line}-dledger-abort-batch-kept"}


# past_2gib_abort_scenario: data files of 100,000,000 bytes (2147483647 lies in the 22nd), T0 messages of 4096-byte
# bodies (4189-byte records, 4237-byte entries; T9's of 100 bytes: 193 and 241), 23601 entries to a file
PAST_2GIB_FILE = 100_000_000
PAST_2GIB_BATCH = 256
PAST_2GIB_BEFORE = 21 * 23601   # the T0 entries of the 21 files before the last
PAST_2GIB_LAST = 11207          # the T0 entries of the last file: the log then ends just past 2147483647


# the stores past 2 GiB fill the disk: above diskSpaceCleanForciblyRatio (85 %) the broker would delete their first
# files at once (CleanCommitLogService, DLedger's force clean: cleanFileForciblyEnable), whatever the scenario means
NO_FORCED_CLEAN = {"cleanFileForciblyEnable": "false"}


def past_2gib_abort_scenario(line: str) -> dict:
    """``<line>-dledger-abort-past-2gib`` (5.5.1; some 2.15 GB of data: ``DLEDGER_2GIB=1`` only): a T9 message,
    then T0 messages (4096-byte bodies, put in batches of 256) over 21 data files of 100,000,000 bytes and
    11207 entries of the 22nd, then a last T9 message, whose entry ends 653 bytes past 2147483647; restarted after
    a crash with ``recheckReputOffsetFromCq=true``.  The walk starts at the last data file (the checkpoint at the
    log's end), its short ``processOffset`` (48 bytes short per entry, some 538 KB) lies below 2147483647, the
    cut takes T9's one unit there and leaves T9's queue file with its ``fillPreBlank`` unit only (its max:
    2147483647), and T0's last units; ``doRecheckReputOffsetFromCq`` sets the reput at 2147483647, inside the
    body of the last T0 entry."""
    conf = {**config(line), **THOROUGH_CHECKPOINT, **NO_FORCED_CLEAN, "mappedFileSizeCommitLog": str(PAST_2GIB_FILE),
            "mappedFileSizeConsumeQueue": "6000000", "maxIndexNum": "4000"}
    t0 = PAST_2GIB_BEFORE + PAST_2GIB_LAST
    messages = [{"topic": "T9", "queueId": 0, "bodySize": 100}]
    for k in range(0, t0, PAST_2GIB_BATCH):
        n = min(PAST_2GIB_BATCH, t0 - k)
        messages.append({"topic": "T0", "queueId": 0, "batch": [{"bodySize": 4096}] * n})
    messages.append({"topic": "T9", "queueId": 0, "bodySize": 100})
    # the walk's start is the checkpoint's (its last data file), not the first data file the harness otherwise
    # pins a 5.3.3 crash store's walk to (WalkStart.firstFile)
    return {"config": conf, "messages": messages, "abort": True, "reportQueues": True, "crashWalkFromCheckpoint": True,
            "name": f"{line}-dledger-abort-past-2gib"}


PAST_2GIB_OLD = 21 * 23872 + 11400   # the old files' T0 messages: past 2147483647 in the 22nd (4189 bytes each)


def converted_past_2gib_abort_scenario(line: str) -> dict:
    """``<line>-dledger-abort-converted-past-2gib`` (5.5.1; some 2.15 GB of old commitlog: ``DLEDGER_2GIB_CONVERTED=1``
    only): a store converted in place whose old ``commitlog/`` files (100,000,000 bytes each) hold a T9 message,
    then T0 messages (4096-byte bodies, put in batches of 256) up to some 270 KB past 2147483647 in the 22nd file,
    and whose one DLedger data file (from 2,200,000,000) holds ten prepared T1 messages, then a T9 message;
    restarted after a crash with ``recheckReputOffsetFromCq=true``.  The walk over the data file queues the T9
    message only (after a ``fillPreBlank`` unit: its queue offset is 1); its short ``processOffset`` (48 bytes
    short per entry) lies below that message, so ``truncateDirtyLogicFiles`` leaves T9's queue with its
    ``fillPreBlank`` unit only (its max 2147483647), and ``doRecheckReputOffsetFromCq`` sets the reput at
    2147483647, inside a T0 body of the last old file: ``DLedgerCommitLog``'s check fails there, ``doReput`` jumps
    to that file's end, the first data file, puts T9's cut unit back and indexes its keys again (the last indexed
    record: the cut leaves the unit's bytes in the file, so the index shows where the reput went on)."""
    conf = {**config(line), **THOROUGH_CHECKPOINT, **NO_FORCED_CLEAN, "mappedFileSizeCommitLog": str(PAST_2GIB_FILE),
            "mappedFileSizeConsumeQueue": "6000000", "maxIndexNum": "4000"}
    messages: list[dict] = [{"topic": "T9", "queueId": 0, "bodySize": 100}]
    for k in range(0, PAST_2GIB_OLD, PAST_2GIB_BATCH):
        n = min(PAST_2GIB_BATCH, PAST_2GIB_OLD - k)
        messages.append({"topic": "T0", "queueId": 0, "batch": [{"bodySize": 4096}] * n})
    messages.append({"switchToDLedger": True})
    messages += [{"topic": "T1", "queueId": 0, "bodySize": 100, "tranType": "prepared", "keys": f"P{k}"}
                 for k in range(10)]
    messages.append({"topic": "T9", "queueId": 0, "bodySize": 100, "keys": "K9"})   # indexed again by the reput
    return {"config": conf, "messages": messages, "abort": True, "reportQueues": True,
            "name": f"{line}-dledger-abort-converted-past-2gib"}


PAST_2GIB_DATA0_T0 = 23590   # -two-files: the T0 entries of the first data file (4237 bytes each), then prepared


def converted_past_2gib_two_files_abort_scenario(line: str) -> dict:
    """``<line>-dledger-abort-converted-past-2gib-two-files`` (5.5.1, ``DLEDGER_2GIB_CONVERTED=1``): the
    ``-converted-past-2gib`` store with two DLedger data files: the first holds a T9 message, 23590 T0 messages
    (4096-byte bodies) and prepared T1 messages (4096-byte bodies, no keys) until one no longer fits, the second the
    rest of those, the ten small prepared T1 messages and the last T9 message.  The walk starts at the second (its
    first message at or below the checkpoint's ``logicsPhysicalOffset``), the cut leaves T9's two ``fillPreBlank``
    units only (its max 2147483647), the reput set at 2147483647 in the last old file goes on at its end, the first
    data file, before the walk's: it drops the first data file's T9 unit (past 2147483647, but its queue offset 1
    below the queue's write position: ``putMessagePositionInfo``'s "Build consume queue repeatedly"), puts T0's
    units there (a queue the walk did not write, ``fillPreBlank`` units before them), then walks the walk's records
    again and puts T9's cut unit back."""
    sc = converted_past_2gib_abort_scenario(line)
    k = next(n for n, m in enumerate(sc["messages"]) if m.get("switchToDLedger"))
    data0: list[dict] = [{"topic": "T9", "queueId": 0, "bodySize": 100}]   # its unit a repeat for the reput
    for n in range(0, PAST_2GIB_DATA0_T0, PAST_2GIB_BATCH):
        data0.append({"topic": "T0", "queueId": 0, "batch": [{"bodySize": 4096}] * min(PAST_2GIB_BATCH,
                                                                                          PAST_2GIB_DATA0_T0 - n)})
    data0 += [{"topic": "T1", "queueId": 0, "bodySize": 4096, "tranType": "prepared"} for _ in range(30)]
    messages = [*sc["messages"][:k + 1], *data0, *sc["messages"][k + 1:]]
    return {**sc, "messages": messages, "name": f"{line}-dledger-abort-converted-past-2gib-two-files"}


def converted_past_2gib_next_old_abort_scenario(line: str) -> dict:
    """``<line>-dledger-abort-converted-past-2gib-next-old`` (5.5.1, ``DLEDGER_2GIB_CONVERTED=1``): the
    ``-converted-past-2gib`` store with 12572 more T0 messages (some 53 MB; batches roll whole, so some 1500 of them
    go to a 23rd old file): 2147483647 lies in an old file but the last, whose end the reput goes on at, the last
    old file's start;
    it walks that file's T0 records (their units put: a queue the walk did not write, ``fillPreBlank`` units before
    them) as the base ``CommitLog`` wrote them, rolls at its blank into the data file and puts T9's cut unit back."""
    sc = converted_past_2gib_abort_scenario(line)
    k = next(n for n, m in enumerate(sc["messages"]) if m.get("switchToDLedger"))
    more = 22 * 23872 + 100 - PAST_2GIB_OLD
    extra = [{"topic": "T0", "queueId": 0, "batch": [{"bodySize": 4096}] * min(PAST_2GIB_BATCH, more - n)}
             for n in range(0, more, PAST_2GIB_BATCH)]
    messages = [*sc["messages"][:k], *extra, *sc["messages"][k:]]
    return {**sc, "messages": messages, "name": f"{line}-dledger-abort-converted-past-2gib-next-old"}


def _mixed(g: Messages, i: int) -> dict:
    """Every sixth a batch, then delayed messages (levels past the last one too: the broker takes the
    last) and transactions, a prepared one delayed too (the broker does not move it)."""
    kind = i % 6
    if kind == 0:
        return g.batch(g.rng.randint(2, 5))
    if kind == 1:
        return g.one(keyed=True, delayLevel=g.rng.randint(1, 20))
    if kind == 2:
        return g.one(keyed=True, tranType="prepared", **({"delayLevel": 3} if i % 12 == 2 else {}))
    if kind == 3:
        return g.one(keyed=True, tranType="commit", **({"delayLevel": 2} if i % 12 == 9 else {}))
    if kind == 4:
        return g.one(keyed=True, tranType="rollback")
    return g.one(keyed=True)


def cleanup_scenarios(line: str) -> list[dict]:
    """The stores of the DLedger cleanup test (:mod:`test_dledger_cleanup_broker`), named
    ``<line>-dledger-cleanup-<what>``: ``many`` (140 keyed messages over six or so data files) and
    ``converted`` (two old commitlog files, then about four DLedger data files)."""
    topics = _topics(line)
    g = Messages(11, topics)
    many = {"config": config(line), "messages": [g.one(keyed=True) for _ in range(140)]}
    g = Messages(12, topics)
    before = [g.one(keyed=True) for _ in range(40)]   # a little over one 64 KiB file: two old files
    after = [g.one(keyed=True) for _ in range(100)]
    converted = {"config": config(line), "messages": [*before, {"switchToDLedger": True}, *after]}
    return [{**sc, "name": f"{line}-dledger-cleanup-{what}"} for what, sc in (("many", many), ("converted", converted))]
