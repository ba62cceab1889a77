"""``PIPELINES_PLAIN_PYSPARK=1`` (pipelines.session.plain_pyspark): the job on PySpark's public means
only, without the warm Python daemon, the local JVM launched by hand and the fast exit, gives the
broker's files all the same.

It runs in a process of its own (the suite's session was built with the warm daemon): a local[2]
context built there, a rebuild of a golden store through Spark, and the python -m exit path."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_golden import _assert_matches, _manifest, _read_output

from tests.conftest import REPO_ROOT

pytestmark = [pytest.mark.slow, pytest.mark.spark]

CASE = "basic-4.9.8"
_SCRIPT = """
import json, sys
from pyspark import SparkContext
from pipelines.rebuild import run_rebuild
from pipelines.session import build_spark_context
from store_format.store import load_config_for
sc = build_spark_context("local[2]")
proc = getattr(SparkContext._gateway, "proc", None)
launched_here = proc is not None and proc.stderr is not None
summary = run_rebuild(sys.argv[1], sys.argv[2], load_config_for(sys.argv[3], brokerVersion="4"), spark=sc)
print(json.dumps({"daemon": sc.getConf().get("spark.python.daemon.module", None),
                  "stderr_read_here": launched_here, "dispatched": summary.dispatched}))
"""


def test_plain_pyspark_gives_the_same_files(golden_dir: Path, tmp_path: Path) -> None:
    case = golden_dir / CASE
    env = {**os.environ, "PIPELINES_PLAIN_PYSPARK": "1", "PYSPARK_PYTHON": sys.executable}
    run = subprocess.run([sys.executable, "-c", _SCRIPT, str(case / "store"), str(tmp_path / "out"),
                          str(case / "broker.conf")], env=env, capture_output=True, text=True, timeout=600,
                         cwd=REPO_ROOT)
    assert run.returncode == 0, run.stderr[-3000:]
    facts = json.loads(run.stdout.strip().splitlines()[-1])
    assert facts["daemon"] is None, "the warm daemon was set as spark.python.daemon.module"
    assert facts["stderr_read_here"] is False, "the local JVM was launched by the project, not by PySpark"
    assert facts["dispatched"] > 0
    _assert_matches(_manifest(golden_dir, CASE), *_read_output(tmp_path / "out"))

    # the CLI's exit path: the interpreter's own shutdown, with the command's exit code
    cli = subprocess.run([sys.executable, "-m", "pipelines", "rebuild", "--store", str(case / "store"),
                          "--out", str(tmp_path / "out"), "--config", str(case / "broker.conf"), "--engine", "local"],
                         env=env, capture_output=True, text=True, timeout=600, cwd=REPO_ROOT)
    assert cli.returncode == 2 and "error:" in cli.stderr, cli.stderr[-2000:]  # the output exists already
