"""DLedger crash restarts whose recovery walk ends early (a damaged message: its body CRC fails the walk's message
check, DLedger's recovery reads none and keeps the log) and whose start's reput runs without
``recheckReputOffsetFromCq``, on the ``-dledger-abort-small`` stores, checked against the broker.

* ``-small-damaged-norecheck``: :func:`broker_dledger_scenarios.small_abort_scenarios`' ``-small-norecheck`` store with
  a body byte of message 197 (a T1/0 one in the last data file, past ``processOffset``) damaged (``damageMessage``).
* ``-small-zeros-kept-damaged-norecheck`` (full suite; 5.3.3 with ``DLEDGER_LINES=5.3.3,5.5.1``): the same over
  :mod:`test_dledger_crash_zeros_broker`'s ``-zeros-kept`` store (``consumequeue/T0/0/0`` planted all zeros).

The start's reput begins at the committed position, the log's end (DLedger commits the whole log of a group of one):
it dispatches nothing, so the records past the damage (messages 197 to 199) get no unit and no index key; the broker's
index holds the keys of the walk's records only.  ``verify`` on the store as the restart found it predicts the units
lost, queue by queue, and the index keys put again as the broker's files hold them.
"""
from __future__ import annotations

from pathlib import Path

import broker_harness as bh
import numpy as np
import pytest
from broker_dledger_scenarios import small_abort_scenarios
from test_dledger_crash_zeros_broker import _units, _zeros_planted, units_lost_as_the_broker, zeros_scenarios
from test_dledger_crash_zeros_damaged_broker import DAMAGED, _walk_ended_at_the_damage
from test_dledger_crash_zeros_mixed_broker import _offsets

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

LINES = [ln for ln in bh.lines_from_env("DLEDGER_LINES", "5.5.1") if ln.startswith(("5.3", "5.5"))]

def _scenarios(line: str) -> list[dict]:
    """The module docstring's stores of ``line``."""
    plain = small_abort_scenarios(line)[1]
    assert "recheckReputOffsetFromCq" not in plain["config"], plain["config"]
    kept = zeros_scenarios(line)[0]
    conf = {k: v for k, v in kept["config"].items() if k != "recheckReputOffsetFromCq"}
    return [{**plain, "damageMessage": DAMAGED, "name": f"{line}-dledger-abort-small-damaged-norecheck"},
            {**kept, "config": conf, "damageMessage": DAMAGED, "name": f"{kept['name']}-damaged-norecheck"}]


SCENARIOS = {ln: bh.bounded(_scenarios(ln), full_only=("-zeros-kept-damaged-norecheck",)) for ln in LINES}
STORES = bh.Stores(SCENARIOS, "DLedger crash restarts ending early, the reput from the committed position",
                   threads=1)
_RUNS: dict[str, dict] = {}


@pytest.fixture
def written(request):  # noqa: ANN001, ANN201
    return bh.written_once(request, _RUNS, STORES, every=True)


def _index_offsets(folder: Path, config: dict) -> list[np.ndarray]:
    """The commitlog offsets of the keys each index file in ``folder`` holds (its entries 1 to indexCount - 1)."""
    from pipelines.verify.compare import IndexView
    out = []
    for f in sorted(folder.iterdir()) if folder.is_dir() else []:
        v = IndexView.parse(f.read_bytes(), int(config.get("maxHashSlotNum", 5000000)),
                            int(config.get("maxIndexNum", 20000000)))
        out.append(v.entries["commitlogOffset"][1:max(1, v.header["index_count"])].astype(np.int64))
    return out


def _as_the_broker(src: Path, tmp_path: Path, sc: dict, w: dict, line: str) -> None:
    """What the broker wrote, then ``verify``'s prediction on ``src/before`` against it: the units lost (all queues,
    queue by queue) and the index keys put again."""
    offsets = _offsets(src)
    assert len(offsets) == len(sc["messages"]), len(offsets)
    _walk_ended_at_the_damage(w, src, offsets)   # DLedger keeps the whole log, the walk's processOffset short
    # its reput from the log's end dispatched nothing: no unit of a record from the damaged one on
    ends = w["queuesAfterDispatch"]
    assert ends == w["queuesAfterLoad"], (ends, w["queuesAfterLoad"])
    units = [o for q, v in ends.items() for o, _s in _units(src, q, int(v["maxOffset"]))]
    assert units and max(units) < offsets[DAMAGED], (max(units), offsets[DAMAGED])
    # and its index: keys of the walk's records only, none from the damaged one on
    conf = sc["config"]
    before = sum(len(k) for k in _index_offsets(src / "before" / "index", conf))
    after = _index_offsets(src / "expected" / "index", conf)
    keyed = np.concatenate(after) if after else np.zeros(0, dtype=np.int64)
    assert len(keyed) and int(keyed.max()) < offsets[DAMAGED], (int(keyed.max()), offsets[DAMAGED])
    p = units_lost_as_the_broker(src, tmp_path, sc, ends, line)
    # the index files the abnormal start kept held ``before`` keys (none: every file deleted, or their keys kept)
    assert p["index_keys_put_again"] == len(keyed) - (before if not p["index_files_deleted"] else 0), (
        len(keyed), before, p["index_keys_put_again"], p["index_files_deleted"], p["notes"])


@pytest.mark.parametrize("line", LINES)
def test_a_walk_ending_early_with_the_reput_from_the_log_s_end(written, tmp_path, line):
    """``-small-damaged-norecheck``: the broker dispatched and indexed the walk's records only; ``verify`` predicts
    the units lost and the index keys put again as the broker's files hold them."""
    name = f"{line}-dledger-abort-small-damaged-norecheck"
    r = written[name]
    _as_the_broker(Path(r["scenario"]["dir"]), tmp_path, r["scenario"], r["written"], line)


@pytest.mark.parametrize("line", LINES)
def test_a_walk_ending_early_onto_a_file_of_zeros_with_the_reput_from_the_log_s_end(written, tmp_path, line):
    """``-small-zeros-kept-damaged-norecheck`` (full suite): the same over T0/0's planted file of zeros."""
    name = f"{line}-dledger-abort-small-zeros-kept-damaged-norecheck"
    if name not in written:
        pytest.skip(f"{name}: PIPELINES_FULL_SUITE=1")
    r = written[name]
    src = Path(r["scenario"]["dir"])
    _zeros_planted(src, "T0/0")
    _as_the_broker(src, tmp_path, r["scenario"], r["written"], line)
