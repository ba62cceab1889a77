"""The Delta tables: schemas (:mod:`.schema`), per-split rows (:mod:`.rows`), publication from a
rebuild's own results (:mod:`.publish`, the small tables in :mod:`.small_tables`), and the incremental
refresh, the rebuild's scan and chain seeded with the previous run's state (:mod:`.refresh`)."""
from __future__ import annotations

from .refresh import render_tables_summary, run_tables
from .schema import (
                     ANOMALIES_SCHEMA,
                     DESCRIPTIONS,
                     EXPIRY_AUDIT_SCHEMA,
                     KEY_BUCKETS_PROPERTY,
                     MESSAGE_KEYS_SCHEMA,
                     MESSAGES_SCHEMA,
                     RUNS_SCHEMA,
                     SEGMENTS_SCHEMA,
                     TABLE_NAMES,
                     default_key_buckets,
                     key_buckets_of,
                     message_keys_schema,
)

__all__ = ["run_tables", "latest_run", "render_tables_summary", "TABLE_NAMES", "MESSAGES_SCHEMA",
           "MESSAGE_KEYS_SCHEMA", "SEGMENTS_SCHEMA", "EXPIRY_AUDIT_SCHEMA", "ANOMALIES_SCHEMA", "RUNS_SCHEMA",
           "DESCRIPTIONS", "KEY_BUCKETS_PROPERTY", "default_key_buckets", "key_buckets_of", "message_keys_schema"]
