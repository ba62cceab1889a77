"""``spark-submit pipelines/spark_submit.py``: the job's stage lines, not Spark's log, and Python workers
forked warm as under ``python -m pipelines``."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from store_format.config import load_broker_config
from store_format.sample import generate_sample_store, write_broker_conf

ROOT = Path(__file__).resolve().parent.parent
SUBMIT = shutil.which("spark-submit") or str(Path(sys.executable).parent / "spark-submit")


_JVM_WARNING = "WARNING: Using incubator modules"   # the java launcher's, for Spark's own --add-modules
_SUMMARY_LINE = re.compile(r"^[a-z][a-z ]{1,20}\s{2,}\S")   # RebuildSummary's two columns
_PROBE = """
import os, sys
from pipelines.session import build_spark_context
sc = build_spark_context()
def parent(_):
    with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:
        yield f.read().replace(b"\\0", b" ").decode()
print("PARENT", sc.parallelize([1], 1).mapPartitions(parent).collect()[0])
print("JVM", " ".join(sc._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()))
"""


def _submit(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([SUBMIT, "--master", "local[1]", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, env=dict(os.environ, PYSPARK_PYTHON=sys.executable, PYTHONPATH=str(ROOT)))


@pytest.mark.skipif(not os.path.exists(SUBMIT), reason="spark-submit is not installed")
def test_spark_submit_prints_only_the_job_s_lines(tmp_path: Path) -> None:
    import pyspark
    conf = Path(pyspark.__file__).parent / "conf" / "log4j2.properties"
    assert conf.is_file(), f"{conf} missing: the install (make; python -m pipelines.warm) writes it"
    store = tmp_path / "store"
    config = load_broker_config("mappedFileSizeCommitLog=1048576\nmappedFileSizeConsumeQueue=6000\n")
    generate_sample_store(str(store), config, messages=500, body_size=64)
    write_broker_conf(str(store / "broker.conf"), config)
    res = _submit(["pipelines/spark_submit.py", "--store", str(store), "--config", str(store / "broker.conf"),
                   "--out", str(tmp_path / "out"), "--no-tables"], tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    lines = [ln for ln in (res.stdout + res.stderr).splitlines() if ln.strip()]
    # spark-submit passes the driver's stderr on to its stdout (see docs/clusters.md)
    assert any(ln.startswith("[rebuild] commit done") for ln in lines)
    noise = [ln for ln in lines if not (ln.startswith(("[rebuild]", "[preflight]", _JVM_WARNING))
                                         or _SUMMARY_LINE.match(ln))]
    assert not noise, noise


@pytest.mark.skipif(not os.path.exists(SUBMIT), reason="spark-submit is not installed")
def test_spark_submit_forks_workers_from_the_warm_spare(tmp_path: Path) -> None:
    """Under spark-submit the JVM is up before the job runs: the spare daemon started by the job is
    named to the daemon Spark launches through an executor variable, and the workers fork from it."""
    probe = tmp_path / "probe.py"
    probe.write_text(_PROBE)
    res = _submit([str(probe)], tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    parent = next(ln for ln in res.stdout.splitlines() if ln.startswith("PARENT"))
    assert "pipelines.sparkdaemon --spare" in parent, parent


@pytest.mark.skipif(not os.path.exists(SUBMIT), reason="spark-submit is not installed")
def test_spark_submit_driver_gets_the_short_job_jvm_options(tmp_path: Path) -> None:
    """The install gives this installation's spark-submit the local sessions' short-job JVM options
    as the driver's default options (its JVM starts before the job): the driver runs with them."""
    from pipelines.session import SHORT_JOB_JVM_OPTIONS

    probe = tmp_path / "probe.py"
    probe.write_text(_PROBE)
    res = _submit([str(probe)], tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    jvm = next(ln for ln in res.stdout.splitlines() if ln.startswith("JVM")).split()
    assert all(opt in jvm for opt in SHORT_JOB_JVM_OPTIONS), jvm
