"""The ``key_lookups`` figures of ``validate``: index entries looked up by key the way users look them up.

Each ``message_keys`` row is one entry of a rebuilt index file (``index_file``, ``index_entry``).
Rows can be all there and still be lost to readers: a lookup prunes files by partition values and
statistics, and a file whose statistics exclude its own rows hides them.  So a sample of rows (the
first rows of files spread over the table: every segment and key bucket when they are few) is
looked up with :func:`pipelines.lookup.lookup_key`, the function behind ``python -m pipelines
lookup --topic T --key K``, and each must return the row's message (its commitlog offset).
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd

from ..delta import arrow_dataset
from ..lookup import lookup_key
from ..tables.runs import snapshot

__all__ = ["lookup_sample", "LOOKUP_COLUMNS", "SAMPLE_FILES", "ROWS_PER_FILE"]

SAMPLE_FILES = 48        # files of message_keys the sample takes rows from
ROWS_PER_FILE = 2        # first rows of each
LOOKUP_THREADS = 4       # lookups run at a time
LOOKUP_COLUMNS = ["index_file", "index_entry", "topic", "key", "kind", "commitlog_offset", "found", "results"]


def lookup_sample(tables: str, files: int = SAMPLE_FILES, rows_per_file: int = ROWS_PER_FILE) -> pd.DataFrame:
    """One row per sampled index entry: what it is and whether the key lookup finds its message."""
    snap = snapshot(tables)
    dt = snap.open("message_keys") if snap.run is not None else None
    if dt is None:
        return pd.DataFrame(columns=LOOKUP_COLUMNS)
    fragments = list(arrow_dataset(tables, "message_keys", dt).get_fragments())
    if len(fragments) > files:
        fragments = [fragments[int(i)] for i in np.linspace(0, len(fragments) - 1, files).round()]
    wanted = ["index_file", "index_entry", "topic", "key", "kind", "commitlog_offset"]
    sampled = []
    for frag in fragments:
        names = set(frag.physical_schema.names)
        if not set(wanted) <= names:
            continue   # a file without these columns: the schema checks report it
        # a tag entry (5.4+: topic#T#tags) answers no key lookup (pipelines.lookup), as queryMessage's
        # client filters keep keys and unique keys only
        sampled += [r for r in frag.head(rows_per_file, columns=wanted).to_pylist()
                    if r["topic"] is not None and r["key"] is not None and r["kind"] != "tag"]

    def looked_up(r: dict) -> dict:
        # one lookup per entry, each pruning files for its own key as a user's lookup does (a batch of
        # keys would read the union of their files and hide a file that hides its own rows)
        found = lookup_key(tables, r["topic"], r["key"]).rows
        offsets = {m["commitlog_offset"] for m in found}
        return {**r, "found": r["commitlog_offset"] in offsets, "results": len(found)}

    # the lookups wait mostly on Arrow's reads, which release the GIL: a few at a time
    with ThreadPoolExecutor(max_workers=LOOKUP_THREADS) as pool:
        out = list(pool.map(looked_up, sampled))
    return pd.DataFrame(out, columns=LOOKUP_COLUMNS)
