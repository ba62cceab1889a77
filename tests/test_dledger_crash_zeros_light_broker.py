"""5.5.1 DLedger crash restart whose store holds a light queue (multi-dispatch, ``enableMultiDispatch``/``enableLmq``:
``%LMQ%q1``, queue 0) of one consume queue file of zeros named 0, which the recovery's walk writes light units into,
checked against the broker.

``-small-zeros-light`` is :mod:`test_dledger_crash_zeros_broker`'s ``-small`` store with messages 10 (the first data
file), 195 and 199 (the walk's data file; 199 past ``processOffset``) also to ``%LMQ%q1`` (light queue offsets 0, 1,
2; their bodies shorter by the properties: the same layout), ``consumequeue/%LMQ%q1/0/0`` planted all zeros.
"""
from __future__ import annotations

import base64
from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_2gib import BLANK_MAX, held_units, queued_messages
from broker_dledger_inside_scenarios import LIGHT_PROPS
from test_dledger_crash_zeros_broker import _units, _verify, _zeros_planted, zeros_scenarios

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

LINE = "5.5.1"
LIGHT = "%LMQ%q1/0"
LIGHT_PUTS = (10, 195, 199)


def _light(m: dict, offset: int) -> dict:
    """Message ``m`` also to %LMQ%q1 (light queue offset ``offset``), its body shorter by the properties."""
    return {**m, "body": base64.b64encode(base64.b64decode(m["body"])[:-LIGHT_PROPS]).decode(),
            "properties": {"INNER_MULTI_DISPATCH": "%LMQ%q1", "INNER_MULTI_QUEUE_OFFSET": str(offset)}}


def _scenario() -> dict:
    """``-small-zeros-light`` (module docstring)."""
    sc = zeros_scenarios(LINE)[0]
    messages = [_light(m, LIGHT_PUTS.index(i)) if i in LIGHT_PUTS else m for i, m in enumerate(sc["messages"])]
    return {**sc, "messages": messages, "config": {**sc["config"], "enableMultiDispatch": "true", "enableLmq": "true"},
            "plantFiles": {f"consumequeue/{LIGHT}/{0:020d}": sc["plantFiles"][f"consumequeue/T0/0/{0:020d}"]},
            "name": sc["name"].replace("-zeros-kept", "-zeros-light")}


SCENARIOS = {LINE: [_scenario()]}
STORES = bh.Stores(SCENARIOS, "DLedger crash restart with a light queue of zeros on disk", threads=1)
_RUNS: dict[str, dict] = {}


@pytest.fixture
def written(request):  # noqa: ANN001, ANN201
    return bh.written_once(request, _RUNS, STORES, every=True)


def test_the_walk_appends_light_units_from_byte_0_of_a_file_of_zeros(written, tmp_path):
    """``-small-zeros-light``: the broker's %LMQ%q1/0 after the load (the walk and the cut) is the planted file holding
    message 195's light unit (light queue offset 1) at byte 0, no ``fillPreBlank`` unit, 199's (past
    ``processOffset``) cut; after the reput 199's follows it at 20, though its light queue offset is 2
    (``multiDispatchLmqQueue``'s ``putMessagePositionInfo`` appends at the write position as for own units).
    ``verify`` predicts the units lost (all queues, and the light queue's: message 10's, not walked) and the index keys
    put again as the broker's files hold them."""
    r = written[f"{LINE}-dledger-abort-small-zeros-light"]
    sc, w, src = r["scenario"], r["written"], Path(r["scenario"]["dir"])
    _zeros_planted(src, LIGHT)
    po = int(w["truncateDirtyLogicFilesAt"])
    load, after = w["queuesAfterLoad"][LIGHT], w["queuesAfterDispatch"][LIGHT]
    units = _units(src, LIGHT, int(after["maxOffset"]))
    walk_from = int(sorted((src / "before" / "dledger-n0" / "data").iterdir())[-1].name)
    assert len(units) == len(LIGHT_PUTS) - 1 and all(s not in (0, BLANK_MAX) and o >= walk_from for o, s in units)
    assert units[0][0] < po <= units[1][0], (po, units)   # truncateDirtyLogicFiles keeps a unit starting below
    assert (load["files"], int(load["maxOffset"]), int(load["maxPhysicOffset"])) == (
        [f"{0:020d}"], 20, units[0][0] + units[0][1]), load
    got = _verify(src, tmp_path)
    p = got["restart"]
    assert p is not None, got.get("restart_note")
    held = held_units(src, ends=w["queuesAfterDispatch"])
    assert p["units_lost"] == queued_messages(sc) + len(LIGHT_PUTS) - held, (held, p["units_lost"])
    lost = {q["queue"]: q["units_lost"] for q in p["queues"]}
    assert lost[LIGHT] == len(LIGHT_PUTS) - len(units), lost
    keys = sum(int.from_bytes(f.read_bytes()[36:40], "big") - 1 for f in (src / "expected" / "index").iterdir())
    assert p["index_keys_put_again"] == keys, (keys, p["index_keys_put_again"])
