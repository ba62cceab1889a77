"""5.x ``enableBuildConsumeQueueConcurrently=true`` on a damaged commitlog, checked against the broker's
``ConcurrentReputMessageService``.

The JVM harness (:mod:`broker_harness`, ``reputDamage``: ``tests/broker/src/common/harness/ReputOnly.java``)
writes a store with the published RocketMQ store, deletes ``consumequeue/`` and ``index/``, opens it
again with the recovery's dispatch switched off, damages one record in the middle of the commitlog (a
segment with more after it) and lets the broker's reput alone dispatch from the commitlog's min offset
until it stands still: what a plain ``rebuild`` models.  Damages: an illegal magic code (``magic``), a
negative totalSize (``negsize``), a totalSize running past the data (``bigsize``), all in the 31st put's
record, and an illegal magic code in the first record of the third segment (``segstart``).  Each store is written
with the setting (``creput``) and without it (``sreput``: the sequential ``ReputMessageService``).

* the broker's concurrent reput stood still AT the damaged record; the sequential one went on to the end;
* ``rebuild`` with the store's broker.conf writes the broker's consume queue and index files byte for byte,
  with and without the setting;
* the broker's files with the setting differ from those without it, and so do our rebuilds of the same
  store: the comparison can fail.

Records the pre-check accepts (:mod:`store_format.concurrent_batches`), written with the setting only:
``sizeplus``, the 31st put's totalSize 8 bytes too long: the batch task's parse of the next record's first
bytes leaves 4 bytes and never ends, so nothing from the batch's start (the third segment's) on is dispatched;
``reach12``, that totalSize reaching 12 bytes into the record after the next one: the task reads the next record
whole, then never ends on 5.5.1 (nothing from the batch's start on), while on 5.3.3 it ends and the next record
is dispatched, and nothing after it; ``reach20`` (20 bytes): the task ends on both lines, the next record
dispatched; ``toend``, the last
record before the third segment's blank made to reach that file's end: the pre-check's walk goes on into the
next file, but the task reads the blank's magic code and then never ends, so the reput thread waits for it
for ever (nothing from the segment's start on); and a DLedger store converted in place (``dledger-converted``):
the old commitlog is dispatched, the DLedger entries never (the pre-check reads an entry header as a record's).
On a slave (``brokerId=1``), a record the sequential reput cannot read and the pre-check reads as 0 (``slaveblank``:
a blank whose totalSize runs past its file's end): the sequential reput stays there for good, the concurrent one
rolls to the next file and goes on, each rebuilt byte for byte.  The last segment's first record made a blank
whose totalSize runs past the data but not past its file (``lastblank``): the concurrent reput stood AT it, and
nothing after it is dispatched by either reput or by ``rebuild``, whose row there says so.  Every task holding
the damaged bytes ends and the pre-check's walk goes on into the next file (``blankon``: the last record before the
second segment's blank made to reach that file's end; the task reads the blank's magic code, whose empty request
the broker dispatches into the consume queue of topic "" queue 0, ``consumequeue/0/``): the reput goes on there
to the end, and ``rebuild`` writes the broker's files byte for byte; ``blankonext``, the same with consume queue ext
files (the empty request's ext unit in ``consumequeue_ext/0/``, its address the unit's tagsCode).
``CONCURRENT_REPUT_MORE=1`` adds
``rollon`` (the record before that one made to reach the blank: the pre-check rolls on, no blank read by the
task), ``blankonrdbidx`` (5.5: ``blankon`` with the RocksDB index, which takes nothing from the empty request),
``blankonfirst`` (the first segment's second record made to reach that file's end: the only record before it in
its slice put its keys at offset 0), ``blankonrdbcq`` (``blankon`` with a RocksDB consume queue: the empty
request's unit and max entry), ``sizeminus`` (8 bytes too short), ``size12`` (12 bytes too long: the next
record's magic code read as a totalSize; 5.3.3's task reads on and ends, 5.5.1 rejects the negative totalSize after
4 bytes and never ends),
a DLedger store without old files (``dledger-plain``), ``slavezero`` (a record's totalSize set to 0 on a
slave), ``lastblank`` without the setting, and ``laterhung`` (5 MiB segments: the damaged record's batch, past
4 MiB, ends with a blank's magic code read and the next batch's task never ends: the first batch's requests,
its empty request among them, are dispatched, nothing after), ``blankononly`` (a blank's empty request is all the
store dispatches: the index file it creates) and ``blankontwo`` (two damaged spots: two stops); the batch task
reading records whole inside the damaged bytes where the sequential reput reads none (``skipread``, ``skipreadtwo``,
``skipreadstop``, ``skipreadext``, ``skipreadslave``: an illegal magic code after a damaged totalSize that lands the
pre-check on a real record further on; ``skipreadhung``: before a later batch whose task never ends; ``skipreadblank``:
with a blank's empty request from the same task; ``skipreadthen``: before a later stop), each also rebuilt with
``--engine local`` at small splits, verified and repaired; and the empty-request endings ``blankonmanyext`` (more
than one ext file holds), ``blankonfirstreq`` (the store's first dispatched request, records following) and
``blankonidxfull`` (dispatched last after the key that filled an index file exactly).

5.5.1 by default; ``CONCURRENT_REPUT_LINES=5.3.3,5.5.1`` adds 5.3.3; ``CONCURRENT_REPUT_ONLY`` (a comma list of
scenario name endings, such as ``skipread,skipreadhung``) writes only those scenarios.
"""
from __future__ import annotations

import base64
import json
import os
import shutil
from pathlib import Path

import broker_dledger_scenarios as dls
import broker_harness as bh
import numpy as np
import pytest
from broker_layout_scenarios import Messages

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

LINES = bh.lines_from_env("CONCURRENT_REPUT_LINES", "5.5.1")
SEGMENT = 8192
# the damaged record: the 31st put's (inside the third of six segments), or the first record of the third segment
DAMAGES = {"magic": ("magic", 0x0BADBEEF, {"message": 30}), "negsize": ("totalSize", -8, {"message": 30}),
           "bigsize": ("totalSize", 1 << 20, {"message": 30}),
           "segstart": ("magic", 0x0BADBEEF, {"offset": 2 * SEGMENT})}


# records the pre-check accepts, written with the setting only: the 31st put's totalSize moved by a delta, or
# set to reach past the record after the next one by 12 bytes (``reach12``), or the last record before the third
# segment's blank set to reach the end of that file (``toend``)
def _delta(n: int) -> dict:
    return {"message": 30, "field": "totalSizeDelta", "value": n}


ACCEPTED = {"sizeplus": _delta(8), "reach12": {"message": 30, "field": "totalSizeReach", "value": 2, "plus": 12},
            "reach20": {"message": 30, "field": "totalSizeReach", "value": 2, "plus": 20},
            "toend": {"segmentLast": 2, "field": "totalSizeReach", "value": 2},
            **({"sizeminus": _delta(-8), "size12": _delta(12)} if os.environ.get("CONCURRENT_REPUT_MORE") else {})}
# ... where the batch task reads the next record whole and then ends, so that the broker dispatches it: ``reach20``
# (the junk after it read 8 bytes at a time up to the batch's end: a queueId read as a small totalSize, its flag as
# a magic code), and ``reach12`` on 5.3.3
READ_WHOLE = {("5.3.3", "reach12"), ("5.3.3", "reach20"), ("5.5.1", "reach20")}
DLEDGER = ("converted", *(("plain",) if os.environ.get("CONCURRENT_REPUT_MORE") else ()))
# on a slave (brokerId=1, brokerRole=SLAVE), the 31st put's record made one the pre-check reads as 0: a blank whose
# totalSize runs 4 bytes past its file's end (``blank``: the sequential checkMessageAndReturnSize cannot read it),
# or a record with totalSize 0 (``zero``, with CONCURRENT_REPUT_MORE); each with the setting and without it
SLAVE = {"blank": {"message": 30, "field": "blankPast", "value": 4},
         **({"zero": {"message": 30, "field": "totalSize", "value": 0}} if os.environ.get("CONCURRENT_REPUT_MORE")
            else {})}

# every batch task ends and the pre-check's walk goes on into the next file, where the reput goes on
# (``Segment.resume``): the last record before the second segment's blank made to reach that file's end, its blank
# then read by the task (an empty request dispatched: the unit of zeros of topic "" queue 0) and the zeros after it
# 8 bytes at a time to the end (``blankon``: the blank there starts 256 bytes before the file's end, a multiple of
# 8); with CONCURRENT_REPUT_MORE, the record before that one made to reach the blank (``rollon``: the pre-check
# reads the blank and rolls on, the task reads the next record whole and ends)
# (damage, settings added to the scenario's, scenario keys added)
BLANKON = {"segmentLast": 1, "field": "totalSizeReach", "value": 2}
ONWARD = {"blankon": (BLANKON, {}, {}),
          # the same with consume queue ext files (tiny: more than one a queue): the empty request's ext unit,
          # whose address is its consume queue unit's tagsCode (consumequeue_ext/0/)
          "blankonext": (BLANKON, {"enableConsumeQueueExt": "true", "mappedFileSizeConsumeQueueExt": "204"}, {}),
          **({"rollon": ({"offset": SEGMENT + 7220, "field": "totalSizeReach", "value": 2}, {}, {}),
              # 5.5 only: the RocksDB index (IndexRocksDBStore.buildIndex leaves a request of size 0), its
              # database dropped before the reput (else the writer's run left every record's keys there)
              "blankonrdbidx": (BLANKON, {"indexRocksDBEnable": "true"}, {"dropRocksdbStore": True}),
              # the first segment's second record (commitlog offset 225) made to reach that file's end, in a
              # store without the 9th put (so that the first segment's blank, 128 bytes, ends on a multiple of
              # 8): the one record before it in its slice put its keys at offset 0 only
              "blankonfirst": ({"offset": 225, "field": "totalSizeReach", "value": 13}, {}, {"drop": 8}),
              # a RocksDB consume queue (no index: the broker's reput from offset 0 indexes the record there,
              # which a rebuild into an empty database never dispatches): the empty request's unit and max entry
              "blankonrdbcq": (BLANKON, {"storeType": "defaultRocksDB", "messageIndexEnable": "false"}, {}),
              # blankonfirst's damage from the store's first record on, and the second segment's first record's
              # magic code made illegal: the task reads the records after it whole, and the blank's magic code at
              # the first segment's end; then the reput stops for good (two stops)
              "blankontwo": ({"offset": 0, "field": "totalSizeReach", "value": 14,
                              "also": [{"offset": SEGMENT, "field": "magic", "value": 0x0BADC0DE}]}, {}, {"drop": 8})}
             if os.environ.get("CONCURRENT_REPUT_MORE") else {})}

# CONCURRENT_REPUT_MORE: the batch task reads records whole inside the damaged bytes at other positions than the
# sequential reput.  ``skipread``: the 31st put's totalSize made to reach the 33rd put's record (a real record
# boundary, where the pre-check's walk goes on to the file's blank) and the 32nd put's magic code made illegal.  The
# task's parse of the damaged record stops at its structural end (a size mismatch), the next one at that illegal
# magic code, and the task reads on from there 4 or 8 bytes at a time until it meets a record's header (the 35th
# put's), then the rest of the file whole; the sequential reput skips the rest of the slice at the illegal magic
# code.  Every task ends and the reput goes on in the next file.  ``skipreadtwo``: the totalSize reaching the 34th
# put's record and the 33rd put's magic code illegal (the walk reads the 32nd put's record, the task that one and
# then the records from the 37th put's on: two runs); ``skipreadstop``: ``skipread`` with the 37th put's magic code
# illegal too (the pre-check stays there for good: a stop for good after the records the task read whole);
# ``skipreadext``: ``skipread`` with consume queue ext files; ``skipreadslave``: ``skipread`` on a slave (brokerId=1).
# (damage, settings added to the scenario's)
BAD = 0x0BADBEEF
SKIP = {"message": 30, "field": "totalSizeReach", "value": 2, "also": [{"message": 31, "field": "magic", "value": BAD}]}
SKIP_READ = ({"skipread": (SKIP, {}),
              "skipreadtwo": ({**SKIP, "value": 3, "also": [{"message": 32, "field": "magic", "value": BAD}]}, {}),
              "skipreadstop": ({**SKIP, "also": [*SKIP["also"], {"message": 36, "field": "magic", "value": BAD}]},
                               {}),
              "skipreadext": (SKIP, {"enableConsumeQueueExt": "true", "mappedFileSizeConsumeQueueExt": "204"}),
              # on a slave, whose sequential reput stays at the damaged record for good
              "skipreadslave": (SKIP, {"brokerId": "1", "brokerRole": "SLAVE"})}
             if os.environ.get("CONCURRENT_REPUT_MORE") else {})

# CONCURRENT_REPUT_MORE: ``skipreadhung``, records read whole at other positions than the sequential walk's in a batch
# whose task ends, followed by a later batch whose task never ends (5 MiB segments).  The second put's totalSize made
# to reach the fourth put's record and the third put's magic code illegal (skipread's damage); six small puts, then
# five of 900,000-byte bodies, with which the damaged record's batch passes 4 MiB and is handed over (its task reads
# from one of the small records on whole, up to that batch's end); then a small put and one whose totalSize is made
# 1,000,000 bytes longer, past the file's end but not past the data's: the pre-check's walk hands the batch of those
# two over in doReput's finally, whose task's limit() throws (never put), so DispatchService dispatches the first
# batch's requests and nothing after, and the reput thread waits for ever.
SKIP_HUNG = {"message": 1, "field": "totalSizeReach", "value": 2,
             "also": [{"message": 2, "field": "magic", "value": BAD},
                      {"message": 15, "field": "totalSizeDelta", "value": 1_000_000}]}


def _skip_read_hung(line: str) -> dict:
    g = Messages(41, ["T0", "T1", "T2"])
    big = [{**{k: v for k, v in g.one().items() if k != "body"}, "bodySize": 900_000} for _ in range(5)]
    puts = [*(g.one() for _ in range(9)), *big, *(g.one() for _ in range(6)),
            {**{k: v for k, v in g.one().items() if k != "body"}, "bodySize": 900_000},   # into the next segment
            *(g.one() for _ in range(6))]
    config = {"mappedFileSizeCommitLog": str(LATER_SEGMENT), "mappedFileSizeConsumeQueue": "120",
              "maxHashSlotNum": "101", "maxIndexNum": "400", "enableBuildConsumeQueueConcurrently": "true"}
    return {"name": f"{line}-creput-skipreadhung", "messages": puts, "config": config, "reputDamage": SKIP_HUNG}


# CONCURRENT_REPUT_MORE: ``skipreadblank``, the second segment's second record (the 15th put's) made to reach that
# file's end and the next put's magic code illegal: the task reads records whole from a later one on (where the
# sequential reput reads none), then the blank's magic code (its empty request, 248 bytes of zeros after it read 8
# at a time): records read alone and an empty request from one task; the reput goes on at the next file.
# ``skipreadthen``: ``skipread``'s damage and the fifth segment's first magic code illegal: the reput goes on past
# the records read alone, through the fourth segment, and stops there for good (a second stop)
SKIP_READ_BLANK = ({"skipreadblank": {"message": 14, "field": "totalSizeReach", "value": 14,
                                      "also": [{"message": 15, "field": "magic", "value": BAD}]},
                    "skipreadthen": {**SKIP, "also": [*SKIP["also"], {"offset": 4 * SEGMENT, "field": "magic",
                                                                       "value": BAD}]}}
                   if os.environ.get("CONCURRENT_REPUT_MORE") else {})


# the first record of the last segment made a blank whose totalSize ends 16 bytes before its file's end, past the
# data (``lastblank``; its sequential control with CONCURRENT_REPUT_MORE)
LAST_BLANK = {"offset": 5 * SEGMENT, "field": "blankPast", "value": -16}


# ``laterhung``: 5 MiB segments; the second put's totalSize made to reach 96 bytes into the 8th put's record (after
# five puts of 900,000-byte bodies: the batch holding it passes 4 MiB there and is handed over).  That batch's task
# reads the five whole, then the 8th put's header cut by the batch's end 4 or 8 bytes at a time up to its body
# (whatever its timestamps), where the body's first 8 bytes are a blank's header (its empty request) ending the
# batch; the pre-check's walk goes on at body[8:], a 10-byte "record" (a V1 magic code) whose own batch's task
# reads 8 bytes, leaves 2 and never ends; after it, zeros: an illegal magic code, where the pre-check stays
LATER_BODY = bytes.fromhex("00000008CBD43194" "0000000ADAA320A7") + bytes(48)
LATER_SEGMENT = 5 * 1024 * 1024


def _later_hung(line: str) -> dict:
    g = Messages(31, ["T0", "T1", "T2"])
    big = [{**{k: v for k, v in g.one().items() if k != "body"}, "bodySize": 900_000} for _ in range(5)]
    puts = [g.one(), g.one(), *big,
            {"topic": "T1", "queueId": 0, "body": base64.b64encode(LATER_BODY).decode(), "bornTimestamp": 1700000000000,
             "uniqKey": "7F00000100002A9F0000AAAAAAAAAAAA"},
            *(g.one() for _ in range(5)),
            {**{k: v for k, v in g.one().items() if k != "body"}, "bodySize": 900_000},   # into the next segment
            *(g.one() for _ in range(6))]
    config = {"mappedFileSizeCommitLog": str(LATER_SEGMENT), "mappedFileSizeConsumeQueue": "120",
              "maxHashSlotNum": "101", "maxIndexNum": "400", "enableBuildConsumeQueueConcurrently": "true"}
    return {"name": f"{line}-creput-laterhung", "messages": puts, "config": config,
            "rebuildArgs": ["--split-size", "1m"],
            "reputDamage": {"message": 1, "field": "totalSizeReach", "value": 6, "plus": 96}}


# ``blankononly``: a first record of 8,056 bytes (its body 7,911), then the first segment's blank of 136 bytes; that
# record's totalSize made to reach the file's end and the second segment's first record's magic code made illegal:
# the task parsing it goes on at its own end and reads the blank's magic code, nothing else; then the reput stops
# for good.  The blank's empty request is all the store dispatches
ONLY_BODY = 7911


def _only_empty(line: str, config: dict, first_only: bool = False) -> dict:
    """``blankononly``, or with the second segment left whole (``blankonfirstreq``: the empty request is the store's
    first dispatched request, the records of the later segments follow)."""
    g = Messages(37, ["T0", "T1", "T2"])
    first = {"topic": "T1", "queueId": 0, "bodySize": ONLY_BODY, "uniqKey": "7F00000100002A9F0000BBBBBBBBBBBB",
             "keys": "only"}
    also = {} if first_only else {"also": [{"offset": SEGMENT, "field": "magic", "value": 0x0BADC0DE}]}
    return {"name": f"{line}-creput-blankon{'firstreq' if first_only else 'only'}",
            "messages": [first, *(g.one() for _ in range(14))],
            "config": {**config, "enableBuildConsumeQueueConcurrently": "true"},
            "reputDamage": {"offset": 0, "field": "totalSizeReach", "value": 2, **also}}


# CONCURRENT_REPUT_MORE: the empty-request endings that followed the source alone.  ``blankonmanyext``: ``blankon``'s
# damage, and the same at the fourth segment's end (the 56th put's record, the last before that file's blank, which
# starts 504 bytes before its end), with 24-byte consume queue ext files (one unit each): two empty requests, two ext
# files in consumequeue_ext/0/.  ``blankonfirstreq`` (:func:`_only_empty`).  ``blankonidxfull``: ``blankon``'s
# damage and the third segment's first record's magic code illegal, maxIndexNum set so that the records before the
# damaged one fill the first index file exactly (their keys: 62 on 5.5.1, 42 on 5.3.3, whose index takes fewer):
# the empty request, dispatched last, creates the second index file, with no entry.
IDX_FULL = {"5.5.1": "63", "5.3.3": "43"}
EMPTY_ENDINGS = ("blankonmanyext", "blankonfirstreq", "blankonidxfull") if os.environ.get("CONCURRENT_REPUT_MORE") \
    else ()


def _empty_endings(line: str, messages: list[dict], config: dict) -> list[dict]:
    if not EMPTY_ENDINGS:
        return []
    conf = {**config, "enableBuildConsumeQueueConcurrently": "true"}
    return [{"name": f"{line}-creput-blankonmanyext", "messages": messages,
             "config": {**conf, "enableConsumeQueueExt": "true", "mappedFileSizeConsumeQueueExt": "24"},
             "reputDamage": {**BLANKON, "also": [{"message": 55, "field": "totalSizeReach", "value": 2}]}},
            _only_empty(line, config, first_only=True),
            {"name": f"{line}-creput-blankonidxfull", "messages": messages,
             "config": {**conf, "maxIndexNum": IDX_FULL[line]},
             "reputDamage": {**BLANKON, "also": [{"offset": 2 * SEGMENT, "field": "magic", "value": 0x0BADC0DE}]}}]


def _scenarios(line: str) -> list[dict]:
    g = Messages(23, ["T0", "T1", "T2"])
    messages = [g.one() for _ in range(70)]
    config = {"mappedFileSizeCommitLog": str(SEGMENT), "mappedFileSizeConsumeQueue": "120", "maxHashSlotNum": "101",
              "maxIndexNum": "400"}
    out = []
    for what, (field, value, where) in DAMAGES.items():
        for reput, on in (("creput", "true"), ("sreput", "false")):
            out.append({"name": f"{line}-{reput}-{what}", "messages": messages,
                        "config": {**config, "enableBuildConsumeQueueConcurrently": on},
                        "reputDamage": {**where, "field": field, "value": value}})
    for what, damage in ACCEPTED.items():
        out.append({"name": f"{line}-creput-{what}", "messages": messages,
                    "config": {**config, "enableBuildConsumeQueueConcurrently": "true"}, "reputDamage": damage})
    for what, damage in SLAVE.items():
        for reput, on in (("creput", "true"), ("sreput", "false")):
            out.append({"name": f"{line}-{reput}-slave{what}", "messages": messages,
                        "config": {**config, "brokerId": "1", "brokerRole": "SLAVE",
                                   "enableBuildConsumeQueueConcurrently": on}, "reputDamage": damage})
    for what, (damage, extra, keys) in ONWARD.items():
        if what.endswith("rdbidx") and not line.startswith("5.5"):
            continue
        conf = {**config, **extra, "enableBuildConsumeQueueConcurrently": "true"}
        puts = [m for i, m in enumerate(messages) if i != keys.get("drop")]
        out.append({"name": f"{line}-creput-{what}", "messages": puts, "config": conf, "reputDamage": damage,
                    **{k: v for k, v in keys.items() if k != "drop"}})
    for reput in ("creput", "sreput") if os.environ.get("CONCURRENT_REPUT_MORE") else ("creput",):
        out.append({"name": f"{line}-{reput}-lastblank", "messages": messages,
                    "config": {**config, "enableBuildConsumeQueueConcurrently": str(reput == "creput").lower()},
                    "reputDamage": LAST_BLANK})
    if os.environ.get("CONCURRENT_REPUT_MORE"):
        out += [_later_hung(line), _only_empty(line, config), _skip_read_hung(line)]
    out += _empty_endings(line, messages, config)
    for what, damage in SKIP_READ_BLANK.items():
        out.append({"name": f"{line}-creput-{what}", "messages": messages, "reputDamage": damage,
                    "config": {**config, "enableBuildConsumeQueueConcurrently": "true"}})
    for what, (damage, extra) in SKIP_READ.items():
        out.append({"name": f"{line}-creput-{what}", "messages": messages, "reputDamage": damage,
                    "config": {**config, **extra, "enableBuildConsumeQueueConcurrently": "true"}})
    for sc in dls.dledger_scenarios(line):
        what = sc["name"].rsplit("-", 1)[-1]
        if what in DLEDGER:   # without recheckReputOffsetFromCq, whose wait in start() never ends here
            conf = {**sc["config"], "recheckReputOffsetFromCq": "false", "enableBuildConsumeQueueConcurrently": "true"}
            out.append({"name": f"{line}-creput-dledger-{what}", "messages": sc["messages"], "config": conf,
                        "reputDamage": {"offset": 0, "field": "none", "value": 0}})
    only = os.environ.get("CONCURRENT_REPUT_ONLY")   # targeted runs: the scenarios whose last name part is listed
    return [sc for sc in out if sc["name"].rsplit("-", 1)[-1] in only.split(",")] if only else out


SCENARIOS = {line: _scenarios(line) for line in LINES}
CASES = [pytest.param(line, sc["name"], id=sc["name"]) for line, scs in SCENARIOS.items() for sc in scs
         if sc["name"].rsplit("-", 1)[-1] in DAMAGES]
NEW_CASES = [pytest.param(line, sc["name"], id=sc["name"]) for line, scs in SCENARIOS.items() for sc in scs
             if sc["name"].rsplit("-", 1)[-1] not in DAMAGES and "-slave" not in sc["name"]
             and not sc["name"].endswith(("-lastblank", "-laterhung", "-blankononly", "-skipreadhung"))
             and sc["name"].rsplit("-", 1)[-1] not in (*ONWARD, *SKIP_READ, *SKIP_READ_BLANK, *EMPTY_ENDINGS)]
ONWARD_CASES = [pytest.param(line, sc["name"], id=sc["name"]) for line, scs in SCENARIOS.items() for sc in scs
                if sc["name"].rsplit("-", 1)[-1] in ONWARD and not sc["name"].endswith(("rdbcq", "blankontwo"))]


def _cases_or_skip(ending: str, what: str) -> list:
    """The (line, name) cases of the scenarios whose name ends with ``ending``, or one skipped case saying how to
    run ``what`` when the default suite writes none."""
    return [pytest.param(line, sc["name"], id=sc["name"]) for line, scs in SCENARIOS.items() for sc in scs
            if sc["name"].endswith(ending)] or [
        pytest.param(None, None, marks=pytest.mark.skip(reason=f"{what} runs with CONCURRENT_REPUT_MORE=1"))]


RDBCQ_CASES = _cases_or_skip("-blankonrdbcq", "the RocksDB consume queue's empty request")
SLAVE_CASES = [pytest.param(line, sc["name"], id=sc["name"]) for line, scs in SCENARIOS.items() for sc in scs
               if "-slave" in sc["name"]]
_RUNS: dict[str, dict] = {}


def _write_all(request, tmp_path_factory) -> None:  # noqa: ANN001
    """Every scenario written by the broker and rebuilt by us, once."""
    if _RUNS:
        return
    work = tmp_path_factory.mktemp("concurrent-reput")
    _RUNS.update(bh.write_lines(request, SCENARIOS, work, "damaged store(s), each dispatched by the reput alone"))
    for r in _RUNS.values():
        if r["written"].get("ok"):
            r["rebuild"] = bh.rebuild(Path(r["scenario"]["dir"]), bh.BROKER_VERSION_ARG[r["line"]],
                                      *r["scenario"].get("rebuildArgs", ()))


@pytest.fixture
def reput(request, tmp_path_factory) -> dict:
    """The scenario as the broker's reput left it, and our rebuild of its store."""
    _write_all(request, tmp_path_factory)
    r = _RUNS[request.node.callspec.params["name"]]
    if not r["written"].get("ok"):
        pytest.fail(f"the broker's writer failed: {r['written'].get('error')}")
    return r


@pytest.fixture
def written(request, tmp_path_factory) -> dict[str, dict]:
    """Every scenario's run (writer failures fail the test)."""
    _write_all(request, tmp_path_factory)
    bad = {n: r["written"].get("error") for n, r in _RUNS.items() if not r["written"].get("ok")}
    if bad:
        pytest.fail(f"the broker's writer failed: {bad}")
    return _RUNS


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()) if root.is_dir() else []


def _same_files(exp: Path, ours: Path, indexes_comparable: bool) -> None:
    assert _files(exp / "consumequeue"), "the broker wrote no consume queue"
    assert _files(ours / "consumequeue") == _files(exp / "consumequeue"), "consumequeue file set differs"
    for rel in _files(exp / "consumequeue"):
        bh.same_bytes((exp / "consumequeue" / rel).read_bytes(), (ours / "consumequeue" / rel).read_bytes(), rel)
    exp_idx, our_idx = sorted((exp / "index").iterdir()), sorted((ours / "index").iterdir())
    assert len(our_idx) == len(exp_idx)
    if indexes_comparable:
        for i, (e, o) in enumerate(zip(exp_idx, our_idx)):
            bh.same_bytes(e.read_bytes(), o.read_bytes(), f"index file #{i}")


def _differ(a: Path, b: Path) -> bool:
    """Two rebuilds' consume queue or index files differ (the set, or a file's bytes)."""
    for area in ("consumequeue", "index"):
        fa, fb = _files(a / area), _files(b / area)
        if area == "index":
            fa = [p.read_bytes() for p in sorted((a / area).iterdir())]
            fb = [p.read_bytes() for p in sorted((b / area).iterdir())]
            if fa != fb:
                return True
        elif fa != fb or any((a / area / r).read_bytes() != (b / area / r).read_bytes() for r in fa):
            return True
    return False


def _summary_json(d: Path, tmp_path: Path, line: str) -> str:
    """``rebuild --json`` of the scenario's store (local engine, no tables) into ``tmp_path/o``: its stdout,
    after asserting exit code 0."""
    code, out, err = bh.cli(["rebuild", "--store", str(d / "store"), "--out", str(tmp_path / "o"), "--config",
                             str(d / "broker.conf"), "--broker-version", bh.BROKER_VERSION_ARG[line], "--no-tables",
                             "--engine", "local", "--json"])
    assert code == 0, err[-2000:]
    return out


@pytest.mark.parametrize("line,name", CASES)
def test_where_the_broker_reput_stood_still(reput, line: str, name: str) -> None:
    """The harness itself: the concurrent reput stood still at the damaged record for good, the sequential one
    at the end (``bigsize`` too: checkMessageAndReturnSize gives -1 for a totalSize past the buffer, 5.3.3 and
    5.5.1, and the master skips the rest of the slice)."""
    w = reput["written"]
    stops = "-creput-" in name
    assert w["reputStoodAt"] == (w["damagedRecord"] if stops else w["maxPhyOffset"]), w
    assert w["damagedRecord"] < w["maxPhyOffset"] - SEGMENT, "the damage is not in the middle of the commitlog"


@pytest.mark.parametrize("line,name", CASES)
def test_rebuild_matches_the_broker_reput(reput, line: str, name: str) -> None:
    """``rebuild`` of the damaged store (its broker.conf) writes the broker's files byte for byte; with the
    setting its summary says where the concurrent reput stops for good."""
    r = reput["rebuild"]
    assert r["code"] == 0, r["stderr"][-2000:]
    d = Path(reput["scenario"]["dir"])
    _same_files(d / "expected", d / "ours", reput["written"]["indexNamesUnique"])


@pytest.mark.parametrize("line,name", [c for c in CASES if "-creput-" in c.values[1]])
def test_the_concurrent_stop_is_reported(reput, line: str, name: str, tmp_path: Path) -> None:
    """The rebuild's summary (``--json``) has the walk's finding at the damaged record, saying the concurrent
    reput stops there for good."""
    d = Path(reput["scenario"]["dir"])
    out = _summary_json(d, tmp_path, line)
    summary = json.loads(out)
    at = [a for a in summary["anomalies"] if a["commitlog_offset"] == reput["written"]["damagedRecord"]]
    assert len(at) == 1 and "stops here for good" in at[0]["detail"], summary["anomalies"]
    assert not any(a["commitlog_offset"] > reput["written"]["damagedRecord"] for a in summary["anomalies"])


@pytest.mark.parametrize("line,what", [(ln, w) for ln in LINES for w in DAMAGES])
def test_the_two_reputs_write_different_files(written, line: str, what: str, tmp_path: Path) -> None:
    """What makes the comparison above able to fail: the broker's concurrent reput wrote other files than its
    sequential one on the same puts and damage, and so does our rebuild of the concurrent store without the
    setting."""
    conc, seq = (Path(written[f"{line}-{r}-{what}"]["scenario"]["dir"]) for r in ("creput", "sreput"))
    assert (conc / "store" / "commitlog").is_dir() and (seq / "store" / "commitlog").is_dir()
    assert _differ(conc / "expected", seq / "expected")
    ours = _rebuilt_without_the_setting(conc, line, tmp_path)
    assert _differ(conc / "expected", ours)
    # ... and what it wrote is the broker's sequential reput's on the other store (the same puts): its consume
    # queues byte for byte (the index files hold the store times, which differ between the two stores)
    exp = seq / "expected" / "consumequeue"
    assert _files(ours / "consumequeue") == _files(exp)
    for rel in _files(exp):
        bh.same_bytes((exp / rel).read_bytes(), (ours / "consumequeue" / rel).read_bytes(), rel)


@pytest.mark.parametrize("line", LINES)
def test_as_restart(written, line: str, tmp_path: Path) -> None:
    """``--as-restart`` of the damaged store: the 5.x restart's recovery checks what it dispatches and cuts at
    the damaged record, so the reput never meets it (no row about the concurrent reput; the broker's
    concurrent reput wrote the same consume queues, having stopped there)."""
    r = written[f"{line}-creput-magic"]
    d, at = Path(r["scenario"]["dir"]), r["written"]["damagedRecord"]
    code, out, err = bh.cli(["rebuild", "--store", str(d / "store"), "--out", str(tmp_path / "r"), "--as-restart",
                             "--json", "--config", str(d / "broker.conf"), "--broker-version",
                             bh.BROKER_VERSION_ARG[line], "--no-tables", "--engine", "local"])
    assert code == 0, err[-2000:]
    rows = json.loads(out)["anomalies"]
    assert [(a["kind"], a["commitlog_offset"]) for a in rows] == [("restart_discards", at)], rows
    exp = d / "expected" / "consumequeue"
    assert _files(tmp_path / "r" / "consumequeue") == _files(exp)
    for rel in _files(exp):
        bh.same_bytes((exp / rel).read_bytes(), (tmp_path / "r" / "consumequeue" / rel).read_bytes(), rel)


def _cq_max_offset(root: Path) -> int:
    """The largest commitlog offset in the consume queue files under ``root`` (-1: none)."""
    unit = np.dtype([("off", ">i8"), ("size", ">i4"), ("tag", ">i8")])
    best = -1
    for p in root.rglob("*"):
        if p.is_file():
            data = p.read_bytes()
            units = np.frombuffer(data[: len(data) // unit.itemsize * unit.itemsize], dtype=unit)
            used = units[units["size"] > 0]
            if len(used):
                best = max(best, int(used["off"].max()))
    return best


def _dledger_start(d: Path) -> int:
    """Where the DLedger data starts in the scenario's store (its first data file's name)."""
    return min(int(p.name) for p in (d / "store").glob("dledger-*/data/*") if p.name.isdigit())


@pytest.mark.parametrize("line,name", NEW_CASES)
def test_where_the_broker_stood_on_accepted_records(reput, line: str, name: str) -> None:
    """The harness itself: the pre-check stood where the damaged totalSize points; where the batch task never
    ended (a page still held: ``sizeplus`` always, ``sizeminus`` as its record's bytes fall) the broker's consume
    queues hold nothing from the damaged record's segment on (the batch started there), else nothing from the
    damaged record on; DLedger: every task ended, the reput stood at the first DLedger entry, and the
    consume queues hold the old commitlog's records only (none for ``plain``)."""
    w, d = reput["written"], Path(reput["scenario"]["dir"])
    top = _cq_max_offset(d / "expected" / "consumequeue")
    if "-dledger-" in name:
        start = _dledger_start(d)
        assert not w["reputHung"] and w["reputStoodAt"] == start, w
        assert top < start and (top >= 0) == name.endswith("converted"), top
    else:
        what = name.rsplit("-", 1)[-1]
        assert w["reputHung"] == (what in HUNG.get(line, ())), w
        assert w["reputStoodAt"] == w["damagedRecord"] + _damaged_total(d, w["damagedRecord"]), w
        if (line, what) in READ_WHOLE:   # the next record, read whole by the task, and nothing after it
            assert not w["reputHung"] and top == w["damagedRecord"] + w["damagedSize"], (w, top)
        else:
            assert 0 <= top < (w["damagedRecord"] - w["damagedRecord"] % SEGMENT if w["reputHung"]
                               else w["damagedRecord"])


# where the broker's batch task never ends: ``sizeplus`` always; ``reach12`` on 5.5.1 (after the next record, read
# whole, the next one's magic code read as a negative totalSize, 4 bytes left); ``toend``: the blank's magic code
# read, then the zeros after it 8 bytes at a time, which in this store's third segment leaves fewer than 8 at the
# end; ``sizeminus`` as its record's bytes fall (5.3.3 and 5.5.1 alike here)
HUNG = {"5.3.3": ("sizeplus", "toend", "sizeminus"), "5.5.1": ("sizeplus", "reach12", "toend", "sizeminus", "size12")}


def _damaged_total(d: Path, offset: int) -> int:
    """The damaged record's totalSize as the store holds it (where the pre-check's walk goes next)."""
    with open(d / "store" / "commitlog" / f"{offset - offset % SEGMENT:020d}", "rb") as f:
        f.seek(offset % SEGMENT)
        return int.from_bytes(f.read(4), "big", signed=True)


@pytest.mark.parametrize("line,name", NEW_CASES)
def test_rebuild_matches_the_broker_on_accepted_records(reput, line: str, name: str, tmp_path: Path) -> None:
    """``rebuild`` writes the broker's files byte for byte, and its summary's row at the damaged record (the
    first DLedger entry) says where the concurrent reput stops for good."""
    r = reput["rebuild"]
    assert r["code"] == 0, r["stderr"][-2000:]
    d = Path(reput["scenario"]["dir"])
    if (d / "expected" / "consumequeue").is_dir() and _files(d / "expected" / "consumequeue"):
        _same_files(d / "expected", d / "ours", reput["written"]["indexNamesUnique"])
    else:
        assert not _files(d / "ours" / "consumequeue")
        assert [p.read_bytes() for p in sorted((d / "expected" / "index").iterdir())] == \
            [p.read_bytes() for p in sorted((d / "ours" / "index").iterdir())]
    out = _summary_json(d, tmp_path, line)
    at = _dledger_start(d) if "-dledger-" in name else reput["written"]["damagedRecord"]
    found = json.loads(out)["anomalies"]
    rows = [a for a in found if "stops here for good" in (a["detail"] or "")]
    assert [a["commitlog_offset"] for a in rows] == [at], rows
    assert [a["commitlog_offset"] for a in found].count(at) == 1, found
    assert ("never ends" in rows[0]["detail"]) == reput["written"]["reputHung"], rows
    assert ("of the damaged bytes whole" in rows[0]["detail"]) == ((line, name.rsplit("-", 1)[-1]) in READ_WHOLE), rows


def _rebuilt_without_the_setting(d: Path, line: str, tmp_path: Path) -> Path:
    """Our rebuild of the scenario's store with ``enableBuildConsumeQueueConcurrently=false``: its output folder."""
    conf = tmp_path / "broker.conf"
    conf.write_text((d / "broker.conf").read_text().replace("enableBuildConsumeQueueConcurrently=true",
                                                              "enableBuildConsumeQueueConcurrently=false"))
    code, _, err = bh.cli(["rebuild", "--store", str(d / "store"), "--out", str(tmp_path / "seq"), "--config",
                           str(conf), "--broker-version", bh.BROKER_VERSION_ARG[line], "--no-tables", "--engine",
                           "local"])
    assert code == 0, err[-2000:]
    return tmp_path / "seq"


@pytest.mark.parametrize("line", LINES)
def test_an_accepted_record_without_the_setting(written, line: str, tmp_path: Path) -> None:
    """What makes the comparison above able to fail on ``sizeplus``: the same store rebuilt without the setting
    (the sequential reput skips the damaged record and the rest of its segment, and goes on) is not what the
    broker's concurrent reput wrote."""
    d = Path(written[f"{line}-creput-sizeplus"]["scenario"]["dir"])
    assert _differ(d / "expected", _rebuilt_without_the_setting(d, line, tmp_path))


def test_the_tables_hold_the_same_findings(written, tmp_path: Path) -> None:
    """With the Delta tables (Spark): the run's findings, the concurrent stop's row included, are the
    anomalies table's, and the files are those of the run without tables."""
    from pipelines.tables.runs import snapshot
    line = LINES[-1]
    r = written[f"{line}-creput-magic"]
    d = Path(r["scenario"]["dir"])
    code, out, err = bh.cli(["rebuild", "--store", str(d / "store"), "--out", str(tmp_path / "o"), "--config",
                             str(d / "broker.conf"), "--broker-version", bh.BROKER_VERSION_ARG[line], "--split-size",
                             "4k", "--tables", str(tmp_path / "tables"), "--json"])
    assert code == 0, err[-2000:]
    rows = json.loads(out)["anomalies"]
    assert any("stops here for good" in a["detail"] for a in rows)
    table = snapshot(str(tmp_path / "tables")).read_arrow("anomalies").to_pylist()
    assert sorted((a["kind"], a["commitlog_offset"], a["detail"]) for a in table) == \
        sorted((a["kind"], a["commitlog_offset"], a["detail"]) for a in rows)
    _same_files(d / "expected", tmp_path / "o", r["written"]["indexNamesUnique"])


@pytest.mark.parametrize("line,name", SLAVE_CASES)
def test_a_slave_at_a_record_the_pre_check_reads_as_zero(reput, line: str, name: str, tmp_path: Path) -> None:
    """On a slave, at a record the sequential ``checkMessageAndReturnSize`` cannot read and the pre-check reads
    as 0 (``rollNextFile``): the broker's sequential reput stood AT it for good, its concurrent one went on in
    the next file to the end (the harness itself); ``rebuild`` writes the broker's files byte for byte either
    way, with no row saying the concurrent reput stops; and the concurrent store rebuilt without the setting
    is not what the broker's concurrent reput wrote (the comparison can fail)."""
    w, d = reput["written"], Path(reput["scenario"]["dir"])
    concurrent = "-creput-" in name
    assert not w["reputHung"] and w["reputStoodAt"] == (w["maxPhyOffset"] if concurrent else w["damagedRecord"]), w
    r = reput["rebuild"]
    assert r["code"] == 0, r["stderr"][-2000:]
    _same_files(d / "expected", d / "ours", w["indexNamesUnique"])
    out = _summary_json(d, tmp_path, line)
    rows = json.loads(out)["anomalies"]
    assert [a["commitlog_offset"] for a in rows][:1] == [w["damagedRecord"]], rows
    assert not any("stops here for good" in (a["detail"] or "") for a in rows), rows
    if concurrent:
        assert _cq_max_offset(d / "expected" / "consumequeue") > w["damagedRecord"] + SEGMENT
        assert _differ(d / "expected", _rebuilt_without_the_setting(d, line, tmp_path))


@pytest.mark.parametrize("line,name", [pytest.param(line, sc["name"], id=sc["name"]) for line, scs in SCENARIOS.items()
                                       for sc in scs if sc["name"].endswith("-lastblank")])
def test_a_damaged_blank_in_the_last_segment(reput, line: str, name: str, tmp_path: Path) -> None:
    """A blank in the last segment whose totalSize runs past the data but not past its file: the broker's
    concurrent reput stood AT it for good (its pre-check gives -1 past the write position), the sequential one
    at the data's end (it cannot read it: the master skips the rest of the slice); neither dispatched anything
    after it, nor does ``rebuild`` (the broker's files byte for byte), whose walk takes it as the end of the
    file; with the setting the summary's row at the blank says the concurrent reput stops there."""
    w, d = reput["written"], Path(reput["scenario"]["dir"])
    concurrent = "-creput-" in name
    assert w["damagedRecord"] == 5 * SEGMENT and w["maxPhyOffset"] < 6 * SEGMENT - 16, w
    assert not w["reputHung"] and w["reputStoodAt"] == (w["damagedRecord"] if concurrent else w["maxPhyOffset"]), w
    r = reput["rebuild"]
    assert r["code"] == 0, r["stderr"][-2000:]
    _same_files(d / "expected", d / "ours", w["indexNamesUnique"])
    assert _cq_max_offset(d / "expected" / "consumequeue") < w["damagedRecord"]
    out = _summary_json(d, tmp_path, line)
    rows = [a for a in json.loads(out)["anomalies"] if "stops here for good" in (a["detail"] or "")]
    assert [a["commitlog_offset"] for a in rows] == ([w["damagedRecord"]] if concurrent else []), rows


@pytest.mark.parametrize("line,name", ONWARD_CASES)
def test_the_reput_goes_on_past_damaged_bytes(reput, line: str, name: str, tmp_path: Path) -> None:
    """Every batch task holding the damaged bytes ends and the pre-check's walk goes on into the next file: the
    broker's concurrent reput went on there to the end (the harness itself: no batch held, reputFromOffset at
    the end, queues holding records past the damaged segment); ``rebuild`` writes the broker's files byte for
    byte, the consume queue of topic "" queue 0 (``consumequeue/0/``, the blank's empty request) included where
    the task read the blank (``blankon``; not ``rollon``), and its summary's row at the damaged record says the
    reput goes past it, none that it stops; the store rebuilt without the setting is not what the broker wrote
    (the comparison can fail)."""
    w, d = reput["written"], Path(reput["scenario"]["dir"])
    what = name.rsplit("-", 1)[-1]
    at, seg = w["damagedRecord"], w["damagedRecord"] - w["damagedRecord"] % SEGMENT
    with open(d / "store" / "commitlog" / f"{seg:020d}", "rb") as f:
        data = f.read()
    total = int.from_bytes(data[at - seg:at - seg + 4], "big", signed=True)
    if what.startswith("blankon"):   # as it says: it reaches the file's end; the blank after the record(s)
        blank = at - seg + w["damagedSize"]
        while data[blank + 4:blank + 8] != bytes.fromhex("cbd43194"):
            blank += int.from_bytes(data[blank:blank + 4], "big")
        assert at - seg + total == SEGMENT and (SEGMENT - blank) % 8 == 0, (w, total)
        assert (what == "blankonfirst") == (at == 225 and blank != at - seg + w["damagedSize"]), (w, blank)
    else:                   # it reaches the blank
        assert data[at - seg + total + 4:at - seg + total + 8] == bytes.fromhex("cbd43194"), (w, total)
    assert not w["reputHung"] and w["reputStoodAt"] == w["maxPhyOffset"], w
    assert _cq_max_offset(d / "expected" / "consumequeue") >= seg + 2 * SEGMENT
    assert (d / "expected" / "consumequeue" / "0" / f"{0:020d}").is_file() == what.startswith("blankon")
    r = reput["rebuild"]
    assert r["code"] == 0, r["stderr"][-2000:]
    _same_files(d / "expected", d / "ours", w["indexNamesUnique"])
    if what == "blankonext":   # the ext files byte for byte, the empty request's (topic "" queue 0) among them
        exp = d / "expected" / "consumequeue_ext"
        assert (exp / "0" / f"{0:020d}").is_file() and _files(d / "ours" / "consumequeue_ext") == _files(exp)
        for rel in _files(exp):
            bh.same_bytes((exp / rel).read_bytes(), (d / "ours" / "consumequeue_ext" / rel).read_bytes(), rel)
    if what == "blankonrdbidx":   # the RocksDB index: the broker's key/value set in every family
        from pipelines.index_rocksdb import read_message_rocksdb
        dbs = []
        for which in ("expected", "ours"):   # copies: a read-only opening may still write a LOG
            shutil.copytree(d / which / "rocksdbstore", tmp_path / which)
            dbs.append(read_message_rocksdb(tmp_path / which))
        assert dbs[0]["default"] and dbs[0] == dbs[1]
    out = _summary_json(d, tmp_path, line)
    rows = json.loads(out)["anomalies"]
    assert not any("stops here for good" in (a["detail"] or "") for a in rows), rows
    past = [a for a in rows if "goes past the damaged bytes" in (a["detail"] or "")]
    assert [a["commitlog_offset"] for a in past] == [at], rows
    assert ("empty request" in past[0]["detail"]) == what.startswith("blankon"), past
    assert _differ(d / "expected", _rebuilt_without_the_setting(d, line, tmp_path))


@pytest.mark.parametrize("line,name", _cases_or_skip("-blankononly", "empty requests all the store dispatches"))
def test_empty_requests_that_are_all_the_store_dispatches(reput, line: str, name: str, tmp_path: Path) -> None:
    """``blankononly``: the task parsing the damaged first record goes on at its end and reads the blank's magic
    code at the first segment's end, nothing else, and ends; the pre-check's walk goes on into the second segment,
    whose first record's magic code is illegal: the broker dispatched the blank's empty request alone
    (``consumequeue/0/`` and no other queue) and its ``IndexService`` created the first index file for it, with
    no key; ``rebuild`` writes the broker's files byte for byte (the index file's too), its summary saying where
    the reput goes past the damaged bytes and where it stops for good."""
    w, d = reput["written"], Path(reput["scenario"]["dir"])
    assert not w["reputHung"] and w["damagedRecord"] == 0 and w["damagedSize"] == SEGMENT - 136, w
    assert sorted(p.name for p in (d / "expected" / "consumequeue").iterdir()) == ["0"]
    assert len(list((d / "expected" / "index").iterdir())) == 1
    r = reput["rebuild"]
    assert r["code"] == 0, r["stderr"][-2000:]
    _same_files(d / "expected", d / "ours", True)
    rows = json.loads(_summary_json(d, tmp_path, line))["anomalies"]
    assert [a["commitlog_offset"] for a in rows if "stops here for good" in (a["detail"] or "")] == [SEGMENT], rows
    assert [a["commitlog_offset"] for a in rows if "goes past the damaged bytes" in (a["detail"] or "")] == [0], rows


@pytest.mark.parametrize("line,name", _cases_or_skip("-blankontwo", "two damaged spots"))
def test_two_damaged_spots(reput, line: str, name: str, tmp_path: Path) -> None:
    """``blankontwo``: the store's first record made to reach the first segment's end (the task reads the records
    after it whole, and the blank's magic code there), the second segment's first record's magic code illegal: two
    stops, the reput going past the first and stopping for good at the second; ``rebuild`` writes the broker's
    files byte for byte, the records read whole and the empty request's ``consumequeue/0/`` among them."""
    w, d = reput["written"], Path(reput["scenario"]["dir"])
    assert not w["reputHung"] and w["damagedRecord"] == 0, w
    assert (d / "expected" / "consumequeue" / "0" / f"{0:020d}").is_file()
    assert len([p for p in (d / "expected" / "consumequeue").iterdir()]) > 1   # records read whole, dispatched
    r = reput["rebuild"]
    assert r["code"] == 0, r["stderr"][-2000:]
    _same_files(d / "expected", d / "ours", w["indexNamesUnique"])
    rows = json.loads(_summary_json(d, tmp_path, line))["anomalies"]
    assert [a["commitlog_offset"] for a in rows if "stops here for good" in (a["detail"] or "")] == [SEGMENT], rows


def _rocksdb_cq(db: Path, copy: Path) -> dict[str, dict[bytes, bytes]]:
    """A RocksDB consume queue's families (read from a copy: a read-only opening may still write a LOG)."""
    from pipelines.rocksdb_cq import read_rocksdb_cq
    shutil.copytree(db, copy)
    return {family: dict(kv) for family, kv in read_rocksdb_cq(copy).items()}


@pytest.mark.parametrize("line,name", RDBCQ_CASES)
def test_the_empty_request_in_a_rocksdb_consume_queue(reput, line: str, name: str, tmp_path: Path) -> None:
    """``blankon`` with a RocksDB consume queue: the broker's reput went on past the damaged bytes to the end (the
    harness itself) and its database holds the empty request's unit (topic "", queue 0, queue offset 0: (0, 0, 0,
    0)) and max entry (0, 0); ours holds the broker's key/value set but for the unit of the record at commitlog
    offset 0, which the broker's reput here dispatched from offset 0 and a rebuild into an empty database never
    does (``rocksdb_cq.undispatch_first_record``); the store rebuilt without the setting has no such unit."""
    from store_format.rocksdb_cq import cq_key, cq_value, offset_key, offset_value
    w, d = reput["written"], Path(reput["scenario"]["dir"])
    assert not w["reputHung"] and w["reputStoodAt"] == w["maxPhyOffset"], w
    r = reput["rebuild"]
    assert r["code"] == 0, r["stderr"][-2000:]
    exp, ours = (_rocksdb_cq(d / which / "consumequeue", tmp_path / which) for which in ("expected", "ours"))
    empty, empty_max = cq_key("", 0, 0), offset_key("", 0)
    assert exp["default"][empty] == cq_value(0, 0, 0, 0) and exp["offset"][empty_max] == offset_value(0, 0)
    assert max(int.from_bytes(v[:8], "big") for v in exp["default"].values()) > w["damagedRecord"] + 2 * SEGMENT
    only = {k: v for k, v in exp["default"].items() if k not in ours["default"]}
    assert len(only) == 1 and next(iter(only.values()))[:8] == bytes(8), only
    assert ours["default"].get(empty) == cq_value(0, 0, 0, 0)   # the one left out is the record's, not this
    assert {k: v for k, v in exp["default"].items() if k not in only} == ours["default"]
    assert exp["offset"] == ours["offset"]
    out = _summary_json(d, tmp_path, line)
    past = [a for a in json.loads(out)["anomalies"] if "goes past the damaged bytes" in (a["detail"] or "")]
    assert [a["commitlog_offset"] for a in past] == [w["damagedRecord"]] and "empty request" in past[0]["detail"]
    seq = _rocksdb_cq(_rebuilt_without_the_setting(d, line, tmp_path) / "consumequeue", tmp_path / "seq-read")
    assert empty not in seq["default"] and seq["default"] != ours["default"]


@pytest.mark.parametrize("line,name", _cases_or_skip("-laterhung", "a later batch that never ends"))
def test_a_later_batch_never_ends_after_an_empty_request(reput, line: str, name: str, tmp_path: Path) -> None:
    """``laterhung``: the damaged record's batch (past 4 MiB) ends, its task having read the records of the damaged
    bytes whole and a blank's header in a body, and the next batch's task never ends.  The harness itself: a batch
    still held, the pre-check stood past the 10-byte "record" the damaged totalSize points at, and the broker's
    consume queues hold the records the first task read whole (the damaged totalSize alone passes 4 MiB),
    nothing from the record cut by that batch's end on, and the empty request's unit (``consumequeue/0/``:
    ``DispatchService`` dispatches the batches before the one not put).  ``rebuild`` writes the broker's files
    byte for byte, its row at the damaged record saying the reput stops there for good and that the tasks before
    the hung one dispatched an empty request; the store rebuilt without the setting differs."""
    w, d = reput["written"], Path(reput["scenario"]["dir"])
    at = w["damagedRecord"]
    with open(d / "store" / "commitlog" / f"{0:020d}", "rb") as f:
        data = f.read()
    total = int.from_bytes(data[at:at + 4], "big", signed=True)
    cut = at + total - 96          # the 8th put's record, cut by the first batch's end
    assert data[cut + 88:cut + 104] == LATER_BODY[:16], "the body is not where the damage points"
    assert w["reputHung"] and w["reputStoodAt"] == at + total + 10, w
    exp = d / "expected" / "consumequeue"
    top = _cq_max_offset(exp)   # the last record the first task read whole: the one before the cut record
    assert total > 4 << 20 and at < top and top + int.from_bytes(data[top:top + 4], "big") == cut, (top, cut)
    assert (exp / "0" / f"{0:020d}").read_bytes() == bytes(120)
    r = reput["rebuild"]
    assert r["code"] == 0, r["stderr"][-2000:]
    _same_files(d / "expected", d / "ours", w["indexNamesUnique"])
    rows = [a for a in json.loads(_summary_json(d, tmp_path, line))["anomalies"]
            if "stops here for good" in (a["detail"] or "")]
    assert [a["commitlog_offset"] for a in rows] == [at], rows
    assert "never ends" in rows[0]["detail"] and "1 blank's empty request" in rows[0]["detail"], rows
    assert _differ(d / "expected", _rebuilt_without_the_setting(d, line, tmp_path))


SKIP_READ_CASES = [pytest.param(line, sc["name"], id=sc["name"]) for line, scs in SCENARIOS.items() for sc in scs
                   if sc["name"].rsplit("-", 1)[-1] in SKIP_READ] or [
    pytest.param(None, None, marks=pytest.mark.skip(reason="records read whole where the sequential reput reads none "
                                                           "run with CONCURRENT_REPUT_MORE=1"))]


def _cq_offsets(root: Path) -> set[int]:
    """The commitlog offsets of the units in the consume queue files under ``root`` (topic "" queue 0 left out)."""
    unit = np.dtype([("off", ">i8"), ("size", ">i4"), ("tag", ">i8")])
    found: set[int] = set()
    for p in root.rglob("*"):
        if p.is_file() and p.parent != root / "0":
            data = p.read_bytes()
            units = np.frombuffer(data[: len(data) // unit.itemsize * unit.itemsize], dtype=unit)
            found |= {int(o) for o in units["off"][units["size"] > 0]}
    return found


@pytest.mark.parametrize("line,name", SKIP_READ_CASES)
def test_records_read_whole_where_the_sequential_reput_reads_none(reput, line: str, name: str,
                                                                    tmp_path: Path) -> None:
    """``skipread`` and the others: the pre-check's walk lands on a real record past the damaged one, and the task
    parsing the damaged bytes reads records whole there that the sequential reput never reads (it skips the rest of
    the slice at the illegal magic code).  The harness itself: no batch held, the reput at the end (``stop``: at the
    37th put's record, where the pre-check stays), the broker's consume queues holding records of the damaged file
    past the damaged one that our rebuild without the setting (the sequential reput) does not, and none from the
    37th put's record on with ``stop``.  ``rebuild`` writes the broker's files byte for byte (ext files too), its
    summary's row at the damaged record saying it reads those records alone; with the tables (``skipread``, Spark)
    the messages table's units are the broker's."""
    w, d = reput["written"], Path(reput["scenario"]["dir"])
    what = name.rsplit("-", 1)[-1]
    at, seg = w["damagedRecord"], w["damagedRecord"] - w["damagedRecord"] % SEGMENT
    with open(d / "store" / "commitlog" / f"{seg:020d}", "rb") as f:
        data = f.read()
    ends = [at - seg + w["damagedSize"]]          # the records after the damaged one, by their own totalSizes
    while len(ends) < 6:
        ends.append(ends[-1] + int.from_bytes(data[ends[-1]:ends[-1] + 4], "big"))
    total = int.from_bytes(data[at - seg:at - seg + 4], "big", signed=True)
    assert at - seg + total == ends[2 if what == "skipreadtwo" else 1], (w, total, ends)   # a real record boundary
    stop = what == "skipreadstop"
    assert not w["reputHung"] and w["reputStoodAt"] == (seg + ends[5] if stop else w["maxPhyOffset"]), w
    exp = _cq_offsets(d / "expected" / "consumequeue")
    seq = _cq_offsets(_rebuilt_without_the_setting(d, line, tmp_path) / "consumequeue")
    mine = {o for o in exp if at < o < seg + SEGMENT}
    assert mine - seq, (sorted(mine), sorted(seq))
    assert (max(exp) < seg + ends[5]) if stop else (max(exp) > seg + SEGMENT), sorted(exp)
    r = reput["rebuild"]
    assert r["code"] == 0, r["stderr"][-2000:]
    _same_files(d / "expected", d / "ours", w["indexNamesUnique"])
    if what == "skipreadext":
        ext = d / "expected" / "consumequeue_ext"
        assert _files(ext) and _files(d / "ours" / "consumequeue_ext") == _files(ext)
        for rel in _files(ext):
            bh.same_bytes((ext / rel).read_bytes(), (d / "ours" / "consumequeue_ext" / rel).read_bytes(), rel)
    rows = json.loads(_summary_json(d, tmp_path, line))["anomalies"]
    said = "stops here for good" if stop else "goes past the damaged bytes"
    here = [a for a in rows if said in (a["detail"] or "")]
    assert [a["commitlog_offset"] for a in here] == [at] and "alone" in here[0]["detail"], rows
    if what == "skipread" and line == LINES[-1]:
        from pipelines.tables.runs import snapshot
        code, _, err = bh.cli(["rebuild", "--store", str(d / "store"), "--out", str(tmp_path / "t"), "--config",
                               str(d / "broker.conf"), "--broker-version", bh.BROKER_VERSION_ARG[line],
                               "--split-size", "4k", "--tables", str(tmp_path / "tables")])
        assert code == 0, err[-2000:]
        tables = snapshot(str(tmp_path / "tables"))
        table = tables.read_arrow("messages", ["commitlog_offset", "consume_queue"])
        assert {m["commitlog_offset"] for m in table.to_pylist() if m["consume_queue"]} == exp
        _same_files(d / "expected", tmp_path / "t", w["indexNamesUnique"])
        keys = tables.read_arrow("message_keys", ["index_file_no", "index_entry", "key_hash", "commitlog_offset"])
        broker = _index_entries(d / "expected" / "index", SCENARIO_SLOTS)
        assert broker and _keys_by_file(keys.to_pylist()) == broker


SCENARIO_SLOTS = 101   # maxHashSlotNum of these scenarios


def _index_entries(index: Path, slots: int) -> list[list[tuple[int, int, int]]]:
    """The entries of the index files under ``index`` (creation order): per file, (entry number, keyHash,
    phyOffset) each, as ``IndexFile.putKey`` writes them from entry 1 after the header and the hash slots."""
    out = []
    for p in sorted(index.iterdir()):
        data = p.read_bytes()
        count = int.from_bytes(data[36:40], "big")
        base = 40 + slots * 4
        out.append([(n, int.from_bytes(data[base + n * 20:base + n * 20 + 4], "big", signed=True),
                     int.from_bytes(data[base + n * 20 + 4:base + n * 20 + 12], "big", signed=True))
                    for n in range(1, count)])
    return [f for f in out if f]


def _keys_by_file(rows: list[dict]) -> list[list[tuple[int, int, int]]]:
    """The ``message_keys`` rows as :func:`_index_entries` gives the broker's entries."""
    files: dict[int, list[tuple[int, int, int]]] = {}
    for r in rows:
        files.setdefault(r["index_file_no"], []).append((r["index_entry"], r["key_hash"], r["commitlog_offset"]))
    return [sorted(files[n]) for n in sorted(files)]


@pytest.mark.parametrize("line,name", _cases_or_skip("-skipreadblank", "records read whole and a blank's empty "
                                                     "request from one task"))
def test_records_read_whole_and_an_empty_request_from_one_task(reput, line: str, name: str, tmp_path: Path) -> None:
    """``skipreadblank``: one task reads records of the damaged bytes whole where the sequential reput reads none and
    then the file's blank's magic code, and ends; the reput goes on at the next file.  The harness itself: no batch
    held, the reput at the end, the broker's consume queues holding records of the damaged file past the damaged one
    that our rebuild without the setting does not, and the empty request's unit of zeros (``consumequeue/0/``).
    ``rebuild`` writes the broker's files byte for byte, its row at the damaged record saying it goes past the damaged
    bytes, reads those records alone and dispatches the empty request."""
    w, d = reput["written"], Path(reput["scenario"]["dir"])
    at, seg = w["damagedRecord"], w["damagedRecord"] - w["damagedRecord"] % SEGMENT
    assert at + _damaged_total(d, at) == seg + SEGMENT, w
    assert not w["reputHung"] and w["reputStoodAt"] == w["maxPhyOffset"], w
    exp = _cq_offsets(d / "expected" / "consumequeue")
    seq = _cq_offsets(_rebuilt_without_the_setting(d, line, tmp_path) / "consumequeue")
    assert {o for o in exp if at < o < seg + SEGMENT} - seq and max(exp) > seg + SEGMENT, (sorted(exp), sorted(seq))
    assert (d / "expected" / "consumequeue" / "0" / f"{0:020d}").read_bytes() == bytes(120)
    r = reput["rebuild"]
    assert r["code"] == 0, r["stderr"][-2000:]
    _same_files(d / "expected", d / "ours", w["indexNamesUnique"])
    rows = [a for a in json.loads(_summary_json(d, tmp_path, line))["anomalies"]
            if "goes past the damaged bytes" in (a["detail"] or "")]
    assert [a["commitlog_offset"] for a in rows] == [at], rows
    assert "alone" in rows[0]["detail"] and "empty request" in rows[0]["detail"], rows


@pytest.mark.parametrize("line,name", _cases_or_skip("-skipreadthen", "records read alone, then a later stop"))
def test_records_read_alone_then_a_later_stop(reput, line: str, name: str, tmp_path: Path) -> None:
    """``skipreadthen``: the reput goes past the damaged bytes (records read alone) to the next file, then stops for
    good at the fifth segment's first record.  The harness itself: no batch held, the reput standing there, the
    broker's consume queues holding records of the damaged file past the damaged one that our rebuild without the
    setting does not, records of the fourth segment, and none from the fifth on.  ``rebuild`` writes the broker's
    files byte for byte, its rows saying it goes past the damaged bytes (reading records alone) and then stops."""
    w, d = reput["written"], Path(reput["scenario"]["dir"])
    at, seg = w["damagedRecord"], w["damagedRecord"] - w["damagedRecord"] % SEGMENT
    assert not w["reputHung"] and w["reputStoodAt"] == 4 * SEGMENT, w
    exp = _cq_offsets(d / "expected" / "consumequeue")
    seq = _cq_offsets(_rebuilt_without_the_setting(d, line, tmp_path) / "consumequeue")
    assert {o for o in exp if at < o < seg + SEGMENT} - seq, (sorted(exp), sorted(seq))
    assert 3 * SEGMENT < max(exp) < 4 * SEGMENT, sorted(exp)
    r = reput["rebuild"]
    assert r["code"] == 0, r["stderr"][-2000:]
    _same_files(d / "expected", d / "ours", w["indexNamesUnique"])
    rows = json.loads(_summary_json(d, tmp_path, line))["anomalies"]
    past = [a for a in rows if "goes past the damaged bytes" in (a["detail"] or "")]
    stop = [a for a in rows if "stops here for good" in (a["detail"] or "")]
    assert [a["commitlog_offset"] for a in past] == [at] and "alone" in past[0]["detail"], rows
    assert [a["commitlog_offset"] for a in stop] == [4 * SEGMENT], rows


PIECES_CASES = [c for c in SKIP_READ_CASES + _cases_or_skip("-skipreadhung", "") + _cases_or_skip("-skipreadblank", "")
                + _cases_or_skip("-skipreadthen", "") if c.values[0] is not None] or [
    pytest.param(None, None, marks=pytest.mark.skip(reason="records read whole where the sequential reput reads none "
                                                           "run with CONCURRENT_REPUT_MORE=1"))]


@pytest.mark.parametrize("line,name", PIECES_CASES)
def test_records_read_alone_at_any_split_size_and_engine(reput, line: str, name: str, tmp_path: Path) -> None:
    """The skipread cases and ``skipreadhung`` (the records of the damaged bytes the tasks read alone:
    ``ConcurrentStop.pieces``) rebuilt with ``--engine local`` at 4,096-byte splits and at 5,000-byte ones (splits
    starting inside the pieces and across them, in records the walk resynchronises past): the broker's files byte for
    byte, ext files too."""
    d = Path(reput["scenario"]["dir"])
    for size in ("4096", "5000"):
        out = tmp_path / size
        code, _, err = bh.cli(["rebuild", "--store", str(d / "store"), "--out", str(out), "--config",
                               str(d / "broker.conf"), "--broker-version", bh.BROKER_VERSION_ARG[line], "--no-tables",
                               "--engine", "local", "--split-size", size])
        assert code == 0, err[-2000:]
        _same_files(d / "expected", out, reput["written"]["indexNamesUnique"])
        ext = d / "expected" / "consumequeue_ext"
        assert _files(out / "consumequeue_ext") == _files(ext)
        for rel in _files(ext):
            bh.same_bytes((ext / rel).read_bytes(), (out / "consumequeue_ext" / rel).read_bytes(), rel)


# verify and repair on those, and on stores with blanks' empty requests and ext files (``blankonext``, and
# ``blankonmanyext`` with CONCURRENT_REPUT_MORE: two ext files in consumequeue_ext/0/)
VERIFY_CASES = PIECES_CASES + [c for c in _cases_or_skip("-blankonext", "") + _cases_or_skip("-blankonmanyext", "")
                               if c.values[0] is not None]


@pytest.mark.parametrize("line,name", VERIFY_CASES)
def test_verify_and_repair_where_records_are_read_alone(reput, line: str, name: str, tmp_path: Path) -> None:
    """``verify`` on the store with the broker's own consume queues and index (ext files too): identical (exit 0);
    with the consume queue file of a record the tasks read alone (the last one the broker dispatched) deleted and
    another queue's file cut short (the empty request's, ``consumequeue/0/``, where there is one: ``skipreadblank``,
    ``blankonext``, ``blankonmanyext``),
    ``verify`` names exactly those two (exit 1) and ``repair`` writes them back byte for byte the broker's, after which
    ``verify`` is identical again.  Local engine, 4,096-byte splits."""
    d, w = Path(reput["scenario"]["dir"]), reput["written"]
    areas = ("consumequeue", "consumequeue_ext") if (d / "expected" / "consumequeue_ext").is_dir() else \
        ("consumequeue",)
    store = bh.broker_store(d, tmp_path / "store", areas)
    bh.copy_store(d / ("expected" if w["indexNamesUnique"] else "ours") / "index", store / "index")
    conf = ["--config", str(d / "broker.conf"), "--broker-version", bh.BROKER_VERSION_ARG[line], "--engine", "local",
            "--split-size", "4096"]
    code, out = bh.cli_ok(["verify", "--store", str(store), *conf, "--json"])
    assert code == 0 and json.loads(out)["identical"], out[-3000:]
    unit = np.dtype([("off", ">i8"), ("size", ">i4"), ("tag", ">i8")])
    top, holder = -1, ""
    for rel in _files(store / "consumequeue"):
        units = np.frombuffer((store / "consumequeue" / rel).read_bytes(), dtype=unit)
        used = units[units["size"] > 0]
        if len(used) and int(used["off"].max()) > top:
            top, holder = int(used["off"].max()), rel
    assert top > w["damagedRecord"], (top, w)
    empty = f"0/{0:020d}"     # the empty request's file (topic "" queue 0), where there is one
    other = empty if (store / "consumequeue" / empty).is_file() else next(
        r for r in _files(store / "consumequeue") if r.split("/")[:2] != holder.split("/")[:2]
        and (store / "consumequeue" / r).stat().st_size > 20)
    (store / "consumequeue" / holder).unlink()
    data = (store / "consumequeue" / other).read_bytes()
    (store / "consumequeue" / other).write_bytes(data[:20])
    code, out = bh.cli_ok(["verify", "--store", str(store), *conf, "--json"])
    report = json.loads(out)
    assert code == 1 and sorted((r["path"], r["status"]) for r in report["consume_queue"]) == sorted(
        [(holder, "missing"), (other, "differs")]), report["consume_queue"]
    code, out = bh.cli_ok(["repair", "--store", str(store), *conf, "--json"])
    assert code == 0, out[-3000:]
    for rel in (holder, other):
        bh.same_bytes((d / "expected" / "consumequeue" / rel).read_bytes(),
                      (store / "consumequeue" / rel).read_bytes(), rel)
    code, out = bh.cli_ok(["verify", "--store", str(store), *conf, "--json"])
    assert code == 0 and json.loads(out)["identical"], out[-3000:]


def _first_file(d: Path) -> bytes:
    with open(d / "store" / "commitlog" / f"{0:020d}", "rb") as f:
        return f.read()


def _int(data: bytes, at: int) -> int:
    return int.from_bytes(data[at:at + 4], "big", signed=True)


@pytest.mark.parametrize("line,name", _cases_or_skip("-skipreadhung", "records read whole before a later batch that "
                                                     "never ends"))
def test_records_read_whole_before_a_later_batch_that_never_ends(reput, line: str, name: str,
                                                                   tmp_path: Path) -> None:
    """``skipreadhung``: the damaged record's batch (past 4 MiB) ends, its task having read records of the damaged
    bytes whole where the sequential reput reads none (skipread's damage), and the next batch's task never ends (its
    last record's totalSize runs past the file).  The harness itself: a batch still held, the pre-check standing at
    that record (the 16th put's); the broker's consume queues hold records past the damaged one that our rebuild
    without the setting does not, up to the last record of the first batch (the 14th put's, read whole), and none from
    the second batch's start (the 15th put's) on.  ``rebuild`` writes the broker's files byte for byte, its row at the
    damaged record saying the reput stops there for good, that the later task never ends and that it reads the
    records alone."""
    w, d = reput["written"], Path(reput["scenario"]["dir"])
    at, data = w["damagedRecord"], _first_file(d)
    offs = [at + _int(data, at)]      # the 4th put's record (where the damaged totalSize points) to the 16th put's
    while len(offs) < 13:
        offs.append(offs[-1] + _int(data, offs[-1]))
    assert _int(data, at) > w["damagedSize"] and offs[-1] + _int(data, offs[-1]) > LATER_SEGMENT, (w, offs)
    assert w["reputHung"] and w["reputStoodAt"] == offs[-1], (w, offs)
    exp = _cq_offsets(d / "expected" / "consumequeue")
    seq = _cq_offsets(_rebuilt_without_the_setting(d, line, tmp_path) / "consumequeue")
    mine = {o for o in exp if o > at}
    assert mine - seq and max(exp) == offs[-3] and offs[-2] > 4 << 20, (sorted(mine), sorted(seq), offs)
    r = reput["rebuild"]
    assert r["code"] == 0, r["stderr"][-2000:]
    _same_files(d / "expected", d / "ours", w["indexNamesUnique"])
    rows = [a for a in json.loads(_summary_json(d, tmp_path, line))["anomalies"]
            if "stops here for good" in (a["detail"] or "")]
    assert [a["commitlog_offset"] for a in rows] == [at], rows
    assert "never ends" in rows[0]["detail"] and "alone" in rows[0]["detail"], rows


EMPTY_ENDING_CASES = [pytest.param(line, sc["name"], id=sc["name"]) for line, scs in SCENARIOS.items() for sc in scs
                      if sc["name"].rsplit("-", 1)[-1] in EMPTY_ENDINGS] or [
    pytest.param(None, None, marks=pytest.mark.skip(reason="the empty-request endings run with "
                                                           "CONCURRENT_REPUT_MORE=1"))]


def _index_count(p: Path) -> int:
    """An index file's header's indexCount (1 in a file with no entry)."""
    return int.from_bytes(p.read_bytes()[36:40], "big")


@pytest.mark.parametrize("line,name", EMPTY_ENDING_CASES)
def test_the_empty_request_endings(reput, line: str, name: str, tmp_path: Path) -> None:
    """Blanks' empty requests where they end otherwise: ``blankonmanyext`` (two of them, one ext unit a file: the
    broker wrote two ext files in ``consumequeue_ext/0/``), ``blankonfirstreq`` (the store's first dispatched
    request, records following: the broker's reput went on to the end, ``consumequeue/0/`` and the later records'
    queues written, one index file), ``blankonidxfull`` (dispatched last, after the key that filled the first index
    file: the broker wrote a second index file with no entry).  The harness itself for each, then ``rebuild``: the
    broker's files byte for byte (ext files and index files included)."""
    w, d = reput["written"], Path(reput["scenario"]["dir"])
    what = name.rsplit("-", 1)[-1]
    exp = d / "expected"
    assert not w["reputHung"] and (exp / "consumequeue" / "0" / f"{0:020d}").is_file(), w
    index = sorted((exp / "index").iterdir())
    if what == "blankonmanyext":
        assert w["reputStoodAt"] == w["maxPhyOffset"], w
        assert _files(exp / "consumequeue_ext" / "0") == [f"{0:020d}", f"{24:020d}"]
    elif what == "blankonfirstreq":
        assert w["damagedRecord"] == 0 and w["reputStoodAt"] == w["maxPhyOffset"], w
        assert len(index) == 1 and _cq_max_offset(exp / "consumequeue") > 2 * SEGMENT
    else:
        assert w["reputStoodAt"] == 2 * SEGMENT, w
        assert [_index_count(p) for p in index] == [int(IDX_FULL[line]), 1]
    r = reput["rebuild"]
    assert r["code"] == 0, r["stderr"][-2000:]
    _same_files(exp, d / "ours", w["indexNamesUnique"])
    ext = exp / "consumequeue_ext"
    assert _files(d / "ours" / "consumequeue_ext") == _files(ext)
    for rel in _files(ext):
        bh.same_bytes((ext / rel).read_bytes(), (d / "ours" / "consumequeue_ext" / rel).read_bytes(), rel)
