"""Scenarios for the broker's reput alone on a damaged commitlog (:mod:`broker_harness`, ``reputDamage``:
``tests/broker/src/common/harness/ReputOnly.java``), and the test cases drawn from them.

The harness writes each store with the published RocketMQ store, deletes ``consumequeue/`` and ``index/``, opens
it again with the recovery's dispatch switched off, damages the commitlog as the scenario's ``reputDamage`` says
and lets the broker's reput alone dispatch from the commitlog's min offset until it stands still: what a plain
``rebuild`` models.  5.x, ``enableBuildConsumeQueueConcurrently=true`` (``creput``: the
``ConcurrentReputMessageService``) and, where a scenario says so, without it (``sreput``: the sequential
``ReputMessageService``).  The broker writes them once a pytest session (:mod:`broker_concurrent_runs`);
:mod:`test_concurrent_reput_broker`, :mod:`test_concurrent_read_alone_broker` and
:mod:`test_concurrent_empty_requests_broker` test them.

* Damages in the middle of the commitlog (a segment with more after it), each with and without the setting
  (:data:`DAMAGES`): an illegal magic code (``magic``), a negative totalSize (``negsize``), a totalSize running
  past the data (``bigsize``), all in the 31st put's record, and an illegal magic code in the first record of the
  third segment (``segstart``).
* Records the pre-check accepts (:mod:`store_format.concurrent_batches`), written with the setting only
  (:data:`ACCEPTED`): ``sizeplus``, the 31st put's totalSize 8 bytes too long; ``reach12`` and ``reach20``, that
  totalSize reaching 12 or 20 bytes into the record after the next one; ``toend``, the last record before the
  third segment's blank made to reach that file's end; and a DLedger store converted in place
  (``dledger-converted``: the pre-check reads an entry header as a record's).
* On a slave (``brokerId=1``, :data:`SLAVE`), a record the sequential reput cannot read and the pre-check reads as
  0 (``slaveblank``: a blank whose totalSize runs past its file's end), with and without the setting.
* The last segment's first record made a blank whose totalSize runs past the data but not past its file
  (``lastblank``).
* Every task holding the damaged bytes ends and the pre-check's walk goes on into the next file (:data:`ONWARD`):
  ``blankon``, the last record before the second segment's blank made to reach that file's end (the task reads the
  blank's magic code, whose empty request the broker dispatches into the consume queue of topic "" queue 0,
  ``consumequeue/0/``); ``blankonext``, the same with consume queue ext files.

``CONCURRENT_REPUT_MORE=1`` adds ``rollon``, ``blankonrdbidx`` (5.5), ``blankonfirst``, ``blankonrdbcq`` and
``blankontwo`` (:data:`ONWARD`), ``sizeminus`` and ``size12`` (:data:`ACCEPTED`), ``dledger-plain``,
``slavezero``, ``lastblank`` without the setting, ``laterhung`` (:func:`later_hung`), ``blankononly``
(:func:`only_empty`), the records the batch task reads whole inside the damaged bytes where the sequential reput
reads none (``skipread``, ``skipreadtwo``, ``skipreadstop``, ``skipreadext``, ``skipreadslave``:
:data:`SKIP_READ`; ``skipreadhung``: :func:`skip_read_hung`; ``skipreadblank``, ``skipreadthen``:
:data:`SKIP_READ_BLANK`) and the empty-request endings ``blankonmanyext``, ``blankonfirstreq`` and
``blankonidxfull`` (:func:`empty_endings`).  The comments beside each say what it is.

5.5.1 by default; ``CONCURRENT_REPUT_LINES=5.3.3,5.5.1`` adds 5.3.3; ``CONCURRENT_REPUT_ONLY`` (a comma list of
scenario name endings, such as ``skipread,skipreadhung``) writes only those scenarios.

The case lists (``pytest.param(line, name)``, the scenario's name its id) are named for the scenarios they hold;
where the default suite writes none, a list holds one skipped case saying how to run it (:func:`cases_or_skip`).
"""
from __future__ import annotations

import base64
import os
from collections.abc import Callable

import broker_dledger_scenarios as dls
import broker_harness as bh
import pytest
from broker_layout_scenarios import Messages

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


def skip_read_hung(line: str) -> dict:
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


def later_hung(line: str) -> dict:
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


def only_empty(line: str, config: dict, first_only: bool = False) -> dict:
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
# files in consumequeue_ext/0/.  ``blankonfirstreq`` (:func:`only_empty`).  ``blankonidxfull``: ``blankon``'s
# damage and the third segment's first record's magic code illegal, maxIndexNum set so that the records before the
# damaged one fill the first index file exactly (their keys: 62 on 5.5.1, 42 on 5.3.3, whose index takes fewer):
# the empty request, dispatched last, creates the second index file, with no entry.
IDX_FULL = {"5.5.1": "63", "5.3.3": "43"}
EMPTY_ENDINGS = ("blankonmanyext", "blankonfirstreq", "blankonidxfull") if os.environ.get("CONCURRENT_REPUT_MORE") \
    else ()


def empty_endings(line: str, messages: list[dict], config: dict) -> list[dict]:
    if not EMPTY_ENDINGS:
        return []
    conf = {**config, "enableBuildConsumeQueueConcurrently": "true"}
    return [{"name": f"{line}-creput-blankonmanyext", "messages": messages,
             "config": {**conf, "enableConsumeQueueExt": "true", "mappedFileSizeConsumeQueueExt": "24"},
             "reputDamage": {**BLANKON, "also": [{"message": 55, "field": "totalSizeReach", "value": 2}]}},
            only_empty(line, config, first_only=True),
            {"name": f"{line}-creput-blankonidxfull", "messages": messages,
             "config": {**conf, "maxIndexNum": IDX_FULL[line]},
             "reputDamage": {**BLANKON, "also": [{"offset": 2 * SEGMENT, "field": "magic", "value": 0x0BADC0DE}]}}]


def concurrent_scenarios(line: str) -> list[dict]:
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
        out += [later_hung(line), only_empty(line, config), skip_read_hung(line)]
    out += empty_endings(line, messages, config)
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


SCENARIOS = {line: concurrent_scenarios(line) for line in LINES}


def _cases(keep: Callable[[str], bool]) -> list:
    """The (line, name) cases of the scenarios whose name ``keep`` takes."""
    return [pytest.param(line, sc["name"], id=sc["name"]) for line, scs in SCENARIOS.items() for sc in scs
            if keep(sc["name"])]


def cases_or_skip(ending: str, what: str) -> list:
    """The (line, name) cases of the scenarios whose name ends with ``ending``, or one skipped case saying how to
    run ``what`` when the default suite writes none."""
    return _cases(lambda n: n.endswith(ending)) or [
        pytest.param(None, None, marks=pytest.mark.skip(reason=f"{what} runs with CONCURRENT_REPUT_MORE=1"))]


def _last(name: str) -> str:
    return name.rsplit("-", 1)[-1]


# the DAMAGES scenarios, with and without the setting
DAMAGE_CASES = _cases(lambda n: _last(n) in DAMAGES)
# the ACCEPTED scenarios and the DLedger ones
ACCEPTED_CASES = _cases(lambda n: _last(n) not in DAMAGES and "-slave" not in n
                        and not n.endswith(("-lastblank", "-laterhung", "-blankononly", "-skipreadhung"))
                        and _last(n) not in (*ONWARD, *SKIP_READ, *SKIP_READ_BLANK, *EMPTY_ENDINGS))
# the SLAVE scenarios, with and without the setting
SLAVE_CASES = _cases(lambda n: "-slave" in n)
LASTBLANK_CASES = _cases(lambda n: n.endswith("-lastblank"))
LATERHUNG_CASES = cases_or_skip("-laterhung", "a later batch that never ends")

# the ONWARD scenarios but blankonrdbcq and blankontwo
ONWARD_CASES = _cases(lambda n: _last(n) in ONWARD and not n.endswith(("rdbcq", "blankontwo")))
BLANKONONLY_CASES = cases_or_skip("-blankononly", "empty requests all the store dispatches")
BLANKONTWO_CASES = cases_or_skip("-blankontwo", "two damaged spots")
RDBCQ_CASES = cases_or_skip("-blankonrdbcq", "the RocksDB consume queue's empty request")
EMPTY_ENDING_CASES = _cases(lambda n: _last(n) in EMPTY_ENDINGS) or [
    pytest.param(None, None, marks=pytest.mark.skip(reason="the empty-request endings run with "
                                                           "CONCURRENT_REPUT_MORE=1"))]

# the SKIP_READ scenarios
SKIP_READ_CASES = _cases(lambda n: _last(n) in SKIP_READ) or [
    pytest.param(None, None, marks=pytest.mark.skip(reason="records read whole where the sequential reput reads none "
                                                           "run with CONCURRENT_REPUT_MORE=1"))]
SKIPREADHUNG_CASES = cases_or_skip("-skipreadhung", "records read whole before a later batch that never ends")
SKIPREADBLANK_CASES = cases_or_skip("-skipreadblank", "records read whole and a blank's empty request from one task")
SKIPREADTHEN_CASES = cases_or_skip("-skipreadthen", "records read alone, then a later stop")
# every scenario whose tasks read records of the damaged bytes alone (ConcurrentStop.pieces): the SKIP_READ ones,
# skipreadhung, skipreadblank and skipreadthen
PIECES_CASES = [c for c in SKIP_READ_CASES + SKIPREADHUNG_CASES + SKIPREADBLANK_CASES + SKIPREADTHEN_CASES
                if c.values[0] is not None] or [
    pytest.param(None, None, marks=pytest.mark.skip(reason="records read whole where the sequential reput reads none "
                                                           "run with CONCURRENT_REPUT_MORE=1"))]
# those, and the stores with blanks' empty requests and ext files (blankonext, and blankonmanyext with
# CONCURRENT_REPUT_MORE: two ext files in consumequeue_ext/0/)
VERIFY_CASES = PIECES_CASES + _cases(lambda n: n.endswith("-blankonext")) + _cases(
    lambda n: n.endswith("-blankonmanyext"))
