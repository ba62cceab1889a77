"""The settings a restart's recovery and ``DefaultMessageStore.start`` read, taken from ``broker.conf``
(docs/restart-settings.md).  Before, ``checkCRCOnRecover``, ``messageIndexSafe``,
``recheckReputOffsetFromCq``, ``forceVerifyPropCRC`` and ``enableControllerMode`` were dropped when
``broker.conf`` was read: a restart was always planned with the broker's defaults.

Expected values come from the Java rules named in each docstring and from the writer's own offsets;
the files of ``--as-restart`` are compared with a plain rebuild of a store whose commitlog really is
what the rule keeps (an independent way to the same bytes)."""
from __future__ import annotations

import struct
from pathlib import Path

import pytest

from pipelines.rebuild import Progress, run_rebuild
from store_format.config import load_broker_config
from store_format.corruption import flip_body_byte
from store_format.errors import UnsupportedConfigError
from store_format.layout import TRANSACTION_COMMIT, TRANSACTION_PREPARED
from store_format.recovery import plan_recovery
from store_format.store import open_store
from store_format.writer import CommitLogWriter

SEGMENT = 4096
TS0 = 1_700_000_000_000
QUIET = Progress(lambda line: None)


def _conf(text: str, version: str):
    return load_broker_config(f"mappedFileSizeCommitLog={SEGMENT}\nmappedFileSizeConsumeQueue=400\n"
                              f"maxHashSlotNum=16\nmaxIndexNum=64\nbrokerVersion={version}\n{text}")


def _write(root: Path, version: str, n: int = 90, sys_flags: dict[int, int] | None = None) -> list[int]:
    config = _conf("", version)
    offsets = []
    with CommitLogWriter(str(root), config) as w:
        for i in range(n):
            off, _ = w.append("T", i % 2, body=f"body-{i}".encode(), properties={"KEYS": f"k{i}"},
                              store_timestamp=TS0 + 1000 * i, sys_flag=(sys_flags or {}).get(i, 0))
            offsets.append(off)
    return offsets


def _files(out: Path) -> tuple[dict[str, bytes], list[bytes]]:
    cq = {str(p.relative_to(out / "consumequeue")): p.read_bytes()
          for p in sorted((out / "consumequeue").rglob("*")) if p.is_file()}
    return cq, [p.read_bytes() for p in sorted((out / "index").iterdir())]


@pytest.mark.parametrize("version", ["4", "5"])
def test_check_crc_on_recover_false_from_broker_conf(tmp_path: Path, version: str) -> None:
    """``CommitLog.recoverNormally`` passes ``checkCRCOnRecover`` to ``checkMessageAndReturnSize``: with
    ``checkCRCOnRecover=false`` in broker.conf a flipped body byte in the last segment no longer cuts the
    commitlog, so a restart dispatches everything, as a plain rebuild does (4.9 normal: the reput from
    the first segment; 5.x: recovery itself from the first segment, consume queues deleted).  With the
    default the restart stops at the damaged record (the reference store ends there)."""
    store = tmp_path / "store"
    offsets = _write(store, version)
    last = open_store(str(store), _conf("", version)).segments[-1]
    bad = next(o for o in offsets if o >= last.base + 200)
    flip_body_byte(str(store), bad)

    off = _conf("checkCRCOnRecover=false", version)
    assert off.checkCRCOnRecover is False
    no_crc = run_rebuild(str(store), str(tmp_path / "no_crc"), off, engine="local", as_restart=True, progress=QUIET)
    plain = run_rebuild(str(store), str(tmp_path / "plain"), off, engine="local", progress=QUIET)
    assert no_crc.dispatched == plain.dispatched == len(offsets)
    assert _files(tmp_path / "no_crc") == _files(tmp_path / "plain")

    default = run_rebuild(str(store), str(tmp_path / "default"), _conf("", version), engine="local",
                          as_restart=True, progress=QUIET)
    assert default.dispatched == offsets.index(bad)
    assert _files(tmp_path / "default") != _files(tmp_path / "no_crc")


def test_message_index_safe_from_broker_conf(tmp_path: Path) -> None:
    """``CommitLog.isMappedFileMatchedRecover`` compares a segment's first store time with
    ``StoreCheckpoint.getMinTimestampIndex()`` when ``messageIndexEnable && messageIndexSafe``: an index
    timestamp at segment 1's first record moves the abnormal recovery's start from the segment the
    physic/logics timestamps pick back to segment 1; with ``messageIndexEnable=false`` the switch is
    not read."""
    store = tmp_path / "store"
    offsets = _write(store, "4", n=120)
    st = open_store(str(store), _conf("", "4"))
    assert len(st.segments) >= 4
    first_ts = {seg.base: TS0 + 1000 * next(i for i, o in enumerate(offsets) if o >= seg.base) for seg in st.segments}
    ts3 = first_ts[st.segments[3].base] + 3000   # getMinTimestamp() subtracts 3 s
    cp = struct.pack(">qqq", ts3, ts3, first_ts[st.segments[1].base]).ljust(4096, b"\0")
    plain = plan_recovery(st, _conf("", "4"), abnormal=True, checkpoint=cp)
    safe = plan_recovery(st, _conf("messageIndexSafe=true", "4"), abnormal=True, checkpoint=cp)
    unindexed = plan_recovery(st, _conf("messageIndexSafe=true\nmessageIndexEnable=false", "4"), abnormal=True,
                              checkpoint=cp)
    assert plain.checked_from == st.segments[3].base
    assert safe.checked_from == st.segments[1].base
    assert unindexed.checked_from == st.segments[3].base
    # 5.5.1 IndexService.isMappedFileMatchedRecover reads messageIndexEnable, not indexFileWriteEnable: a
    # 5.5 broker that writes no index files still takes the index timestamp when messageIndexSafe=true
    no_files = _conf("messageIndexSafe=true\nindexFileWriteEnable=false", "5.5")
    assert not no_files.writes_index_files and no_files.messageIndexEnable
    assert plan_recovery(st, no_files, abnormal=True, checkpoint=cp).checked_from == st.segments[1].base


def _prepared_tail(root: Path, version: str) -> tuple[list[int], int]:
    """A store whose last record is a keyed prepared transaction message: indexed, never queued."""
    n = 90
    offsets = _write(root, version, n=n, sys_flags={n - 1: TRANSACTION_PREPARED})
    return offsets, n - 1


def test_recheck_reput_offset_from_cq_plans_a_second_index_put(tmp_path: Path) -> None:
    """5.x ``doRecheckReputOffsetFromCq`` (``recheckReputOffsetFromCq=true``) restarts the reput at the
    consume queues' largest ``maxPhysicOffset`` (the end of the last queued record).  A keyed prepared
    message after it was indexed by the recovery and is put again (``IndexService.buildIndex`` skips only
    records below ``endPhyOffset``, which is that record's own offset): the plan names it (the rebuild puts
    its keys again: checked against the broker in test_restart_layouts_broker).  Without the switch
    ``start()`` sets the reput at ``getConfirmOffset()``, the end."""
    store = tmp_path / "store"
    offsets, last = _prepared_tail(store, "5")
    st = open_store(str(store), _conf("", "5"))
    plan = plan_recovery(st, _conf("", "5"), abnormal=False)
    assert plan.restart_reput_from == -1 and plan.dispatch_from == st.segments[0].base
    plan = plan_recovery(st, _conf("recheckReputOffsetFromCq=true", "5"), abnormal=False)
    assert (plan.restart_reput_from, plan.reindex) == (offsets[last], offsets[last])
    # the same switch without keys on that record: the second reput adds nothing
    plan = plan_recovery(st, _conf("recheckReputOffsetFromCq=true\nmessageIndexEnable=false", "5"), abnormal=False)
    assert plan.restart_reput_from == offsets[last]   # end of the last queued record = start of the prepared one
    assert plan.reindex == -1
    # 5.5.1 without index files (indexFileWriteEnable=false): the second reput puts no index key either
    plan = plan_recovery(st, _conf("recheckReputOffsetFromCq=true\nindexFileWriteEnable=false", "5.5"),
                         abnormal=False)
    assert (plan.restart_reput_from, plan.reindex) == (offsets[last], -1)


def test_49_abnormal_start_reput_is_checked_always(tmp_path: Path) -> None:
    """4.9.8 ``DefaultMessageStore.start`` always restarts the reput at the consume queues' largest
    ``maxPhysicOffset`` after an abnormal recovery (no switch): the same prepared tail is indexed again; a
    normal 4.9.8 recovery dispatches nothing, its reput starts at the first segment."""
    store = tmp_path / "store"
    offsets, last = _prepared_tail(store, "4")
    st = open_store(str(store), _conf("", "4"))
    assert plan_recovery(st, _conf("", "4"), abnormal=True).reindex == offsets[last]
    assert plan_recovery(st, _conf("", "4"), abnormal=False).restart_reput_from == -1


def test_recheck_with_a_committed_tail_gives_the_default_files(tmp_path: Path) -> None:
    """With a queued record last (a commit-type transaction message, ``CommitLogDispatcherBuildConsumeQueue``
    queues it) the reput restarts at the end of the data and adds nothing: ``--as-restart`` writes the
    same files with and without ``recheckReputOffsetFromCq``."""
    store = tmp_path / "store"
    offsets = _write(store, "5", n=90, sys_flags={89: TRANSACTION_COMMIT})
    st = open_store(str(store), _conf("", "5"))
    plan = plan_recovery(st, _conf("recheckReputOffsetFromCq=true", "5"), abnormal=False)
    assert plan.restart_reput_from == plan.process_offset > offsets[-1]
    a = run_rebuild(str(store), str(tmp_path / "a"), _conf("recheckReputOffsetFromCq=true", "5"), engine="local",
                    as_restart=True, progress=QUIET)
    b = run_rebuild(str(store), str(tmp_path / "b"), _conf("", "5"), engine="local", as_restart=True,
                    progress=QUIET)
    assert a.dispatched == b.dispatched == len(offsets)
    assert _files(tmp_path / "a") == _files(tmp_path / "b")


@pytest.mark.parametrize("setting", ["enableControllerMode=true"])
def test_5x_settings_that_cannot_be_derived_are_refused(tmp_path: Path, setting: str) -> None:
    """``enableControllerMode``: ``CommitLog.getConfirmOffset`` comes from the controller's sync state set,
    not derived from the store: refused for 5.x.  4.9.8 has no such setting (the line is ignored).
    (``forceVerifyPropCRC`` is derived: tests/test_propcrc.py.)"""
    store = tmp_path / "store"
    _write(store, "5", n=20)
    with pytest.raises(UnsupportedConfigError, match=setting.split("=")[0]):
        plan_recovery(open_store(str(store), _conf("", "5")), _conf(setting, "5"), abnormal=False)
    assert plan_recovery(open_store(str(store), _conf("", "4")), _conf(setting, "4"), abnormal=False).process_offset > 0


def test_concurrent_reput_same_files_on_a_clean_store_and_on_damage(tmp_path: Path) -> None:
    """5.x ``enableBuildConsumeQueueConcurrently=true`` swaps in ``ConcurrentReputMessageService``: on records
    its ``preCheckMessageAndReturnSize`` and ``checkMessageAndReturnSize`` both accept it dispatches what
    ``ReputMessageService`` does (same files).  A bad magic code (or a negative totalSize) makes
    ``preCheckMessageAndReturnSize`` give -1 and the reput stays AT that record for good: the files of a store
    whose commitlog ends before it (written again, without the rest), and the row at it says so.  A size
    mismatch (a good magic code, a wrong positive totalSize) is accepted by the pre-check and parsed again
    by the batches (:mod:`store_format.concurrent_batches`).  4.9.8 has no such setting."""
    from store_format.corruption import read_record_head, set_head_field, set_magic_code, set_total_size
    from store_format.reput import rebuild_in_memory
    store = tmp_path / "store"
    offsets = _write(store, "5")
    head = read_record_head(str(store), offsets[40])

    def restore() -> None:
        for field in ("totalSize", "magicCode"):
            set_head_field(str(store), offsets[40], field, head[field])
    conc = _conf("enableBuildConsumeQueueConcurrently=true", "5")
    st = open_store(str(store), conc)
    a, b = rebuild_in_memory(st, conc), rebuild_in_memory(st, _conf("", "5"))
    assert (a.consumequeue, a.index) == (b.consumequeue, b.index) and a.dispatched == len(offsets)
    before = tmp_path / "before"
    _write(before, "5", n=40)                        # the same first 40 records, nothing after them
    want = rebuild_in_memory(open_store(str(before), conc), conc)
    for damage, value in ((set_magic_code, 0xDEADBEEF), (set_total_size, -8)):
        damage(str(store), offsets[40], value)
        got = rebuild_in_memory(st, conc)
        assert (got.consumequeue, got.index, got.dispatched) == (want.consumequeue, want.index, 40)
        assert [a["detail"] for a in got.anomalies if "stops here for good" in a["detail"]]
        seq = rebuild_in_memory(st, _conf("", "5"))  # the sequential reput skips the rest of the segment only
        assert seq.dispatched > 40
        restore()
    out = tmp_path / "out"
    set_magic_code(str(store), offsets[40])
    summary = run_rebuild(str(store), str(out), conc, engine="local", progress=QUIET)
    assert _files(out) == (want.consumequeue, [data for _, data in want.index])
    assert [x["commitlog_offset"] for x in summary.anomalies] == [offsets[40]]
    restore()
    # 8 bytes too long: the batch task's parse of the next record's first 8 bytes leaves 4 bytes, on which
    # checkMessageAndReturnSize returns without reading, for ever: nothing from the batch's start (the
    # segment's: it is smaller than the 4 MiB of a batch) on is dispatched
    set_total_size(str(store), offsets[40], delta=8)
    seg = st.segment_at(offsets[40])
    assert seg is not None and seg.base > 0
    kept = sum(1 for o in offsets if o < seg.base)
    _write(tmp_path / "kept", "5", n=kept)
    want = rebuild_in_memory(open_store(str(tmp_path / "kept"), conc), conc)
    got = rebuild_in_memory(st, conc)
    assert (got.consumequeue, got.index, got.dispatched) == (want.consumequeue, want.index, kept)
    assert [(a["segment"], a["position"]) for a in got.anomalies if "never ends" in a["detail"]] == \
        [(seg.name, offsets[40] - seg.base)]
    run_rebuild(str(store), str(tmp_path / "out2"), conc, engine="local", progress=QUIET)
    assert _files(tmp_path / "out2") == (want.consumequeue, [data for _, data in want.index])
    restore()
    # as long as itself and the next record: the pre-check walks on over the records after it to the blank and
    # rolls to the next file; the batch's parse reads the next record and every later one of the segment whole,
    # its task ends, and the reput goes on at the next file: every record but the damaged one is dispatched, the
    # row at it says the reput goes past it (the broker's own run of such a store:
    # test_concurrent_empty_requests_broker, rollon)
    set_total_size(str(store), offsets[40], delta=offsets[42] - offsets[41])
    got = rebuild_in_memory(st, conc)
    assert got.dispatched == len(offsets) - 1 and seg.base + seg.size < offsets[-1]
    past = [(a["segment"], a["position"]) for a in got.anomalies if "goes past the damaged" in a.get("detail", "")]
    assert past == [(seg.name, offsets[40] - seg.base)]
    assert not [a for a in got.anomalies if "stops here for good" in a.get("detail", "")]
    restore()
    set_magic_code(str(store), offsets[40])
    four = _conf("enableBuildConsumeQueueConcurrently=true", "4")
    assert rebuild_in_memory(open_store(str(store), four), four).dispatched < len(offsets)
