"""Other Delta readers find the same rows as the project's lookup, for a sample of keys of the golden
stores with the longest topics and keys: polars (``scan_delta``, through delta-rs) and DuckDB
(``read_parquet`` over the live files the Delta log lists; its delta extension is downloaded at run
time, which these tests do not rely on)."""
from __future__ import annotations

import golden_truth as gt
import pytest

from pipelines.lookup import lookup_keys

pytestmark = [pytest.mark.golden, pytest.mark.spark]

CASES = ["features-4.9.8", "longtopic-5.3.3"]
SAMPLE = 40


def _sample(golden_dir, case) -> list[tuple[str, str]]:
    pairs = gt.pairs(gt.records(golden_dir / case))
    longest = sorted(pairs, key=lambda p: -(len(p[0]) + len(p[1])))[:SAMPLE // 2]
    return sorted(set(longest) | set(pairs[::max(1, len(pairs) // (SAMPLE // 2))]))


def _expected(tables: str, pairs) -> dict:
    ours = lookup_keys(tables, pairs)
    return {p: sorted(r["commitlog_offset"] for r in ours[p].rows) for p in pairs}


@pytest.mark.parametrize("case", CASES)
def test_polars_finds_the_same_rows(golden_rebuilt, golden_dir, case) -> None:
    pl = pytest.importorskip("polars")
    out, _ = golden_rebuilt(case)
    tables = str(out / "tables")
    pairs = _sample(golden_dir, case)
    want = _expected(tables, pairs)
    keys = pl.scan_delta(f"{tables}/message_keys")
    for topic, key in pairs:
        got = keys.filter((pl.col("topic") == topic) & (pl.col("key") == key)).select("commitlog_offset").collect()
        assert sorted(set(got["commitlog_offset"].to_list())) == want[(topic, key)], (topic[:40], key[:40])
    assert sum(1 for v in want.values() if v) >= len(pairs) // 2


@pytest.mark.parametrize("case", CASES)
def test_duckdb_finds_the_same_rows(golden_rebuilt, golden_dir, case) -> None:
    duckdb = pytest.importorskip("duckdb")
    from pipelines.delta import open_table
    out, _ = golden_rebuilt(case)
    tables = str(out / "tables")
    pairs = _sample(golden_dir, case)
    want = _expected(tables, pairs)
    files = open_table(tables, "message_keys").file_uris()   # the live files of the version
    con = duckdb.connect()
    for topic, key in pairs:
        rows = con.execute("SELECT DISTINCT commitlog_offset FROM read_parquet(?, hive_partitioning = true) "
                           "WHERE topic = ? AND key = ? ORDER BY 1", [files, topic, key]).fetchall()
        assert [r[0] for r in rows] == want[(topic, key)], (topic[:40], key[:40])
