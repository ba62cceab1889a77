"""DLedger's recovery at a restart (store_format.dledger_recovery) on logs built here entry by entry,
for the rules the broker harness cannot produce (a single-node group writes one term, consecutive
indexes): a term that goes back, an index that skips, a committed index past the log's end, and a
walk that starts at the third data file from the end.  The checks against the broker's own
recovery (a damaged entry, an uncommitted tail) are in test_dledger_broker.py, test_dledger_crash_broker.py and
test_dledger_crash_damaged_broker.py."""
from __future__ import annotations

from pathlib import Path

import pyarrow.fs as pafs

from store_format.dledger import ENTRY_BLANK_MAGIC, ENTRY_HEADER_SIZE, find_dledger_log
from store_format.dledger_recovery import recover_dledger

FILE = 4096
BODY = 400   # an entry is 448 bytes: 9 a file, then a blank


def _log(tmp_path: Path, entries: list[tuple[int, int]], committed: int) -> pafs.LocalFileSystem:
    """``entries`` (index, term), appended as DLedger does (a blank where the next does not fit); the
    index files hold a unit for each."""
    root = tmp_path / "store" / "dledger-n0"
    (root / "data").mkdir(parents=True)
    (root / "index").mkdir()
    files: list[bytearray] = [bytearray(FILE)]
    units = bytearray()
    pos = 0
    size = ENTRY_HEADER_SIZE + BODY
    for idx, term in entries:
        if pos % FILE + size > FILE:
            files[-1][pos % FILE:pos % FILE + 4] = ENTRY_BLANK_MAGIC.to_bytes(4, "big", signed=True)
            files.append(bytearray(FILE))
            pos = (len(files) - 1) * FILE
        head = (1).to_bytes(4, "big") + size.to_bytes(4, "big") + idx.to_bytes(8, "big") + term.to_bytes(8, "big") \
            + pos.to_bytes(8, "big") + bytes(12) + BODY.to_bytes(4, "big")
        files[-1][pos % FILE:pos % FILE + size] = head + bytes(BODY)
        units[idx * 32:idx * 32 + 32] = (1).to_bytes(4, "big") + pos.to_bytes(8, "big") + size.to_bytes(4, "big") \
            + idx.to_bytes(8, "big") + term.to_bytes(8, "big")
        pos += size
    for i, data in enumerate(files):
        (root / "data" / f"{i * FILE:020d}").write_bytes(bytes(data))
    (root / "index" / f"{0:020d}").write_bytes(bytes(units) + bytes(FILE - len(units)))
    (root / "checkpoint").write_text(f"committedIndex={committed}\nendIndex={entries[-1][0]}\n")
    return pafs.LocalFileSystem()


def _recover(tmp_path: Path, entries: list[tuple[int, int]], committed: int):
    fs = _log(tmp_path, entries, committed)
    log = find_dledger_log(fs, str(tmp_path / "store"), "store", self_id="n0", data_path="", file_size=FILE)
    return log, recover_dledger(fs, log, FILE)


def test_a_clean_log_keeps_every_entry_and_the_checkpoint(tmp_path: Path) -> None:
    log, r = _recover(tmp_path, [(i, 1) for i in range(40)], 30)
    assert len(log.files) == 5 and r.checked_from == f"{2 * FILE:020d}"  # the third file from the end
    assert (r.ledger_end_index, r.committed_index, r.committed_pos) == (39, 30, log.committed_pos)
    assert r.process_offset == 4 * FILE + 4 * 448


def test_a_term_going_back_ends_the_log_and_lowers_the_committed_index(tmp_path: Path) -> None:
    entries = [(i, 2 if i < 35 else 1) for i in range(40)]
    log, r = _recover(tmp_path, entries, 39)
    assert r.ledger_end_index == 34 and "term 1 < 2" in r.reason
    assert r.committed_index == 34 and r.committed_pos == 3 * FILE + 8 * 448 == r.process_offset


def test_an_index_gap_ends_the_log(tmp_path: Path) -> None:
    entries = [(i if i < 37 else i + 1, 1) for i in range(40)]
    _, r = _recover(tmp_path, entries, 20)
    assert r.ledger_end_index == 36 and "index 38, not 37" in r.reason
    assert r.committed_index == 20
