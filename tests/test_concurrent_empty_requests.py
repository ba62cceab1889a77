"""The blanks' empty requests of ``enableBuildConsumeQueueConcurrently=true`` with a RocksDB consume queue, judged
against the whole reput (:func:`store_format.concurrent_reput.check_empty_requests`, which
:func:`~store_format.concurrent_reput.settle` calls once every stop is followed), not one stop at a time: a stop
whose reput goes on in the next file may be followed by a file that dispatches nothing, and then its empty request
is the last request dispatched, whose checkpoint the threads' timing decides.  The broker cases of the endings
that are rebuilt are in tests/test_concurrent_empty_requests_broker.py (``blankonrdbcq``, ``blankononly``); these
pin the decision over several stops, the refusal the broker cannot be asked to repeat."""
from __future__ import annotations

import pytest

from store_format.concurrent_reput import ConcurrentStop, check_empty_requests
from store_format.config import BrokerConfig
from store_format.errors import UnsupportedConfigError


def _config(**more: str) -> BrokerConfig:
    return BrokerConfig.from_properties({"brokerVersion": "5", "enableBuildConsumeQueueConcurrently": "true", **more})


def _stop(offset: int, empty: int | None, *, resume: int | None = None) -> ConcurrentStop:
    return ConcurrentStop(offset, "why", {}, at=offset, resume=resume, empty_request=empty,
                          empty_requests=0 if empty is None else 1, last_empty_request=empty)


ROCKSDB = {"storeType": "defaultRocksDB"}


def test_an_empty_request_that_goes_on_into_a_file_dispatching_nothing_is_the_last_request() -> None:
    stops = [_stop(1000, 1100, resume=4096), _stop(4096, None)]   # the next file: nothing dispatched
    with pytest.raises(UnsupportedConfigError, match="last request dispatched"):
        check_empty_requests(_config(**ROCKSDB), stops, last_dispatched=900)
    with pytest.raises(UnsupportedConfigError, match="last request dispatched"):
        check_empty_requests(_config(**ROCKSDB), stops, last_dispatched=None)
    check_empty_requests(_config(**ROCKSDB), stops, last_dispatched=4096)   # a record after it
    check_empty_requests(_config(), stops, last_dispatched=900)   # files: its unit as the broker writes it


def test_the_last_of_several_stops_empty_requests_decides() -> None:
    stops = [_stop(1000, 1100, resume=4096), _stop(5000, 5100, resume=8192)]
    with pytest.raises(UnsupportedConfigError, match="at commitlog offset 5100"):
        check_empty_requests(_config(**ROCKSDB), stops, last_dispatched=4500)
    check_empty_requests(_config(**ROCKSDB), stops, last_dispatched=8192)


def test_no_empty_request_is_never_refused() -> None:
    check_empty_requests(_config(**ROCKSDB), [_stop(1000, None)], last_dispatched=None)
