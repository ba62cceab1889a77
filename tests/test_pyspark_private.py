"""PySpark's private code is reached from one module, :mod:`pipelines.pyspark_private`, and only on the
PySpark line it was written for.

The first test fails loudly when the installed PySpark moves one of the internals that module uses
(the warm daemon's ``pyspark.daemon.manager``, the piped JVM's ``launch_gateway(popen_kwargs=)``,
``SparkContext._gateway`` ...): then the module, not a user's run, is what breaks."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pipelines import pyspark_private
from tests.conftest import REPO_ROOT

_PRIVATE_ATTRIBUTES = {"_gateway", "_jvm", "_active_spark_context", "_ensure_initialized", "_instantiatedSession",
                       "_jsc", "_jsparkSession", "_conf"}
_PRIVATE_MODULES = ("pyspark.daemon", "pyspark.java_gateway", "pyspark.worker", "pyspark.serializers",
                    "pyspark.sql.pandas.types")


def test_the_installed_pyspark_has_every_internal_the_module_uses() -> None:
    missing = pyspark_private.internals_missing()
    assert not missing, (f"pyspark {pyspark_private.pyspark_release()} changed what pipelines/pyspark_private.py "
                         f"uses: {missing}; adapt that module or run with PIPELINES_PLAIN_PYSPARK=1")


@pytest.mark.parametrize("release, env, plain", [
    ("4.2.0", "", False), ("4.2.3", "", False), ("4.3.0", "", True), ("5.0.0", "", True), ("4.1.1", "", True),
    ("4.2.0", "1", True), ("4.2.0", "true", True), ("4.2.0", "0", False),
])
def test_private_code_only_on_the_line_it_was_made_for(monkeypatch, release: str, env: str, plain: bool) -> None:
    monkeypatch.setattr(pyspark_private, "pyspark_release", lambda: release)
    monkeypatch.setenv(pyspark_private.PLAIN_PYSPARK_ENV, env)
    pyspark_private._release_is_known.cache_clear()
    try:
        assert pyspark_private.plain_pyspark() is plain
    finally:
        pyspark_private._release_is_known.cache_clear()


def _reaches_into_pyspark(path: Path) -> list[str]:
    """Uses of PySpark's private code in one source file: imports of its undocumented modules, reads of
    the private attributes of its classes."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [f"{node.module}.{a.name}" for a in node.names]
            found += [f"line {node.lineno}: import {n}" for n in names if n.startswith(_PRIVATE_MODULES)]
        elif isinstance(node, ast.Import):
            found += [f"line {node.lineno}: import {a.name}" for a in node.names if a.name.startswith(_PRIVATE_MODULES)]
        elif isinstance(node, ast.Attribute) and node.attr in _PRIVATE_ATTRIBUTES:
            found.append(f"line {node.lineno}: .{node.attr}")
    return found


def test_no_other_module_reaches_into_pyspark() -> None:
    own = Path(pyspark_private.__file__).resolve()
    offenders = {}
    for folder in ("pipelines", "store_format", "airflow_dags"):
        for path in sorted((REPO_ROOT / folder).rglob("*.py")):
            if path.resolve() != own and (found := _reaches_into_pyspark(path)):
                offenders[str(path.relative_to(REPO_ROOT))] = found
    assert not offenders, f"PySpark's private code reached outside pipelines/pyspark_private.py: {offenders}"


def test_the_check_sees_a_private_read(tmp_path: Path) -> None:
    """The scan above finds what it is meant to find (else it would pass on anything)."""
    source = tmp_path / "m.py"
    source.write_text("from pyspark import SparkContext\nfrom pyspark.java_gateway import launch_gateway\n"
                      "g = SparkContext._gateway\nimport pyspark.daemon\n")
    assert len(_reaches_into_pyspark(source)) == 3


def test_the_daemon_prints_no_traceback_for_a_jvm_gone_only(tmp_path) -> None:
    """PySpark's daemon prints what leaves a forked worker with ``traceback.print_exc``: after
    :func:`pipelines.pyspark_private.quiet_peer_gone` a broken pipe (the JVM gone at the end of a
    spark-submit run) prints nothing, any other exception its traceback as before."""
    import subprocess
    import sys

    script = ("import traceback\nfrom pipelines.pyspark_private import quiet_peer_gone\nquiet_peer_gone()\n"
              "for e in (BrokenPipeError(32, 'Broken pipe'), ConnectionResetError(), ValueError('kept')):\n"
              "    try:\n        raise e\n    except BaseException:\n        traceback.print_exc()\n")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO_ROOT, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stderr.count("Traceback (most recent call last):") == 1 and "ValueError: kept" in run.stderr
    assert "BrokenPipeError" not in run.stderr and "ConnectionResetError" not in run.stderr
