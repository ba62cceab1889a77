"""``python -m pipelines.warm``: prepare a fresh install for fast first runs.

1. Compile the numba kernels into their on-disk cache (``__pycache__`` beside the sources, cleared when
   any source changes: :mod:`store_format.kernel_cache`), where the driver and every Spark Python worker of this
   installation load them from: no task compiles.
2. Write the class data sharing archive of a local Spark driver JVM (:data:`pipelines.session.CDS_ARCHIVE`)
   by running a small rebuild, tables included, in a JVM that archives the classes it loaded when
   it exits.  Local sessions then map those classes instead of loading them one by one.
3. Give this installation's ``spark-submit`` the project's log configuration
   (:func:`install_submit_log_config`): it starts its JVM before the job runs, with Spark's INFO log;
   and the short-job JVM options of local sessions as its driver's default options
   (:func:`install_submit_defaults`: ``spark.driver.defaultJavaOptions``).
   That conf folder is kept off the class path of local JVMs (:data:`pipelines.session.LOCAL_CONF_DIR`),
   which could not map a class archive with a non-empty folder on it.

The Makefile runs it once after installing; running it again does nothing that is already done.
An archive written for another Java or class path is written again; ``--force`` writes it anyway.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

__all__ = ["main", "install_submit_log_config", "install_submit_defaults"]

_ARCHIVE_RUN = """
import sys
from store_format.config import load_broker_config
from store_format.sample import generate_sample_store
from pipelines.rebuild import run_rebuild
from pipelines.session import build_spark_session
root, archive = sys.argv[1], sys.argv[2]
config = load_broker_config("mappedFileSizeCommitLog=1048576\\nmaxHashSlotNum=100\\nmaxIndexNum=400\\n")
generate_sample_store(root + "/store", config, messages=2000, seed=1)
spark = build_spark_session("local[2]", archive_at_exit=archive)
run_rebuild(root + "/store", root + "/out", config, spark=spark, tables=root + "/tables", split_size=262144)
spark.stop()
"""


def compile_kernels() -> float:
    t = time.perf_counter()
    rehearse()
    return time.perf_counter() - t


_REHEARSAL_CONFIG = "mappedFileSizeCommitLog=65536\nmappedFileSizeConsumeQueue=600\nmaxHashSlotNum=8\nmaxIndexNum=64\n"


def rehearse() -> None:
    """Load every kernel with the very argument types a rebuild passes (arrays the scan maps
    read-only, columns read back from Arrow work files, ...), by rebuilding a tiny generated store
    in this process and building the tables' columns of one of its splits.  numba keeps one
    compiled version per type signature: :func:`store_format.warmup.warm_up` alone misses some, and
    each one a Spark worker loads on its first task costs it a tenth of a second."""
    from store_format import commitlog as cl
    from store_format.config import load_broker_config
    from store_format.sample import generate_sample_store
    from store_format.store import Reader, open_store
    from store_format.warmup import warm_up

    from .plan import plan_splits
    from .rebuild import Progress, run_rebuild
    from .scan import records_batch, walk_split

    warm_up()
    config = load_broker_config(_REHEARSAL_CONFIG)
    with tempfile.TemporaryDirectory(prefix="rocketmq-rehearsal-") as tmp:
        generate_sample_store(f"{tmp}/store", config, messages=120, seed=7)
        run_rebuild(f"{tmp}/store", f"{tmp}/out", config, engine="local", processes=1,
                    progress=Progress(emit=lambda _line: None))
        st = open_store(f"{tmp}/store", config)
        split = plan_splits(st, 65536)[0]
        with Reader(st.fs, split.path) as read:
            _, res = walk_split(split, read, config, scratch=cl.Scratch())
        records_batch(split, res, {}, True, False)


def write_class_archive(force: bool = False) -> str:
    """Write :data:`pipelines.session.CDS_ARCHIVE` and, beside it, what it was written for
    (:func:`pipelines.session.cds_fingerprint`); an archive written for another JVM or class path
    is written again."""
    from .session import CDS_ARCHIVE, CDS_ARCHIVE_KEY, cds_fingerprint, class_archive_matches
    if class_archive_matches() and not force:
        return f"class archive {CDS_ARCHIVE} already there"
    with tempfile.TemporaryDirectory(prefix="rocketmq-warm-") as tmp:
        partial = os.path.join(tmp, "spark-cds.jsa")
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
        proc = subprocess.run([sys.executable, "-c", _ARCHIVE_RUN, tmp, partial], env=env, capture_output=True,
                              text=True)
        if proc.returncode != 0 or not os.path.isfile(partial):
            return f"class archive not written (the JVM may not support it): {proc.stderr.strip()[-300:]}"
        os.replace(partial, CDS_ARCHIVE)  # the same filesystem as the venv is not guaranteed
    with open(CDS_ARCHIVE_KEY, "w") as f:
        f.write(cds_fingerprint())
    return f"class archive written to {CDS_ARCHIVE}"


def install_submit_log_config(spark_home: str | None = None) -> str:
    """Copy ``pipelines/log4j2.properties`` to ``conf/log4j2.properties`` of the Spark installed with
    PySpark in this environment (its ``SPARK_HOME``), so that ``spark-submit pipelines/spark_submit.py``
    prints the job's lines and errors only, as ``python -m pipelines`` does.  spark-submit reads it
    when it starts its JVM (unless ``SPARK_CONF_DIR`` points elsewhere); the context started later
    keeps it (a configuration given from Python is replaced by Spark's defaults as the context
    starts).  A file already there that is not ours is left alone."""
    from .session import LOG4J_CONFIG
    with open(LOG4J_CONFIG, "rb") as f:
        ours = _MARK + f.read()
    return _install_conf_file(spark_home, "log4j2.properties", ours, _MARK, "spark-submit log configuration")


def install_submit_defaults(spark_home: str | None = None) -> str:
    """Write ``conf/spark-defaults.conf`` of the Spark installed with PySpark in this environment with
    ``spark.driver.defaultJavaOptions`` = :data:`pipelines.session.SHORT_JOB_JVM_OPTIONS`: under
    ``spark-submit`` the driver JVM is started by Spark's launcher, before the job runs, with the server
    compiler, whose threads took a core from the Python workers (a 20 MB store on two cores: 16.5 s
    against 12.1 s).  ``defaultJavaOptions`` come before a user's ``--driver-java-options`` /
    ``spark.driver.extraJavaOptions``, which can override them.  A file already there that is not
    ours is left alone; a Spark installation of your own is not touched."""
    from .session import SHORT_JOB_JVM_OPTIONS
    ours = _DEFAULTS_MARK + f"spark.driver.defaultJavaOptions {' '.join(SHORT_JOB_JVM_OPTIONS)}\n".encode()
    return _install_conf_file(spark_home, "spark-defaults.conf", ours, _DEFAULTS_MARK, "spark-submit defaults")


_MARK = b"# written by python -m pipelines.warm (rocketmq-offline-index) from pipelines/log4j2.properties\n"
_DEFAULTS_MARK = b"# written by python -m pipelines.warm (rocketmq-offline-index)\n"


def _install_conf_file(spark_home: str | None, name: str, ours: bytes, mark: bytes, what: str) -> str:
    """Put ``ours`` at ``conf/<name>`` of ``spark_home`` (default: PySpark's own), atomically, unless the
    file there is already ours or was not written by this project (its first line is not ``mark``)."""
    if spark_home is None:
        import pyspark
        spark_home = os.path.dirname(os.path.abspath(pyspark.__file__))
    target = os.path.join(spark_home, "conf", name)
    if os.path.isfile(target):
        with open(target, "rb") as f:
            there = f.read()
        if there == ours:
            return f"{what} {target} already there"
        if not there.startswith(mark):
            return f"{what} {target} left as it is (not written by this project)"
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target + ".tmp", "wb") as f:
        f.write(ours)
    os.replace(target + ".tmp", target)
    return f"{what} written to {target}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m pipelines.warm", description=__doc__.split("\n\n")[0])
    p.add_argument("--force", action="store_true", help="write the class archive again")
    p.add_argument("--no-archive", action="store_true", help="only compile the kernels")
    args = p.parse_args(argv)
    print(f"kernels compiled or loaded in {compile_kernels():.1f}s", file=sys.stderr)
    print(install_submit_log_config(), file=sys.stderr)
    print(install_submit_defaults(), file=sys.stderr)
    if not args.no_archive:
        print(write_class_archive(args.force), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
