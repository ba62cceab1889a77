"""delta-spark's JVM jars: where a local run finds them, how they are fetched once, and the Spark
settings that put them on the classpath.

* ``python -m pipelines.delta_jars`` (``make delta-jars``) copies the jars from Maven Central into
  :func:`jar_dir` (``<venv>/delta-jars``) with ``mvn dependency:copy``, once: later runs read the
  cached files and need no network.
* A local session (:func:`pipelines.session.build_spark_context`) gets them as ``spark.jars`` (the
  files, not ``spark.jars.packages``, which would resolve them over the network at every start)
  with Delta's SQL extension and catalog.  ``spark.jars`` only adds the files to the class loader:
  a rebuild that publishes no tables loads none of their classes.
* A cluster gets them from spark-submit: :data:`SUBMIT_OPTIONS`.

The table writer (``--table-writer``, :data:`WRITERS`): ``auto`` = delta-spark when the session was
given Delta (a cluster's ``--packages``/``spark.jars`` with the SQL extension), delta-rs on a local
run: there the tasks' own Parquet files committed by delta-rs take seconds, where delta-spark rewrites
every row through the JVM (minutes for the 4 GiB bench store); ``--table-writer delta-spark`` puts
the cached jars on a local session.  The choice travels with the session's conf
(:data:`WRITER_CONF`), where :func:`pipelines.delta.open_writer` reads it.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys

__all__ = ["DELTA_VERSION", "ARTIFACTS", "PACKAGE", "SUBMIT_OPTIONS", "WRITERS", "WRITER_CONF", "SQL_CONF",
           "jar_dir", "cached_jars", "missing_reason", "delta_conf", "fetch", "main"]

DELTA_VERSION = "4.4.0"       # the delta-spark release built for Spark 4.2 (pyspark==4.2.0)
SPARK_LINE = "4.2"
SCALA_LINE = "2.13"
ARTIFACTS = (f"io.delta:delta-spark_{SPARK_LINE}_{SCALA_LINE}:{DELTA_VERSION}",
             f"io.delta:delta-storage:{DELTA_VERSION}")
PACKAGE = ARTIFACTS[0]        # what --packages resolves (delta-storage comes with it)
SQL_CONF = {"spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
            "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog"}
SUBMIT_OPTIONS = f"--packages {PACKAGE} " + " ".join(f"--conf {k}={v}" for k, v in SQL_CONF.items())
WRITERS = ("auto", "delta-spark", "delta-rs")
SNAPSHOT_PARTITIONS = "spark.databricks.delta.snapshotPartitions"
WRITER_CONF = "spark.rocketmq.tableWriter"   # the --table-writer of the session's job
JARS_ENV = "ROCKETMQ_DELTA_JARS"             # another folder of the jars (default: jar_dir())


def _file_name(coordinate: str) -> str:
    _group, artifact, version = coordinate.split(":")
    return f"{artifact}-{version}.jar"


def jar_dir() -> str:
    """The folder of the cached jars: ``$ROCKETMQ_DELTA_JARS``, else ``delta-jars`` in the venv."""
    return os.environ.get(JARS_ENV) or os.path.join(sys.prefix, "delta-jars")


def cached_jars() -> list[str]:
    """The jar files of :data:`ARTIFACTS` in :func:`jar_dir`; empty unless all are there."""
    paths = [os.path.join(jar_dir(), _file_name(c)) for c in ARTIFACTS]
    return paths if all(os.path.isfile(p) for p in paths) else []


def missing_reason() -> str:
    """Why :func:`cached_jars` is empty, for the stage line."""
    missing = [_file_name(c) for c in ARTIFACTS if not os.path.isfile(os.path.join(jar_dir(), _file_name(c)))]
    return f"no Delta jars: {', '.join(missing)} not in {jar_dir()} (make delta-jars)"


def _has_delta(value: str | None) -> bool:
    return "io.delta" in (value or "") or "delta-spark" in (value or "")


def delta_conf(conf: dict[str, str], *, local: bool, writer: str = "auto") -> dict[str, str]:
    """Settings to add to a new Spark context's ``conf``: the writer, and for delta-spark the cached
    jars (local runs asking for ``delta-spark``) and Delta's SQL extension and catalog (which Spark
    reads from the context when the SQL session is made).  Jars a cluster was given
    (``spark.jars.packages``/``spark.jars`` naming Delta) get the extension too.  ``writer="delta-rs"``,
    or ``auto`` on a local run: no jars (delta-rs is the faster writer there)."""
    if writer not in WRITERS:
        raise ValueError(f"table writer must be one of {', '.join(WRITERS)}, got {writer!r}")
    out = {WRITER_CONF: writer}
    if writer == "delta-rs":
        return out
    given = _has_delta(conf.get("spark.jars.packages")) or _has_delta(conf.get("spark.jars"))
    jars = cached_jars() if local and not given and writer == "delta-spark" else []
    if jars:
        out["spark.jars"] = ",".join([j for j in (conf.get("spark.jars") or "").split(",") if j] + jars)
        # a local run's tables have short logs: their state in a few tasks, not Delta's default 50
        out.setdefault(SNAPSHOT_PARTITIONS, conf.get(SNAPSHOT_PARTITIONS, "2"))
    if jars or given:
        out.update({k: v for k, v in SQL_CONF.items() if k not in conf})
    return out


def fetch(out_dir: str | None = None) -> list[str]:
    """Copy :data:`ARTIFACTS` from Maven Central (through the local Maven repository) into
    ``out_dir`` (default :func:`jar_dir`); the jar paths."""
    out_dir = out_dir or jar_dir()
    mvn = shutil.which("mvn")
    if mvn is None:
        raise RuntimeError("mvn (Apache Maven) is not on PATH: install it (Debian package maven) to fetch the "
                           "Delta jars, or put them into " + out_dir)
    os.makedirs(out_dir, exist_ok=True)
    for coordinate in ARTIFACTS:
        if os.path.isfile(os.path.join(out_dir, _file_name(coordinate))):
            continue
        subprocess.run([mvn, "-q", "-B", "-Dstyle.color=never", "dependency:copy", f"-Dartifact={coordinate}",
                        f"-DoutputDirectory={out_dir}"], check=True)
    return [os.path.join(out_dir, _file_name(c)) for c in ARTIFACTS]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m pipelines.delta_jars", description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--out", default=None, help="folder for the jars (default: delta-jars in the venv)")
    args = p.parse_args(argv)
    try:
        jars = fetch(args.out)
    except (RuntimeError, subprocess.CalledProcessError, OSError) as err:
        print(f"delta jars: not fetched ({err}); tables will be written with delta-rs", file=sys.stderr)
        return 2
    print(f"delta jars: {', '.join(os.path.basename(j) for j in jars)} in {os.path.dirname(jars[0])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
