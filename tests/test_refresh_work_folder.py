"""The refresh's work folders under ``TABLES/_refresh``: a driver killed half-way leaves its folder
behind; the next refresh removes the folders of dead runs and leaves those of live ones alone."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import tables_store as ts

from pipelines.commit import StagedOutput
from pipelines.delta import read_arrow
from pipelines.tables import TABLE_NAMES, run_tables

pytestmark = [pytest.mark.spark, pytest.mark.slow]

STAGING = ".rebuild-staging-"

_KILLED_DRIVER = """
import os, sys
from pipelines.commit import StagedOutput
work = StagedOutput(sys.argv[1], sys.argv[2])
work.prepare()
os.makedirs(os.path.join(work.staging_path, "_work", "units"), exist_ok=True)
with open(os.path.join(work.staging_path, "_work", "units", "s0000000.arrow"), "wb") as f:
    f.write(b"x" * 4096)
os._exit(9)   # killed: no clean-up, the owner record stays, its lock goes with the process
"""


def test_a_refresh_removes_the_work_folders_of_dead_runs_only(spark, tmp_path: Path) -> None:
    cfg = ts.config()
    store, tables = tmp_path / "store", str(tmp_path / "tables")
    ts.write_store(store, 300, cfg)
    run_tables(str(store), tables, cfg, spark=spark, split_size=16384)
    refresh = Path(tables) / "_refresh"
    # a refresh still running (claimed first: a claim removes the folders of dead runs itself)
    live = StagedOutput(str(refresh), "20240301000000-live04")
    live.prepare()
    # a refresh whose driver was killed while it scanned
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[1]),
                                                       os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", _KILLED_DRIVER, str(refresh), "20240301000000-dead01"], env=env)
    assert done.returncode == 9
    assert (refresh / f"{STAGING}20240301000000-dead01" / "_work").is_dir()
    assert (refresh / f"{STAGING}20240301000000-dead01.lock").is_file()
    # a folder an older version left (no owner record), untouched for two hours
    legacy = refresh / f"{STAGING}20240301000000-old002"
    (legacy / "_work").mkdir(parents=True)
    hours_ago = time.time() - 7200
    os.utime(legacy / "_work", (hours_ago, hours_ago))
    os.utime(legacy, (hours_ago, hours_ago))
    # one without owner record that changed a moment ago
    recent = refresh / f"{STAGING}20240301000000-new003"
    (recent / "_work").mkdir(parents=True)
    try:
        assert len(os.listdir(refresh)) == 6
        ts.write_store(store, 400, cfg)
        run_tables(str(store), tables, cfg, spark=spark, split_size=16384)
        left = sorted(os.listdir(refresh))
        assert left == [f"{STAGING}20240301000000-live04", f"{STAGING}20240301000000-live04.lock",
                        f"{STAGING}20240301000000-new003"]
    finally:
        live.abort()
    assert [r["mode"] for r in read_arrow(tables, "runs").to_pylist()].count("incremental") == 1
    # once nothing else is there, the refresh leaves no _refresh folder behind
    recent.joinpath("_work").rmdir()
    recent.rmdir()
    run_tables(str(store), tables, cfg, spark=spark, split_size=16384)
    assert sorted(os.listdir(tables)) == sorted(TABLE_NAMES)
