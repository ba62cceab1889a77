"""DLedger stores that cannot be read as the broker reads them end in one line and exit code 2
(store_format.dledger): the DLedger folder the settings name is missing, its checkpoint is missing
or names an entry the log does not hold, the old commitlog does not end where the DLedger data starts.

The byte-for-byte checks against the broker's own DLedger stores are in test_dledger_broker.py (and its crash
restarts in test_dledger_crash_broker.py, test_dledger_crash_damaged_broker.py); these
stores are folders shaped as DLedgerCommitLog lays them out, with no entry in them."""
from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.cli import main

FILE = 1 << 16


def _store(tmp_path: Path, *, self_id: str = "n0", checkpoint: str | None = "committedIndex=3\nendIndex=3\n",
           legacy: tuple[int, ...] = (), bak: bool = False) -> tuple[Path, Path]:
    root = tmp_path / "store"
    data = root / f"dledger-{self_id}" / "data"
    data.mkdir(parents=True)
    (data / f"{2 * FILE:020d}").write_bytes(bytes(FILE))
    (root / f"dledger-{self_id}" / "index").mkdir()
    if checkpoint is not None:
        (root / f"dledger-{self_id}" / "checkpoint").write_text(checkpoint)
    if bak:  # IOUtils.string2File keeps the previous content there
        (root / f"dledger-{self_id}" / "checkpoint.bak").write_text("committedIndex=2\n")
    (root / "commitlog").mkdir()
    for base in legacy:
        (root / "commitlog" / f"{base:020d}").write_bytes(bytes(FILE))
    conf = tmp_path / "broker.conf"
    conf.write_text(f"enableDLegerCommitLog=true\ndLegerSelfId=n0\nmappedFileSizeCommitLog={FILE}\n")
    return root, conf


def _error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, list[str]]:
    code = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, [line for line in err.splitlines() if line.startswith("error:")]


@pytest.mark.parametrize(("kwargs", "words"), [
    ({"self_id": "n1"}, ["dledger-n0/", "dledger-n1"]),
    ({"checkpoint": None}, ["checkpoint", "committed"]),
    ({"checkpoint": None, "bak": True}, ["checkpoint.bak", "copy it"]),
    ({"checkpoint": "committedIndex=x\n"}, ["committedIndex", "'x'"]),
    ({}, ["committedIndex=3", "dledger-n0/index"]),
    ({"legacy": (0,), "checkpoint": "committedIndex=-1\n"}, ["commitlog/ ends at 65536", "131072"]),
    ({"checkpoint": "committedIndex=-1\n"}, ["nothing is committed", "committedIndex=-1"]),
], ids=["other-self-id", "no-checkpoint", "no-checkpoint-but-bak", "bad-checkpoint", "entry-not-in-log",
        "legacy-gap", "nothing-committed"])
def test_unreadable_dledger_stores_end_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], kwargs: dict,
                                                   words: list[str]) -> None:
    root, conf = _store(tmp_path, **kwargs)
    code, errors = _error(capsys, ["rebuild", "--store", str(root), "--out", str(tmp_path / "out"),
                                   "--config", str(conf), "--engine", "local"])
    assert code == 2 and len(errors) == 1, errors
    for w in words:
        assert w in errors[0], errors
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("rel", ["dledger-n0/checkpoint", "dledger-n0/currterm"])
def test_dump_names_the_dledger_log_instead_of_misreading_its_files(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                    rel: str) -> None:
    """DLedger's checkpoint has the store checkpoint's name: dump refuses it (and the log's other text
    file), naming the log, instead of reading it as a StoreCheckpoint."""
    root, _ = _store(tmp_path)
    (root / "dledger-n0" / "currterm").write_text("currTerm=1\n")
    code, errors = _error(capsys, ["dump", str(root / rel)])
    assert code == 2 and len(errors) == 1 and "DLedger log dledger-n0/" in errors[0], errors


def test_dump_of_a_data_file_whose_log_cannot_be_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A DLedger data file (here all zeros) is dumped as one, by its folder; a log whose checkpoint names an
    entry it does not hold leaves the committed position unknown, and the header says why."""
    import json
    root, conf = _store(tmp_path)
    code = main(["dump", str(root / "dledger-n0" / "data" / f"{2 * FILE:020d}"), "--json", "--config", str(conf)])
    items = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 0
    assert items[0]["kind"] == "dledger" and items[0]["log"] == "dledger-n0" and items[0]["committed_offset"] is None
    assert "committedIndex=3" in items[0]["committed_note"]
    assert [(i["event"], i["position"]) for i in items if i["type"] == "event"] == [("end_of_data", 0)]
    assert items[-1]["records"] == 0
