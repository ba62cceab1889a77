"""``rebuild --as-restart`` where the restart's own reput puts blanks' empty requests (5.x
``enableBuildConsumeQueueConcurrently=true``) and multi-dispatch requests naming an empty queue (``",%LMQ%a"``) into
topic "" queue 0 (``consumequeue/0/``), checked against the broker's restart (stores:
:mod:`broker_topic_empty_mix_restart_scenarios`: the recovery walks the last two files alone and queues nothing, the
second reput, ``doRecheckReputOffsetFromCq``, walks the store again from its min offset and reads the blank inside
the damaged record).  What the 5.5.1 broker wrote first: the mix of :mod:`test_topic_empty_mix_broker`'s layouts in
``consumequeue/0/`` (``-after``: the empty request's unit at 0, the empty-name units from 20 on; ``-before``: two
``fillPreBlank`` units, then those units), clean and after a crash, over the planted files' bytes where the store
held some (each file the puts open: the bytes written over its start, a shorter one grown with zeros; the others as
they were); then ours byte for byte (:func:`store_format.topic_empty_mix.merged_queue_zero_files` over
:func:`store_format.empty_request_held.over_held_files`).  ``PIPELINES_FULL_SUITE=1`` adds the clean and crash
variants without planted files, and 5.3.3, whose recovery walks from the first file, cuts at the damaged record and
never forms the mix: ours the same.  On the clean 5.5.1 stores ``verify`` of ``before/``: the recovery's dispatch
from its walk's start (the file ``commitLogRecoverMaxNum`` files back), the second reput from the min offset, every
own unit put by it and the broker's index keys (the topic "" files themselves: not predicted, the note says so).
"""
from __future__ import annotations

import base64
from pathlib import Path

import broker_harness as bh
import pytest
from broker_concurrent_runs import files_under, same_files
from broker_topic_empty_mix_restart_scenarios import CQ, EXT_FIRST, EXT_NEXT, SCENARIOS
from test_topic_empty_mix_broker import BLANK, LAYOUT, LONG_MIN, _units

from store_format.indexfile import read_header

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

CASES = [pytest.param(sc["name"], id=sc["name"]) for sc in SCENARIOS["5.5.1"]]
CLEAN = [pytest.param(sc["name"], id=sc["name"]) for sc in SCENARIOS["5.5.1"] if not sc.get("abort")]
LINE_533 = [pytest.param(sc["name"], id=sc["name"]) for sc in SCENARIOS.get("5.3.3", [])]
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "restart store(s) whose reput puts topic \"\" queue 0's mix", threads=1)


@pytest.fixture
def written(request) -> dict:
    """The scenario as the broker's restart left it, and our ``rebuild --as-restart`` of ``before/``."""
    return bh.written_once(request, _RUNS, STORES, then=bh.restart_checked)


def _planted(run: dict) -> dict[str, bytes]:
    return {rel: base64.b64decode(b) for rel, b in run["scenario"].get("plantFiles", {}).items()}


def _ours_the_broker_s(run: dict) -> None:
    """Our ``rebuild --as-restart``: exit 0, the broker's ``consumequeue/``, ``consumequeue_ext/`` and ``index/``."""
    d, r = Path(run["scenario"]["dir"]), run["rebuild"]
    assert r["code"] == 0, r["stderr"][-2000:]
    same_files(d / "expected", d / "ours", run["written"]["indexNamesUnique"])
    exp = d / "expected" / "consumequeue_ext"
    assert files_under(d / "ours" / "consumequeue_ext") == files_under(exp)
    for rel in files_under(exp):
        bh.same_bytes((exp / rel).read_bytes(), (d / "ours" / "consumequeue_ext" / rel).read_bytes(), rel)


@pytest.mark.parametrize("name", CASES)
def test_the_broker_s_restart_puts_the_mix_then_ours_byte_for_byte(written, name):
    """What the 5.5.1 broker's restart wrote first: the whole commitlog kept (the recovery, over the last two files,
    never read the damaged record, which lies before them); ``consumequeue/0/`` one file whose units are
    :data:`test_topic_empty_mix_broker.LAYOUT`'s (the empty-name requests' records read from the broker's ``%LMQ%a``
    queue), the empty request's unit (tagsCode 0, or its ext unit's address) at 0 where it came first, then the
    planted bytes where a file was planted (zeros past a shorter one), none else; ``consumequeue_ext/0/``: the empty
    request's ext unit over the first planted ext file's start, the second planted one as it was.  Then ours."""
    w, d = written["written"], Path(written["scenario"]["dir"])
    kind = name.split("-restart-")[1].split("-")[0]
    ext, plant = "-before" in name, _planted(written)
    exp = d / "expected"
    segment = int(written["scenario"]["config"]["mappedFileSizeCommitLog"])
    assert (d / "before" / "abort").is_file() == name.endswith("-crash")
    assert w["maxPhyOffset"] > w["damagedRecord"] + 2 * segment, w   # kept whole, the damage before the last 2 files
    records = [u[:2] for u in _units(exp / "consumequeue" / "%LMQ%a" / "0" / f"{0:020d}") if u[1] > 0]
    assert files_under(exp / "consumequeue" / "0") == [f"{0:020d}"]
    data = (exp / CQ).read_bytes()
    held = _units(exp / CQ)
    want = [(0, 0) if s == "empty" else s if isinstance(s, tuple) else records[s] for s in LAYOUT[kind]]
    assert [u[:2] for u in held[:len(want)]] == want, held
    if kind == "after":
        assert held[0][2] == (LONG_MIN if ext else 0), held[0]
    rest = 20 * len(want)
    before = plant.get(CQ, b"")
    assert data[rest:] == (before + bytes(len(data) - len(before)))[rest:], data.hex()
    assert records and (kind == "before") == (records[0][0] < w["damagedRecord"]), (records, w)
    assert (exp / "consumequeue_ext" / "0" / f"{0:020d}").is_file() == ext
    if EXT_FIRST in plant:
        got = (exp / EXT_FIRST).read_bytes()   # size 20, tagsCode 0, store time 0, no bitmap
        assert got == (20).to_bytes(2, "big") + bytes(18) + plant[EXT_FIRST][20:], got[:24].hex()
        assert (exp / EXT_NEXT).read_bytes() == plant[EXT_NEXT]
    _ours_the_broker_s(written)


@pytest.mark.parametrize("name", bh.params_or_skip(LINE_533, "5.3.3 with PIPELINES_FULL_SUITE=1"))
def test_533_cuts_at_the_damaged_record_and_never_forms_the_mix(written, name):
    """5.3.3: the recovery walks from the first file and cuts the commitlog at the damaged record, so the reput never
    reads the blank inside it: ``consumequeue/0/`` holds no empty request's unit, only the empty-name units before
    the damaged record.  Ours the same, byte for byte."""
    w, d = written["written"], Path(written["scenario"]["dir"])
    assert w["maxPhyOffset"] == w["damagedRecord"], w
    held = [u for u in _units(d / "expected" / CQ) if u[1] > 0] if (d / "expected" / CQ).is_file() else []
    assert all(u[1] == BLANK[1] or 0 < u[0] < w["damagedRecord"] for u in held), held
    assert bool(held) == ("-before" in name), held   # -before: its request before the damaged record
    _ours_the_broker_s(written)


def _own_units(exp: Path) -> list[int]:
    """The commitlog offsets of the units in the broker's own queues (``consumequeue/<topic>/<queueId>/``)."""
    return [u[0] for f in sorted(exp.glob("consumequeue/*/*/*")) for u in _units(f) if u[1] > 0]


def _index_keys(exp: Path, slots: int) -> tuple[int, list[int]]:
    """The broker's one index file (``slots``: maxHashSlotNum): its beginPhyOffset and each key's commitlog offset."""
    (f,) = sorted((exp / "index").iterdir())
    data, h = f.read_bytes(), read_header(f.read_bytes())
    at = 40 + 4 * slots
    return h.begin_phy_offset, [int.from_bytes(data[at + 20 * i + 4:at + 20 * i + 12], "big")
                                for i in range(1, h.index_count)]


@pytest.mark.parametrize("name", CLEAN)
def test_verify_predicts_the_reput_from_the_min_offset(written, name):
    """What the broker's clean restart did first: its index begins at the first record of the file
    ``commitLogRecoverMaxNum`` (2) files back from the last, none of its keys below (the recovery's walk indexed
    from there; the second reput's records below it got no key: ``buildIndex`` skips below ``endPhyOffset``), its
    queues hold every unit below that walk's start (it queued nothing) and the unit of the commitlog's first record
    (the second reput, ``doRecheckReputOffsetFromCq``, began at the min offset).  Then ``verify`` of ``before/``:
    the recovery's dispatch from that walk's start, the second reput from the min offset, every own unit put, none
    lost, and the broker's index keys."""
    d = Path(written["scenario"]["dir"])
    exp, config = d / "expected", written["scenario"]["config"]
    last = max(int(f.name) for f in (d / "before" / "commitlog").iterdir())
    walk = last - int(config["mappedFileSizeCommitLog"]) * (int(config["commitLogRecoverMaxNum"]) - 1)
    begin, keys = _index_keys(exp, int(config["maxHashSlotNum"]))
    units = _own_units(exp)
    assert begin == walk == min(keys) and not (d / "before" / "index").exists(), (begin, walk, keys[:3])
    assert units and min(units) == 0 and max(units) < walk, (min(units), max(units), walk)
    p = _restart_prediction(written)
    assert (p["reput_from"], p["reput_from_inclusive"], p["second_reput_from"]) == (walk, True, min(units)), p
    put, lost, _changed = _queue_zero_facts(written, name)
    assert (p["units_dispatched_again"], p["units_lost"]) == (len(units) + put, lost), p
    assert p["index_keys_put_again"] == len(keys), (p["index_keys_put_again"], len(keys))


def _restart_prediction(run: dict) -> dict:
    """``verify``'s restart prediction of the scenario's ``before/`` (run once per scenario, kept in ``run``)."""
    d = Path(run["scenario"]["dir"])
    if "verify" not in run:
        run["verify"] = bh.verify_json(d / "before", d / "broker.conf", bh.BROKER_VERSION_ARG["5.5.1"])
    v = run["verify"]
    assert v["report"] is not None, v["stderr"]
    p = v["report"]["restart"]
    assert p is not None, v["report"].get("restart_note")
    return p


def _message_offsets(data: bytes) -> set[int]:
    """The commitlog offsets of a consume queue file's units standing for a message (offset >= 0, size > 0, no
    ``fillPreBlank`` unit), as ``ConsumeQueue.recover`` reads them."""
    return {u[0] for u in _units_of(data) if u[0] >= 0 and u[1] > 0 and u[:2] != BLANK}


def _units_of(data: bytes) -> list[tuple[int, int, int]]:
    return [(int.from_bytes(data[i:i + 8], "big", signed=True), int.from_bytes(data[i + 8:i + 12], "big", signed=True),
             int.from_bytes(data[i + 12:i + 20], "big", signed=True)) for i in range(0, len(data) - 19, 20)]


def _queue_zero_facts(run: dict, name: str) -> tuple[int, int, int]:
    """What the broker's restart did to topic "" queue 0, from its files: the units it put (the layout's, checked
    here: the empty request's unit and the empty-name ones, ``fillPreBlank`` units left out), the message units of
    ``before/``'s ``consumequeue/0/`` files gone from its own, and the files of ``consumequeue/0/`` and
    ``consumequeue_ext/0/`` whose bytes differ from ``before/``'s (none of those deleted)."""
    d = Path(run["scenario"]["dir"])
    kind = name.split("-restart-")[1].split("-")[0]
    exp, before = d / "expected", d / "before"
    held = _units(exp / CQ)[:len(LAYOUT[kind])]
    assert [u[:2] == BLANK for u in held] == [s == BLANK for s in LAYOUT[kind]], held
    put = sum(u[:2] != BLANK for u in held)
    changed, gone = 0, set()
    for folder in ("consumequeue/0", "consumequeue_ext/0"):
        ours = set(files_under(exp / folder)) if (exp / folder).is_dir() else set()
        was = set(files_under(before / folder)) if (before / folder).is_dir() else set()
        assert was <= ours, (folder, was, ours)
        for rel in sorted(ours):
            after = (exp / folder / rel).read_bytes()
            prior = (before / folder / rel).read_bytes() if rel in was else None
            changed += after != prior
            if folder == "consumequeue/0" and prior is not None:
                gone |= _message_offsets(prior) - _message_offsets(after)
    return put, len(gone), changed


@pytest.mark.parametrize("name", CASES)
def test_verify_predicts_topic_empty_queue_zero(written, name):
    """What the broker's restart did to topic "" queue 0 first (:func:`_queue_zero_facts`: the units its second
    reput put, the store's units it wrote over, the files of ``consumequeue/0/`` and ``consumequeue_ext/0/`` it
    changed; a file planted there, so some did change).  Then ``verify`` of ``before/``: queue ``/0`` with those
    units put and lost, and its note naming as many files changed (the mix over the held files, clean and after a
    crash)."""
    put, lost, changed = _queue_zero_facts(written, name)
    assert put > 0 and changed > 0, (put, changed)
    assert bool(lost) == bool(_planted(written)), lost   # a planted file's units written over, none without
    p = _restart_prediction(written)
    (q,) = [q for q in p["queues"] if q["queue"] == "/0"] or [None]
    assert q is not None, [n for n in p["notes"] if 'topic ""' in n]
    assert (q["units_dispatched_again"], q["units_lost"]) == (put, lost), q
    (note,) = [n for n in p["notes"] if n.startswith('topic "" queues 0 ')]
    assert f"reopens queue(s) 0 over their files, {changed} file(s) then differing" in note, note
