"""Unit checks of which reputs set at 2147483647 after a DLedger crash walk that dispatched nothing
:func:`store_format.dledger_walked_nothing._parsed_refusal` models (the broker cases:
``tests/test_dledger_walked_nothing_2gib_broker.py``, ``DLEDGER_2GIB=1``)."""
from __future__ import annotations

import pytest

from store_format.config import BrokerConfig
from store_format.dledger_inside_state import ParsedUnit
from store_format.dledger_walked_nothing import _parsed_refusal

BLANK_MAX = 2**31 - 1
PROCESS, COMMITTED, END = 2_100_000_000, 2_147_484_059, 2_147_484_300
T5 = ParsedUnit("T5", 0, BLANK_MAX, 111, 0, 0, own=True, batch=False)
MSG = ((BLANK_MAX, BLANK_MAX + 111),)


def _why(goes_on: int, records=MSG, units=(T5,), *, committed: int = COMMITTED, on_disk=frozenset({("T0", 0)}),  # noqa: ANN001
         reput: int = BLANK_MAX, ext: bool = False) -> str:
    return _parsed_refusal(goes_on, records, units, on_disk_queues=on_disk, reput=reput, process_offset=PROCESS,
                           confirm_offset=committed, log_end=END,
                           config=BrokerConfig(brokerVersion="5.5", enableConsumeQueueExt=ext))


@pytest.mark.parametrize("goes_on,committed", [(END, END), (COMMITTED, COMMITTED)], ids=["log-end", "committed"])
def test_a_message_for_a_new_queue_then_the_jump_is_modelled(goes_on: int, committed: int) -> None:
    assert _why(goes_on, committed=committed) == ""
    assert _why(goes_on, (), (), committed=committed) == ""   # nothing parsed, the same jump


@pytest.mark.parametrize("kwargs,text", [
    ({"goes_on": 2_200_000_000, "committed": END}, "modelled: at the log's end"),   # a data file's end before it
    ({"goes_on": COMMITTED - 100, "committed": COMMITTED}, "modelled: at the log's end"),   # an entry's start
    ({"goes_on": END, "committed": END, "reput": PROCESS - 1}, "set past processOffset"),
    ({"goes_on": END, "committed": END, "records": ((BLANK_MAX + 48, BLANK_MAX + 48),), "units": ()}, "empty request"),
    ({"goes_on": END, "committed": END, "ext": True}, "enableConsumeQueueExt"),
    ({"goes_on": END, "committed": END, "on_disk": frozenset({("T5", 0)})}, "a queue the store holds files of"),
    ({"goes_on": END, "committed": END, "units": (ParsedUnit("T5", 0, BLANK_MAX, 111, 0, 0, own=False, batch=False),)},
     "light queue"),
], ids=["file-end", "entry-start", "before-process-offset", "blank", "ext", "on-disk", "light"])
def test_the_rest_stays_refused(kwargs: dict, text: str) -> None:
    goes_on = kwargs.pop("goes_on")
    assert text in _why(goes_on, **kwargs)
