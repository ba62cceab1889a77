"""The note ``verify``'s restart prediction gives for parsed index keys (:func:`pipelines.verify.restart_index
.predict_index`'s ``parsed_keys``) names the case the caller passes, not one guessed from offsets: a 5.x DLedger
crash restart whose walk dispatched nothing and whose start's reput the cut set inside an entry (at 2147483647) parses
messages there with the walk's start equal to its end (``first == walk_end``), which the old guess took for a 5.5.1
``enableAcceleratedRecovery`` walk from inside a record."""
from __future__ import annotations

from pipelines.verify.restart import predict_restart
from store_format.config import BrokerConfig

CONFIG = BrokerConfig.from_properties({"brokerVersion": "5.5", "enableAcceleratedRecovery": "true"})
START = 2_100_000_000   # the walk's data file's start: the walk dispatched nothing, so it ends there too
END = 2_147_500_000


def _note(p) -> str:  # noqa: ANN001
    (note,) = [n for n in p.notes if "index key(s) buildIndex takes" in n]
    return note


def _predicted(**case) -> str:  # noqa: ANN003
    p = predict_restart([], config=CONFIG, commitlog_min=0, commitlog_end=END, clean_shutdown=False, store_index=[],
                        expected_index=lambda: iter(()), checkpoint_index_ts=None, read_expected=lambda *_a: b"",
                        parsed_keys=(2_147_483_700, 2_147_483_900), **case)
    return _note(p)


def test_a_dledger_walk_that_dispatched_nothing_then_parsed_messages_is_named_the_reput_set_inside_an_entry() -> None:
    """The DLedger crash path (``dispatch_from``, the walk's start, equal to ``walk_end``; ``parsed_then`` None: the
    reput goes on past the log's end): the start's reput set inside an entry parsed them, not the recovery's walk."""
    note = _predicted(dispatch_from=START, walk_end=START, cut_at=START, truncate_at=END, reput_from_queues=True)
    assert note.startswith("the start's reput, set inside an entry, parses messages there whose 2 index key(s)"), note
    assert "enableAcceleratedRecovery" not in note, note


def test_an_accelerated_walk_from_inside_a_record_keeps_its_own_note() -> None:
    """The commitlog's abnormal recovery (``abnormal_from``, no DLedger) with parsed keys: a 5.5.1 accelerated walk
    from inside a record (its start, ``walk_end``, equal to where the dispatch starts)."""
    note = _predicted(abnormal_from=START, walk_end=START)
    assert note.startswith("the recovery's walk from inside a record (enableAcceleratedRecovery) parsed messages "
                           "whose 2 index key(s)"), note
