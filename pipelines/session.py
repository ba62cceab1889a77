"""Spark session for the jobs: local by default, the venv's interpreter for Python workers."""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession

from .delta_jars import WRITER_CONF, delta_conf
from .pyspark_private import (
    active_context,
    jvm_of,
    launch_local_gateway,
    plain_pyspark,
    running_gateway,
    spark_schema_of_arrow,
    submitted_conf,
)
from .spare import SPARE_ENV, start_spare

__all__ = ["build_spark_session", "build_spark_context", "Spark", "context_of", "session_of", "start_session",
           "PendingSession", "let_local_jvm_go", "mute_jvm", "stop_jobs",
           "run_tasks", "delta_classes_available", "spark_schema", "local_jvm_options", "CDS_ARCHIVE",
           "JOB_TAG", "tag_jobs"]

_DEFAULT_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.execution.arrow.maxRecordsPerBatch": "262144",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.adaptive.enabled": "true",
    "spark.python.worker.reuse": "true",
    # the JVM talks to its Python workers over Unix sockets: over local TCP, a task's data (a small
    # write after the command) waited 40 ms for the worker's delayed ACK, on every task (Nagle)
    "spark.python.unix.domain.socket.enabled": "true",
    "spark.driver.memory": "4g",
    "spark.sql.mapKeyDedupPolicy": "LAST_WIN",
}


Spark = SparkSession | SparkContext
"""A Spark handle: the SQL session, or only its context where no DataFrame is needed (the RDD jobs of a
rebuild): creating the SQL session costs a local JVM 0.4 s, on the critical path of a short job."""


def context_of(spark: Spark) -> SparkContext:
    return spark if isinstance(spark, SparkContext) else spark.sparkContext


def session_of(spark: Spark, extra_conf: dict[str, str] | None = None) -> SparkSession:
    """The SQL session of a handle: the session itself, or the one over the context (created now,
    with this project's SQL settings)."""
    if isinstance(spark, SparkSession):
        return spark
    builder = SparkSession.builder
    for key, value in {**_DEFAULT_CONF, **(extra_conf or {})}.items():
        if key.startswith("spark.sql."):
            builder = builder.config(key, value)
    return builder.getOrCreate()


def build_spark_session(master: str | None = None, app_name: str = "rocketmq-offline-index",
                        extra_conf: dict[str, str] | None = None, log_level: str | None = None,
                        archive_at_exit: str | None = None) -> SparkSession:
    """Get or create the session.  Python workers run this interpreter (``PYSPARK_PYTHON``) unless
    the environment already says otherwise, so they see the same packages as the driver."""
    return session_of(build_spark_context(master, app_name, extra_conf, log_level, archive_at_exit), extra_conf)


def build_spark_context(master: str | None = None, app_name: str = "rocketmq-offline-index",
                        extra_conf: dict[str, str] | None = None, log_level: str | None = None,
                        archive_at_exit: str | None = None) -> SparkContext:
    """Get or create the Spark context the session of :func:`build_spark_session` runs on, without the
    SQL session (see :data:`Spark`).  Python workers run this interpreter (``PYSPARK_PYTHON``) unless
    the environment already says otherwise, so they see the same packages as the driver."""
    # local Python workers inherit this environment: let them import this checkout's packages
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep) if os.environ.get("PYTHONPATH") else []
    if root not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([root, *paths])
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    launched_by_submit = "PYSPARK_GATEWAY_PORT" in os.environ  # spark-submit set master and resources
    gateway = None
    conf = dict(_DEFAULT_CONF)
    if not master and not launched_by_submit and not os.environ.get("SPARK_MASTER") \
            and "spark.master" not in (extra_conf or {}):
        master = "local[*]"
    if master and master.startswith("local") and not launched_by_submit:
        conf["spark.driver.extraJavaOptions"] = " ".join(local_jvm_options(archive_at_exit))
        if not plain_pyspark():
            # workers forked from a daemon that already loaded the kernels (see pipelines.sparkdaemon)
            conf["spark.python.daemon.module"] = "pipelines.sparkdaemon"
    else:
        conf.pop("spark.driver.memory")
    if launched_by_submit:
        conf.update(_submit_conf(log_level))
    conf.update(extra_conf or {})
    # delta-spark: the cached jars on a local run, Delta's SQL extension (see pipelines.delta_jars)
    conf.update(delta_conf(conf, local=bool(master and master.startswith("local") and not launched_by_submit),
                           writer=conf.get(WRITER_CONF, "auto")))
    if conf.get("spark.python.daemon.module") == "pipelines.sparkdaemon" and active_context() is None:
        # a warm Python daemon, started while the JVM starts (see pipelines.sparkdaemon); under
        # spark-submit the JVM is up already and passes it on to the daemon as an executor variable
        spare = start_spare()
        if launched_by_submit:
            if spare is not None:
                conf[f"spark.executorEnv.{SPARE_ENV}"] = os.environ[SPARE_ENV]
        elif running_gateway() is None and master is not None:
            gateway = _launch_local_jvm(master, app_name, conf)
    spark_conf = SparkConf().setAppName(app_name)
    if master:
        spark_conf.setMaster(master)
    spark_conf.setAll(list(conf.items()))
    # a JVM launched here is handed to PySpark through the constructor, which installs it under its lock
    sc = SparkContext(conf=spark_conf, gateway=gateway) if gateway is not None else SparkContext.getOrCreate(spark_conf)
    sc.setLogLevel(log_level or "ERROR")
    if log_level and master and master.startswith("local") and not launched_by_submit:
        # log4j2.properties holds Spark's own loggers at ERROR (see there); setLogLevel moves the root only
        jvm = jvm_of(sc)
        jvm.org.apache.logging.log4j.core.config.Configurator.setAllLevels(
            "org.apache.spark", jvm.org.apache.logging.log4j.Level.toLevel(log_level))
    return sc


def _submit_conf(log_level: str | None) -> dict[str, str]:
    """Settings for a context in a JVM spark-submit started (its options and log configuration are
    spark-submit's by then):

    * ``spark.log.level``: the job's level (ERROR unless ``--log-level``), applied as the context
      starts; Spark logs its first three lines (version, OS, Java) before that.  Quiet from the
      JVM's start: ``--driver-java-options -Dlog4j2.configurationFile=pipelines/log4j2.properties``
      (a reconfiguration of log4j from here is undone: the context reloads Spark's defaults).
    * a local master: Python workers forked warm from :mod:`pipelines.sparkdaemon`, as under
      ``python -m`` (each cold worker loads numba and the kernels itself first), unless
      :func:`pipelines.pyspark_private.plain_pyspark`.
    Settings given to spark-submit (``--conf``) win."""
    given = submitted_conf()
    conf = {}
    if not given.contains("spark.log.level"):
        conf["spark.log.level"] = (log_level or "ERROR").upper()
    if (given.get("spark.master", "").startswith("local") and not given.contains("spark.python.daemon.module")
            and not plain_pyspark()):
        conf["spark.python.daemon.module"] = "pipelines.sparkdaemon"
    return conf


CDS_ARCHIVE = os.path.join(sys.prefix, "spark-cds.jsa")
# what the archive was written for (:func:`cds_fingerprint`), beside it
CDS_ARCHIVE_KEY = CDS_ARCHIVE + ".key"
# the conf folder of local JVMs (SPARK_CONF_DIR unless set): a path never created, so no folder is on
# their class path
LOCAL_CONF_DIR = os.path.join(sys.prefix, "spark-conf-local")


def cds_fingerprint() -> str:
    """What decides whether a local JVM can map :data:`CDS_ARCHIVE`: the Java runtime, and the class
    path Spark's launcher gives it (its conf folder, :data:`LOCAL_CONF_DIR` unless ``SPARK_CONF_DIR``
    says otherwise, then every jar of PySpark's Spark).  A JVM whose class path differs from the
    archive's ignores the archive without a word (``-Xshare:auto``), and none can be written with a
    non-empty folder on it: the conf folder ``python -m pipelines.warm`` creates for spark-submit's
    log configuration once made every local session start without the archive."""
    import pyspark
    spark_home = os.environ.get("SPARK_HOME") or os.path.dirname(os.path.abspath(pyspark.__file__))
    conf_dir = os.environ.get("SPARK_CONF_DIR") or LOCAL_CONF_DIR
    java_home = os.environ.get("JAVA_HOME")
    java = os.path.join(java_home, "bin", "java") if java_home else shutil.which("java") or "java"
    jars = os.path.join(spark_home, "jars")
    names = sorted(os.listdir(jars)) if os.path.isdir(jars) else []
    return json.dumps({"java": os.path.realpath(java), "conf": conf_dir if os.path.isdir(conf_dir) else None,
                       "jars": jars, "jar_names": names})


def class_archive_matches() -> bool:
    """:data:`CDS_ARCHIVE` exists and was written for this JVM and class path (:func:`cds_fingerprint`)."""
    try:
        with open(CDS_ARCHIVE_KEY) as f:
            key = f.read()
    except OSError:
        return False
    return os.path.isfile(CDS_ARCHIVE) and key == cds_fingerprint()
LOG4J_CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2.properties")


_JVM_NOISE = (b"WARNING: Using incubator modules",)   # printed by the JVM for Spark's own --add-modules
_jvm_stderr_muted = threading.Event()


def _launch_local_jvm(master: str, app_name: str, conf: dict[str, str]):
    """Start the local JVM as PySpark would, but with its stderr read by this process: the lines go
    to this process's stderr (the JVM's one unavoidable start-up warning left out) until
    :func:`mute_jvm` stops them, so that an interrupted run ends with one line instead of the
    stack traces of the tasks the JVM abandons as it exits."""
    spark_conf = SparkConf(loadDefaults=False).setMaster(master).setAppName(app_name)
    for key, value in conf.items():
        spark_conf.set(key, value)
    with _local_conf_dir():
        gateway = launch_local_gateway(spark_conf, stderr=subprocess.PIPE)
    source = gateway.proc.stderr

    def forward() -> None:
        out = sys.stderr.buffer if hasattr(sys.stderr, "buffer") else None
        for line in iter(source.readline, b""):
            if _jvm_stderr_muted.is_set() or line.startswith(_JVM_NOISE):
                continue
            if out is not None:
                out.write(line)
                out.flush()
            else:
                sys.stderr.write(line.decode("utf-8", "replace"))

    threading.Thread(target=forward, name="jvm-stderr", daemon=True).start()
    return gateway


@contextlib.contextmanager
def _local_conf_dir() -> Iterator[None]:
    """While a local JVM is launched: ``SPARK_CONF_DIR`` = :data:`LOCAL_CONF_DIR`, unless set.  Spark's
    launcher puts its conf folder first on the JVM's class path; the one of PySpark's Spark holds
    spark-submit's log configuration (:mod:`pipelines.warm`), and a JVM cannot map a class archive
    with a non-empty folder on its class path.  A local JVM is given its log configuration directly
    (:func:`local_jvm_options`).  Only the launch sees the setting: a spark-submit this process
    starts later still reads the conf folder."""
    if "SPARK_CONF_DIR" in os.environ:
        yield
        return
    os.environ["SPARK_CONF_DIR"] = LOCAL_CONF_DIR
    try:
        yield
    finally:
        os.environ.pop("SPARK_CONF_DIR", None)


def mute_jvm() -> None:
    """Drop whatever a JVM started by :func:`build_spark_session` still prints (an interrupted run)."""
    _jvm_stderr_muted.set()


class PendingSession(threading.Thread):
    """A Spark context being started in the background: :meth:`context` waits for it.  The JVM keeps
    one core busy for a second or two while it starts; the driver does its own work meanwhile.  With
    ``sql`` the SQL session follows in the background too (a job that publishes tables needs it later)."""

    def __init__(self, master: str | None, log_level: str | None, sql: bool = False,
                 table_writer: str = "auto") -> None:
        super().__init__(name="spark-session", daemon=True)
        self.master, self.log_level, self.sql = master, log_level, sql
        self.table_writer = table_writer
        self.sc: SparkContext | None = None
        self.error: BaseException | None = None
        self._context_ready = threading.Event()
        self.start()

    def run(self) -> None:
        try:
            self.sc = build_spark_context(self.master, log_level=self.log_level,
                                          extra_conf={WRITER_CONF: self.table_writer})
            self._context_ready.set()
            if self.sql:
                session_of(self.sc)
        except BaseException as err:  # raised where the session is needed
            self.error = err
        finally:
            self._context_ready.set()

    def context(self) -> SparkContext:
        """The context, as soon as it is up (the SQL session may still be on its way)."""
        self._context_ready.wait()
        if self.sc is None:
            assert self.error is not None
            raise self.error
        return self.sc

    def result(self) -> SparkSession:
        """The SQL session (created now if it was not asked for)."""
        self.join()
        if self.error is not None:
            raise self.error
        return session_of(self.context())


def start_session(master: str | None = None, log_level: str | None = None, sql: bool = False,
                  table_writer: str = "auto") -> PendingSession:
    """Start :func:`build_spark_context` in the background (call it once the options are valid);
    ``table_writer``: ``--table-writer`` (:mod:`pipelines.delta_jars`)."""
    return PendingSession(master, log_level, sql, table_writer)


def stop_jobs(spark: Spark, patience: float = 10.0) -> None:
    """After an interrupt: the call was cut, its job goes on.  Cancel it and wait (a while) for its
    tasks to stop (Spark kills a cancelled task's Python worker within
    ``spark.python.task.killTimeout``), so that none writes into the staging folder being removed.
    Only the jobs tagged :data:`JOB_TAG` go (a notebook's own jobs in the same context stay).
    The workers cut off print tracebacks through the JVM's stderr: muted first (:func:`mute_jvm`)."""
    mute_jvm()
    try:
        sc = context_of(spark)
        sc.cancelJobsWithTag(JOB_TAG)
        tracker = sc.statusTracker()
        deadline = time.monotonic() + patience
        while time.monotonic() < deadline and (tracker.getActiveStageIds() or
                                               sum(e.numRunningTasks for e in tracker.getExecutorInfos())):
            time.sleep(0.1)
    except Exception:  # the JVM is going too
        pass


def let_local_jvm_go() -> None:
    """Before this process ends: close the Py4J gateway to a JVM this process started, so that the JVM
    finishes at once when its stdin closes (Spark's shutdown hooks still stop the context and remove
    its temporary folders).  With the gateway's connection threads still blocked in socket reads, the
    JVM's exit waits a third of a second for them."""
    gateway = running_gateway()
    if gateway is None or "PYSPARK_GATEWAY_PORT" in os.environ:  # no JVM, or spark-submit's own
        return
    try:
        gateway.shutdown()
    except Exception:  # the JVM is gone already
        pass


# a driver JVM that lives for one job and does little but schedule: the client compiler only (the
# server compiler's threads took a core from the job's Python workers for seconds) and the
# throughput collector; also given to this installation's spark-submit (pipelines.warm)
SHORT_JOB_JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseParallelGC")


def local_jvm_options(archive_at_exit: str | None = None) -> list[str]:
    """Options of a local driver JVM, which lives for one job.

    * the client compiler only (``TieredStopAtLevel=1``): starts seconds sooner, and the JVM does
      little but schedule here;
    * class data sharing: Spark loads thousands of classes at every start; an archive of them
      (``CDS_ARCHIVE``, written once by ``python -m pipelines.warm``, see the Makefile) maps them
      instead (measured: session 3.1 -> 2.4 s, first job 3.1 -> 2.1 s).  A JVM that does not match
      the archive ignores it (``-Xshare:auto``);
    * Spark's own log at ERROR from the first line on (``log4j2.properties``; ``--log-level``
      raises it once the session is up).
    """
    opts = [*SHORT_JOB_JVM_OPTIONS, "-Xlog:cds=off", "-Xlog:cds+dynamic=off",
            f"-Dlog4j2.configurationFile=file:{LOG4J_CONFIG}"]
    if archive_at_exit:
        opts.append(f"-XX:ArchiveClassesAtExit={archive_at_exit}")
    elif class_archive_matches():
        opts.append(f"-XX:SharedArchiveFile={CDS_ARCHIVE}")
    return opts


def run_tasks(spark: Spark, task, n: int, what: str) -> list[dict]:
    """One Spark job of ``n`` tasks, task ``i`` running ``task.rows(i)`` (a list of small dicts: file
    lists, summaries); the rows of all, collected.  Plain RDD tasks: the first job of a session starts
    a second sooner than through DataFrames and Arrow (measured: 1.7 s against 2.7 s)."""
    sc = context_of(spark)
    tag_jobs(sc)
    sc.setJobDescription(what)
    return sc.parallelize(range(n), max(n, 1)).flatMap(task.rows).collect()


JOB_TAG = f"rocketmq-offline-index-{os.getpid()}"


def tag_jobs(sc: SparkContext) -> None:
    """Tag the jobs this thread starts from now on with :data:`JOB_TAG` (job tags are per thread), so
    that :func:`stop_jobs` cancels this process's jobs and no one else's in a shared context."""
    if JOB_TAG not in sc.getJobTags():
        sc.addJobTag(JOB_TAG)


def delta_classes_available(spark: SparkSession) -> bool:
    """Whether delta-spark's JVM classes are on the classpath (a cluster's, or ``spark.jars``: those are
    in the context class loader, which Spark loads data sources and extensions from)."""
    try:
        jvm = jvm_of(spark.sparkContext)
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        jvm.java.lang.Class.forName("io.delta.tables.DeltaTable", False, loader)
        return True
    except Exception:
        return False


def spark_schema(schema):
    """Spark's StructType for an Arrow schema (``mapInArrow``/``applyInArrow`` want Spark types)."""
    return spark_schema_of_arrow(schema)
