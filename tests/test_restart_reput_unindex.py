"""``store_format.restart_reput.unindex_below``: a restart's second reput that starts below the recovery's first
record queues the records there but indexes none of them (``IndexService.buildIndex`` skips records below the last
index file's ``endPhyOffset``).  Checked against a record-by-record model of that removal."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from store_format import walkresult as wr
from store_format.restart_reput import unindex_below


def _walk(counts: list[int]) -> wr.WalkResult:
    """A walk's result of records 100 bytes apart holding ``counts`` keys each, their keys in record order."""
    rec = np.zeros((len(counts), wr.N_REC_FIELDS), dtype=np.int64)
    rec[:, wr.R_PHYS] = np.arange(len(counts)) * 100
    rec[:, wr.R_KEY_COUNT] = counts
    rec[:, wr.R_KEY_FIRST] = np.concatenate([[0], np.cumsum(counts)[:-1]]) if counts else []
    key = np.zeros((sum(counts), wr.N_KEY_FIELDS), dtype=np.int64)
    key[:, wr.K_REC] = np.repeat(np.arange(len(counts)), counts)
    key[:, wr.K_HASH] = np.arange(sum(counts)) * 7 + 3   # every key told apart
    return wr.WalkResult(rec, key, np.zeros((0, 1), np.int64), np.zeros((len(counts), 0), np.int64),
                         None, 0, b"", 0)  # type: ignore[arg-type]


def _one_by_one(res: wr.WalkResult, offset: int) -> tuple[list[list[int]], list[int]]:
    """Each record's key hashes and key counts once the records below ``offset`` lose theirs."""
    kept = [[int(h) for h in res.key[int(r[wr.R_KEY_FIRST]):int(r[wr.R_KEY_FIRST] + r[wr.R_KEY_COUNT]), wr.K_HASH]]
            if r[wr.R_PHYS] >= offset else [] for r in res.rec]
    return kept, [len(k) for k in kept]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 4), max_size=30), st.integers(-1, 3100))
def test_the_records_below_the_offset_lose_their_keys_and_the_others_keep_theirs(counts, offset):
    res = _walk(counts)
    out = unindex_below(res, offset)
    want, want_counts = _one_by_one(res, offset)
    assert out.rec[:, wr.R_KEY_COUNT].tolist() == want_counts
    got = [[int(h) for h in out.key[int(r[wr.R_KEY_FIRST]):int(r[wr.R_KEY_FIRST] + r[wr.R_KEY_COUNT]), wr.K_HASH]]
           for r in out.rec]
    assert got == want
    assert len(out.key) == sum(want_counts)
