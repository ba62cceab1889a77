"""The class data sharing archive of local Spark JVMs (``python -m pipelines.warm``) is one the
session's JVM can map.  A JVM ignores an archive written for another class path without a word, and
the archive was for a while written before ``pipelines.warm`` created the conf folder that Spark's
launcher puts first on the class path: every local session then started without it (the session
stage of the benchmark doubled).  The JVM itself is the judge here: ``-Xshare:on`` refuses to start
with an archive it cannot map."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from pipelines.pyspark_private import jvm_of
from pipelines.session import CDS_ARCHIVE, class_archive_matches, local_jvm_options


def _java(jvm) -> str:  # noqa: ANN001
    return os.path.join(jvm.System.getProperty("java.home"), "bin", "java")


def _maps_archive(java: str, classpath: str) -> subprocess.CompletedProcess:
    return subprocess.run([java, "-Xshare:on", f"-XX:SharedArchiveFile={CDS_ARCHIVE}", "-Xlog:cds=off",
                           "-Xlog:cds+dynamic=off", "-cp", classpath, "-version"],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(not os.path.isfile(CDS_ARCHIVE), reason="no class archive (python -m pipelines.warm not run)")
def test_the_session_jvm_maps_the_class_archive(spark) -> None:  # noqa: ANN001
    jvm = jvm_of(spark.sparkContext)
    assert class_archive_matches(), "the archive was written for another Java or class path (pipelines.warm)"
    assert f"-XX:SharedArchiveFile={CDS_ARCHIVE}" in local_jvm_options()
    proc = _maps_archive(_java(jvm), jvm.System.getProperty("java.class.path"))
    assert proc.returncode == 0, proc.stderr[-500:]


@pytest.mark.skipif(not os.path.isfile(CDS_ARCHIVE), reason="no class archive (python -m pipelines.warm not run)")
def test_another_class_path_is_refused_by_the_jvm(spark, tmp_path) -> None:  # noqa: ANN001
    """The check above can fail: the same archive with a folder put first on the class path (what
    the conf folder did) is refused by the JVM."""
    jvm = jvm_of(spark.sparkContext)
    if shutil.which(_java(jvm)) is None:
        pytest.skip("the session's java is not runnable here")
    proc = _maps_archive(_java(jvm), f"{tmp_path}{os.pathsep}{jvm.System.getProperty('java.class.path')}")
    assert proc.returncode != 0 and "shared archive" in proc.stderr
