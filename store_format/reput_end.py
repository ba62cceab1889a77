"""Where ``DefaultMessageStore.ReputMessageService`` stops reading (5.x ``getReputEndOffset``): the one rule
both reputs read, the sequential one (:mod:`store_format.reput`) and the concurrent one
(:mod:`store_format.concurrent_reput`)."""
from __future__ import annotations

from . import commitlog as cl
from .config import BrokerConfig
from .store import StoreLocation

__all__ = ["data_end_limit"]


def data_end_limit(store: StoreLocation, config: BrokerConfig) -> int | None:
    """5.x only: the reput end offset (``getReputEndOffset``), where the data of the last segment
    ends.  None where it cannot matter: 4.9, or a last segment walked without size mismatches."""
    if not config.is_5x:
        return None
    if store.reput_end is not None:
        return store.reput_end  # a cut store's: the whole store's (store_format.concurrent_reput.cut_at)
    if store.dledger is not None:
        return store.dledger.committed_pos  # DLedgerCommitLog.getConfirmOffset: the committed position
    last = store.segments[-1]
    with store.reader(last) as read:
        res = cl.walk_range(read, last.base, last.data_end, cl.WalkState.at_slice_start(0, last.data_end),
                            last.data_end + 1, config, keep_text=False)
    if not (res.rec[:, cl.R_STATUS] == cl.Status.SIZE_MISMATCH).any():
        return None
    return last.base + res.state.bufpos
