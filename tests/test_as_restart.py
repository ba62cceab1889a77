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
