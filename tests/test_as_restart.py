"""``rebuild --as-restart``: the files a broker restart writes, checked against an independent way
to the same bytes.

A body byte flipped in the last segment fails the CRC check of the broker's recovery
(``CommitLog.recoverNormally`` checks the last three segments with ``checkCRCOnRecover=true``, the
default), which cuts the commitlog there; the reput then dispatches what is before the cut.  The
same bytes come from a plain rebuild of a copy of the store whose commitlog really ends there
(the rest of that segment zeroed: the end of data).  A plain rebuild of the damaged store itself
dispatches the damaged record (the reput does not check CRCs) and everything after it."""
from __future__ import annotations

import shutil
from pathlib import Path

from pipelines.rebuild import Progress, run_rebuild
from store_format.config import BrokerConfig
from store_format.corruption import flip_body_byte
from store_format.store import open_store
from store_format.writer import CommitLogWriter


def _files(out: Path) -> tuple[dict[str, bytes], list[bytes]]:
    cq = {str(p.relative_to(out / "consumequeue")): p.read_bytes()
          for p in sorted((out / "consumequeue").rglob("*")) if p.is_file()}
    index = [p.read_bytes() for p in sorted((out / "index").iterdir())]
    return cq, index


def test_as_restart_cuts_at_a_crc_error_in_the_last_segment(tmp_path: Path) -> None:
    config = BrokerConfig(mappedFileSizeCommitLog=4096, mappedFileSizeConsumeQueue=400, maxHashSlotNum=16,
                          maxIndexNum=64, brokerVersion="4")
    store = tmp_path / "store"
    offsets = []
    with CommitLogWriter(str(store), config) as w:
        for i in range(90):
            off, _ = w.append("T", i % 2, body=f"body-{i}".encode(), properties={"KEYS": f"k{i}"},
                              store_timestamp=1_700_000_000_000 + i)
            offsets.append(off)
    segments = open_store(str(store), config).segments
    assert len(segments) >= 3
    last = segments[-1]
    bad = next(o for o in offsets if o >= last.base + 200)
    flip_body_byte(str(store), bad)

    # the independent way: the same store with its commitlog ending at the bad record
    cut = tmp_path / "cut"
    shutil.copytree(store, cut)
    with open(cut / "commitlog" / last.name, "r+b") as f:
        f.seek(bad - last.base)
        f.write(bytes(last.size - (bad - last.base)))

    quiet = Progress(lambda line: None)
    restart = run_rebuild(str(store), str(tmp_path / "restart"), config, engine="local", as_restart=True,
                          progress=quiet)
    reference = run_rebuild(str(cut), str(tmp_path / "reference"), config, engine="local", progress=quiet)
    plain = run_rebuild(str(store), str(tmp_path / "plain"), config, engine="local", progress=quiet)

    assert _files(tmp_path / "restart") == _files(tmp_path / "reference")
    assert restart.dispatched == reference.dispatched == offsets.index(bad)
    assert plain.dispatched == len(offsets)  # the reput dispatches the damaged record and what follows
    discards = [a for a in restart.anomalies if a["kind"] == "restart_discards"]
    assert len(discards) == 1 and f"{len(offsets) - offsets.index(bad):,} record(s)" in discards[0]["detail"]


def test_verify_reports_what_a_restart_discards(tmp_path: Path) -> None:
    """verify gives the same figure as rebuild --as-restart: the records recovery discards."""
    from pipelines.verify import verify_store
    config = BrokerConfig(mappedFileSizeCommitLog=4096, mappedFileSizeConsumeQueue=400, maxHashSlotNum=16,
                          maxIndexNum=64, brokerVersion="4")
    store = tmp_path / "store"
    with CommitLogWriter(str(store), config) as w:
        offsets = [w.append("T", i % 2, body=f"body-{i}".encode(), store_timestamp=1_700_000_000_000 + i)[0]
                   for i in range(90)]
    last = open_store(str(store), config).segments[-1]
    bad = next(o for o in offsets if o >= last.base + 200)
    flip_body_byte(str(store), bad)
    quiet = Progress(lambda line: None)
    restart = run_rebuild(str(store), str(tmp_path / "restart"), config, engine="local", as_restart=True,
                          progress=quiet)
    (discards,) = [a for a in restart.anomalies if a["kind"] == "restart_discards"]
    report = verify_store(str(store), config, engine="local")
    assert report.restart.recovery_cut == bad
    assert report.restart.recovery_discarded_messages == len(offsets) - offsets.index(bad)
    assert f"{report.restart.recovery_discarded_messages:,} record(s)" in discards["detail"]


def test_as_restart_warns_when_the_store_still_holds_its_queues(tmp_path: Path) -> None:
    """``--as-restart`` computes the restart of a store whose ``consumequeue/`` and ``index/`` were deleted (the
    broker's rebuild procedure); a store that still holds such files gets one warning line naming them (a broker
    started on it as it is recovers from them), but for topic "" queue 0's files, which that start never loads."""
    config = BrokerConfig(mappedFileSizeCommitLog=4096, mappedFileSizeConsumeQueue=400, brokerVersion="4")
    store = tmp_path / "store"
    with CommitLogWriter(str(store), config) as w:
        for i in range(5):
            w.append("T", 0, body=f"body-{i}".encode(), store_timestamp=1_700_000_000_000 + i)

    def warnings(out: str) -> list[str]:
        lines: list[str] = []
        run_rebuild(str(store), str(tmp_path / out), config, engine="local", as_restart=True,
                    progress=Progress(lines.append))
        return [ln for ln in lines if "warning: the store holds" in ln]

    (store / "consumequeue" / "0").mkdir(parents=True)
    (store / "consumequeue" / "0" / f"{0:020d}").write_bytes(bytes(400))   # topic "" queue 0: not loaded
    assert warnings("a") == []
    (store / "consumequeue" / "T" / "0").mkdir(parents=True)
    (store / "consumequeue" / "T" / "0" / f"{0:020d}").write_bytes(bytes(400))
    (found,) = warnings("b")
    assert "holds 1 consume queue or index file(s) (consumequeue/T/0/00000000000000000000)" in found, found
