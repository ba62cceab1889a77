"""The blanks' empty requests of ``enableBuildConsumeQueueConcurrently=true``, judged against the whole reput
(:func:`store_format.concurrent_reput.check_empty_requests`, which :func:`~store_format.concurrent_reput.settle`
calls once every stop is followed), not one stop at a time: a stop whose reput goes on in the next file may be
followed by a file that dispatches nothing, and then its empty request is the last request dispatched.  The broker
cases of these endings are in tests/test_concurrent_reput_broker.py (``blankonrdbcq``, ``blankonfirst``); these
pin the decision over several stops, which needs two damaged spots the harness does not make."""
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
        check_empty_requests(_config(**ROCKSDB), stops, dispatched=12, last_dispatched=900)
    check_empty_requests(_config(**ROCKSDB), stops, dispatched=13, last_dispatched=4096)   # a record after it
    check_empty_requests(_config(), stops, dispatched=12, last_dispatched=900)   # files: its unit as the broker's


def test_empty_requests_with_no_record_dispatched_at_all_are_refused_with_index_files_only() -> None:
    stops = [_stop(0, 40, resume=4096), _stop(4096, 4200)]   # the first record damaged, then again in the next file
    with pytest.raises(UnsupportedConfigError, match="no record of the store is dispatched"):
        check_empty_requests(_config(), stops, dispatched=0, last_dispatched=None)
    check_empty_requests(_config(messageIndexEnable="false"), stops, dispatched=0, last_dispatched=None)
    check_empty_requests(_config(), stops, dispatched=1, last_dispatched=4300)   # one record: the broker's file


def test_no_empty_request_is_never_refused() -> None:
    check_empty_requests(_config(**ROCKSDB), [_stop(1000, None)], dispatched=0, last_dispatched=None)
