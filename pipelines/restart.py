"""``--as-restart``: the store as the reput sees it after the broker's commitlog recovery."""
from __future__ import annotations

import dataclasses

from store_format.anomalies import AnomalyKind
from store_format.config import BrokerConfig
from store_format.errors import StoreError
from store_format.recovery import RecoveryPlan, plan_recovery
from store_format.store import Segment, StoreLocation

from .anomalies import at_offset

__all__ = ["as_restart", "Restart"]


@dataclasses.dataclass
class Restart:
    """What a broker restart's commitlog recovery keeps and throws away (``--as-restart``)."""
    plan: RecoveryPlan

    def anomalies(self, kept: StoreLocation) -> list[dict]:
        """The restart's own finding, at the cut (in ``kept``, the store the restart leaves)."""
        p = self.plan
        if not (p.discarded_messages or p.discarded_bytes or p.deleted_segments):
            return []
        return [at_offset(kept, p.process_offset, AnomalyKind.RESTART_DISCARDS,
                          f"a broker restart ({p.mode} recovery, {p.broker_version}.x rules) cuts the commitlog at "
                           f"{p.process_offset}: {p.reason}; it discards {p.discarded_messages:,} record(s), "
                           f"{p.discarded_bytes:,} bytes, and deletes {p.deleted_segments} later segment(s)",
                          found=p.discarded_messages)]


def as_restart(st: StoreLocation, config: BrokerConfig, progress) -> tuple[StoreLocation, Restart]:  # noqa: ANN001
    """The store as the reput sees it after the broker's recovery (:func:`store_format.recovery.plan_recovery`):
    segments after the cut deleted, the segment holding it read up to it, and, where the recovery itself
    dispatches (4.9 abnormal, 5.x), nothing before the segment it started from."""
    plan = plan_recovery(st, config)
    progress.emit(f"[rebuild] as a restart: {plan.mode} recovery cuts the commitlog at {plan.process_offset} "
                  f"({plan.reason}); dispatch from {plan.dispatch_from}")
    kept: list[Segment] = []
    for seg in st.segments:
        if seg.base > plan.process_offset or seg.end <= plan.dispatch_from:
            continue
        if seg.base < plan.dispatch_from:
            raise StoreError(f"recovery dispatches from {plan.dispatch_from}, inside segment {seg.name}: not supported")
        readable = plan.process_offset - seg.base if seg.base <= plan.process_offset < seg.end else -1
        kept.append(dataclasses.replace(seg, index=len(kept), readable=readable))
    if not kept:
        raise StoreError(f"{st.uri}: a restart keeps no commitlog data (recovery cut at {plan.process_offset})")
    return StoreLocation(st.uri, st.fs, st.root, kept, batch_topics=st.batch_topics), Restart(plan)
