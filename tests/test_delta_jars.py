"""Where a run finds delta-spark's jars and what it gives Spark for them (no JVM here)."""
from __future__ import annotations

from pathlib import Path

import pytest

from pipelines import delta_jars as dj
from pipelines.cli import main as cli_main


@pytest.fixture
def jar_folder(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv(dj.JARS_ENV, str(tmp_path))
    return tmp_path


def _put_jars(folder: Path) -> list[str]:
    paths = []
    for coordinate in dj.ARTIFACTS:
        _group, artifact, version = coordinate.split(":")
        path = folder / f"{artifact}-{version}.jar"
        path.write_bytes(b"PK")
        paths.append(str(path))
    return paths


def test_the_jars_match_the_pinned_python_package() -> None:
    from importlib.metadata import version
    spark_line = ".".join(version("pyspark").split(".")[:2])
    assert dj.PACKAGE == f"io.delta:delta-spark_{spark_line}_2.13:{version('delta-spark')}"
    assert all(c.endswith(":" + version("delta-spark")) for c in dj.ARTIFACTS)


def test_cached_jars_go_to_spark_jars_with_the_sql_extension(jar_folder: Path) -> None:
    jars = _put_jars(jar_folder)
    conf = dj.delta_conf({"spark.jars": "/x/other.jar"}, local=True, writer="delta-spark")
    assert conf["spark.jars"].split(",") == ["/x/other.jar", *jars]
    assert conf["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"
    assert conf["spark.sql.catalog.spark_catalog"] == "org.apache.spark.sql.delta.catalog.DeltaCatalog"
    assert "spark.jars.packages" not in conf          # no network at start
    assert conf[dj.WRITER_CONF] == "delta-spark"
    # auto on a local run: delta-rs, no jars, even where they are cached
    assert dj.delta_conf({}, local=True) == {dj.WRITER_CONF: "auto"}


def test_no_jars_without_all_of_them_or_with_delta_rs(jar_folder: Path) -> None:
    assert dj.delta_conf({}, local=True) == {dj.WRITER_CONF: "auto"}
    assert "delta-spark_4.2_2.13-4.4.0.jar" in dj.missing_reason()
    _put_jars(jar_folder)
    (jar_folder / "delta-storage-4.4.0.jar").unlink()
    assert dj.cached_jars() == [] and "delta-storage-4.4.0.jar" in dj.missing_reason()
    _put_jars(jar_folder)
    assert dj.delta_conf({}, local=True, writer="delta-rs") == {dj.WRITER_CONF: "delta-rs"}
    assert "spark.jars" not in dj.delta_conf({}, local=False)   # a cluster brings its own
    with pytest.raises(ValueError):
        dj.delta_conf({}, local=True, writer="parquet")


def test_packages_given_to_a_cluster_get_the_extension(jar_folder: Path) -> None:
    conf = dj.delta_conf({"spark.jars.packages": dj.PACKAGE}, local=False)
    assert conf["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension" and "spark.jars" not in conf
    mine = dj.delta_conf({"spark.jars.packages": dj.PACKAGE, "spark.sql.extensions": "a.B"}, local=False)
    assert "spark.sql.extensions" not in mine          # the user's own setting stays


def test_delta_spark_asked_for_without_jars_exits_2(jar_folder: Path, tmp_path: Path, capsys) -> None:
    code = cli_main(["tables", "--store", str(tmp_path), "--tables", str(tmp_path / "t"),
                     "--table-writer", "delta-spark"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "no Delta jars" in err[0] and "make delta-jars" in err[0]
