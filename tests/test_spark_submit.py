"""``spark-submit pipelines/spark_submit.py``: the job's stage lines, not Spark's INFO log."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from store_format.config import load_broker_config
from store_format.sample import generate_sample_store, write_broker_conf

ROOT = Path(__file__).resolve().parent.parent
SUBMIT = shutil.which("spark-submit") or str(Path(sys.executable).parent / "spark-submit")


@pytest.mark.skipif(not os.path.exists(SUBMIT), reason="spark-submit is not installed")
def test_spark_submit_is_quiet(tmp_path: Path) -> None:
    store = tmp_path / "store"
    config = load_broker_config("mappedFileSizeCommitLog=1048576\nmappedFileSizeConsumeQueue=6000\n")
    generate_sample_store(str(store), config, messages=500, body_size=64)
    write_broker_conf(str(store / "broker.conf"), config)
    res = subprocess.run([SUBMIT, "--master", "local[1]", "pipelines/spark_submit.py", "--store", str(store),
                          "--config", str(store / "broker.conf"), "--out", str(tmp_path / "out"), "--no-tables"],
                         cwd=ROOT, capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, PYSPARK_PYTHON=sys.executable, PYTHONPATH=str(ROOT)))
    assert res.returncode == 0, res.stderr[-3000:]
    info = [ln for ln in res.stderr.splitlines() if " INFO " in ln]
    # before spark.log.level applies, Spark logs its version, OS and Java (see pipelines.session._submit_conf)
    assert len(info) <= 3 and all(" INFO SparkContext: " in ln for ln in info), info
    # spark-submit passes the driver's stderr on to its stdout (see the README)
    assert any(ln.startswith("[rebuild] commit done") for ln in (res.stdout + res.stderr).splitlines())
