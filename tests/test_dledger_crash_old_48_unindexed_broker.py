"""A converted store's old-file refusal whose DLedger check 48 bytes further parses a keyed message after a walk that
indexed nothing (every record of the data files a rolled back transaction message: ``IndexService.buildIndex``
returns before putting a key of one, ``CommitLogDispatcherBuildConsumeQueue`` puts no unit for one).

``<line>-dledger-abort-converted-rollback-old-magic-48``: the ``-old-magic-48`` store
(:mod:`test_dledger_crash_old_48_broker`) whose data files hold rolled back messages instead of prepared ones.  The
crash restart's index holds nothing of the walk, so the start's reput from the first old file indexes the old records
it dispatches (none lies below the index's ``endPhyOffset``), the planted T5 message (keys ``E5``) at its
PHYSICALOFFSET field (the refused record's offset, not below the last old record indexed before it:
``IndexFile.putKey`` moves ``endPhyOffset`` there), then the second old file's records, all above it.
``-48-keyed`` (``PIPELINES_FULL_SUITE=1``): the planted field above every record of the log (2**40): the first old
records indexed, E5 at the field, nothing after it.  Written by the 5.5.1 and 5.3.3 brokers through the JVM harness
in ``tests/broker/``: what the broker's restart wrote, ``rebuild --as-restart`` byte for byte and ``verify``'s
figures.
"""
from __future__ import annotations

import base64
from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_runs import LINES, _as_restart, _dledger_prediction, _same_tree, _units
from test_dledger_crash_old_48_broker import FIELD, MSG, _index_offsets
from test_dledger_crash_old_48_more_broker import ABOVE, KEYED, _slots
from test_dledger_crash_old_refused_broker import DAMAGED_PUT, _old_file_records, old_magic_scenario

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

_LINES_5 = [ln for ln in LINES if not ln.startswith("4")]


def unindexed_48_scenarios(line: str) -> list[dict]:
    """The -old-magic-48 store and its -48-keyed variant (module docstring) with rolled back messages after the
    switch to DLedger."""
    sc = old_magic_scenario(line)
    switch = next(i for i, m in enumerate(sc["messages"]) if "switchToDLedger" in m)
    messages = [*sc["messages"][:switch + 1], *({**m, "tranType": "rollback"} for m in sc["messages"][switch + 1:])]
    stem = sc["name"].replace("-converted-prepared-", "-converted-rollback-")
    planted = {"put": DAMAGED_PUT, "add": 48, "offsetFieldAt": FIELD, "bytes": base64.b64encode(MSG).decode()}
    keyed = {"put": DAMAGED_PUT, "add": 48, "bytes": base64.b64encode(KEYED).decode()}
    return bh.bounded([{**sc, "messages": messages, "name": f"{stem}-48", "plantBytes": planted},
                       {**sc, "messages": messages, "name": f"{stem}-48-keyed", "plantBytes": keyed}],
                      full_only=("-48-keyed",))


SCENARIOS = {line: unindexed_48_scenarios(line) for line in _LINES_5}
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "converted DLedger store(s), old-file refusal 48, walk indexing nothing", threads=1)


@pytest.fixture
def runs(request) -> dict[str, dict]:  # noqa: ANN001
    """Every scenario as the broker wrote and restarted it (once a session)."""
    if not SCENARIOS:
        pytest.skip("a 5.x line only: DLEDGER_LINES=5.5.1")
    return bh.written_once(request, _RUNS, STORES, every=True)


def _check(line: str, runs: dict, tmp_path: Path, suffix: str) -> None:
    name = f"{line}-dledger-abort-converted-rollback-old-magic{suffix}"
    if name not in runs:
        pytest.skip("PIPELINES_FULL_SUITE=1 writes this variant")
    r = runs[name]
    w = r["written"]
    src = Path(r["scenario"]["dir"])
    old = sorted((src / "before" / "commitlog").iterdir())
    assert len(old) == 2, old
    damaged = int(w["damagedMagicRecord"])
    first = [int(old[0].name) + a for a in _old_file_records(old[0])]
    assert len(first) == DAMAGED_PUT and int(w["plantedAt"]) == damaged + 48, (first, w)
    field = ABOVE if suffix.endswith("keyed") else damaged
    data_start = int(old[1].name) + old[1].stat().st_size   # the first data file's offset (dividedCommitlogOffset)
    # what the broker put: T5/0's unit at the planted field, no unit of the data files (rolled back messages)
    units = _units(src / "expected" / "consumequeue")
    assert [u[:2] for u in units if u[0] == "T5/0"] == [("T5/0", field)], units
    assert units and all(u[1] < data_start or u[1] == ABOVE for u in units if u[2] != 2**31 - 1), units
    # what the broker indexed (the restart found no index/): in reput order, the old records before the refused one,
    # E5 once at the field, then the second old file's records not below it; nothing of the data files
    assert not (src / "before" / "index").exists()
    offsets = _index_offsets(src / "expected", _slots(src))
    second = [int(old[1].name) + a for a in _old_file_records(old[1])]
    assert offsets == sorted(offsets) and offsets.count(field) == 1, offsets
    at = offsets.index(field)
    assert sorted(set(offsets[:at])) == first, (offsets, first)
    after = sorted(set(offsets[at + 1:]))
    assert set(after) <= set(second) and (not after if field == ABOVE else bool(after)), (after, second)
    assert len(after) > len(second) // 2 or field == ABOVE, (after, second)
    code, err = _as_restart(src / "before", tmp_path / name, src, line)
    assert code == 0, err[-2000:]
    assert f"refuses the record at {damaged} in an old commitlog file and, 48 bytes further" in err, err[-3000:]
    _same_tree(src / "expected", tmp_path / name)
    # verify's figures: the keys the restart puts, the broker's entries (its index written from nothing), in reput
    # order: the first old records', E5's, the later ones' not below it
    p = _dledger_prediction(src, name, line, tmp_path)
    assert (p["index_keys_put_again"], p["units_lost"]) == (len(offsets), 0), (p["index_keys_put_again"], p["notes"])


@pytest.mark.parametrize("line", _LINES_5)
def test_as_restart_whose_reput_parses_a_keyed_message_past_a_refused_record_after_a_walk_indexing_nothing(
        line, runs, tmp_path):
    """The -48 store: the broker indexes the three old records before the refused one, E5 at the refused record's
    offset, then the second old file's records (each above it), none of the rolled back ones; ``rebuild
    --as-restart`` writes its consumequeue/ and index/ byte for byte, ``verify`` counts its keys."""
    _check(line, runs, tmp_path, "-48")


@pytest.mark.parametrize("line", _LINES_5)
def test_as_restart_whose_reput_parses_a_message_keyed_above_the_log_after_a_walk_indexing_nothing(
        line, runs, tmp_path):
    """The -48-keyed store (``PIPELINES_FULL_SUITE=1``): the three old records' keys, E5 at 2**40, nothing after it
    (every later record below that ``endPhyOffset``); byte for byte, ``verify``'s keys the broker's."""
    _check(line, runs, tmp_path, "-48-keyed")
