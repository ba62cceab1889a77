"""The rebuild on a real Spark standalone cluster, and what operators' clusters do to it.

A module fixture starts a master and two one-core workers on 127.0.0.1 from the pyspark
distribution installed in the venv (``bin/spark-class org.apache.spark.deploy.master.Master`` and
``… deploy.worker.Worker``), each in its own process group, and kills them in teardown whatever
happened.  Jobs go through the distribution's ``bin/spark-submit``, with the code shipped as a
cluster user ships it: the zip of ``python -m pipelines.package`` via ``--py-files``.

The executors run the venv's interpreter without its site initialisation (``python -S``, with
site-packages as a plain path entry): numpy, numba and pyarrow are there, but not the editable
install of this checkout, and no ``PYTHONPATH`` names the checkout; the executors can import the
project only from the shipped zip, like executors on other machines.  Everything runs on this
machine, so the scan→build exchange under ``OUT/.rebuild-staging-*/_work`` is shared by the
workers here; on a real cluster ``OUT`` must be on a shared file system (HDFS, S3, NFS).

Faults, each found through its parents in ``/proc`` and killed by PID with SIGKILL once an
executor's Python worker is seen reading the commitlog (a scan task at work): that Python worker;
or that executor's Worker JVM (the executor exits with it).  Either the job finishes with the
reference's bytes (and the event log shows the failed scan task), or it fails with a message and
leaves ``OUT`` exactly as it was; with ``spark.task.maxFailures=1`` Spark cannot recover, which
exercises the second branch for real.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pipelines.delta import read_arrow
from pipelines.package import build_zip
from store_format.config import BrokerConfig, load_broker_config
from store_format.reput import InMemoryRebuild, rebuild_in_memory
from store_format.sample import generate_sample_store, write_broker_conf
from store_format.store import open_store

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

REPO_ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("store_format", "pipelines")

# six 1 MiB segments (the last one partly written), several consume queue and index files per queue
CONFIG_TEXT = ("mappedFileSizeCommitLog=1048576\nmappedFileSizeConsumeQueue=6000\n"
               "maxHashSlotNum=500\nmaxIndexNum=2000\n")
MESSAGES = 12000
SPLIT_SIZE = "64k"        # 16 splits per segment, most of them resynchronizing

START_TIMEOUT = 180.0      # master and workers up and registered (a loaded machine starts JVMs slowly)
JOB_TIMEOUT = 300.0        # one spark-submit
FAULT_MARKER = "OLD-RUN"   # a file in the previous outputs: present after a run iff OUT was not replaced


# -- processes, through /proc --------------------------------------------------------------------

def _processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every process still there."""
    out: dict[int, tuple[int, str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        out[int(entry)] = (int(stat.rsplit(")", 1)[1].split()[1]), cmd)
    return out


def _opens(pid: int, prefix: str) -> bool:
    """Whether the process has a file under ``prefix`` open or memory-mapped."""
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{pid}/fd/{fd}").startswith(prefix):
                    return True
        with open(f"/proc/{pid}/maps") as f:
            return any(prefix in line for line in f)
    except OSError:
        return False


def _environ(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/environ", "rb") as f:
        pairs = [item.split(b"=", 1) for item in f.read().split(b"\0") if b"=" in item]
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, v in pairs}


def _free_ports(n: int) -> list[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"({path} not readable)"


def _clean_env() -> dict[str, str]:
    """This process's environment without anything Spark- or path-related that tests before may have set
    (a local session puts the checkout on ``PYTHONPATH``)."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("SPARK_", "PYSPARK_", "_PYSPARK")) and k not in ("PYTHONPATH", "PYTHONSTARTUP")}


def _killpg(proc: subprocess.Popen, grace: float = 5.0) -> None:
    """Stop a process we started in its own session, with everything it started (its process group)."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        if proc.poll() is not None and os.path.exists(f"/proc/{proc.pid}"):
            return  # our leader is gone and its id is another process's: none of ours is left in the group
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(wait)
        if proc.poll() is not None and not _group_alive(proc.pid):
            return


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


# -- the cluster -----------------------------------------------------------------------------------

@dataclass
class _Worker:
    index: int
    proc: subprocess.Popen
    port: int
    log: Path


@dataclass
class Cluster:
    """A standalone master and its workers, started from the pyspark distribution's launcher."""
    root: Path
    spark_home: Path
    executor_python: Path
    master_port: int = 0
    ui_port: int = 0
    master: subprocess.Popen | None = None
    workers: list[_Worker] = field(default_factory=list)
    _started: list[subprocess.Popen] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.master_port}"

    def _env(self) -> dict[str, str]:
        env = _clean_env()
        env.update(SPARK_HOME=str(self.spark_home), SPARK_CONF_DIR=str(self.root / "conf"),
                   SPARK_LOCAL_IP="127.0.0.1", SPARK_DAEMON_MEMORY="256m",
                   SPARK_DAEMON_JAVA_OPTS="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
        return env

    def _spawn(self, args: list[str], log: Path, env: dict[str, str], cwd: Path) -> subprocess.Popen:
        cwd.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as f:
            proc = subprocess.Popen(args, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                    cwd=cwd, start_new_session=True)
        self._started.append(proc)
        return proc

    def start(self) -> None:
        conf = self.root / "conf"
        conf.mkdir(parents=True, exist_ok=True)
        # no REST submission server (it would take the fixed port 6066), nothing else from outside
        (conf / "spark-defaults.conf").write_text("spark.master.rest.enabled false\n")
        self.master_port, self.ui_port = _free_ports(2)
        spark_class = str(self.spark_home / "bin" / "spark-class")
        self.master = self._spawn([spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                   "--port", str(self.master_port), "--webui-port", str(self.ui_port)],
                                  self.root / "master.log", self._env(), self.root / "master")
        for i in range(2):
            self.workers.append(self._start_worker(i))
        self.wait_for_workers()

    def _start_worker(self, index: int) -> _Worker:
        port, ui_port = _free_ports(2)
        home = self.root / f"worker-{index}"
        (home / "local").mkdir(parents=True, exist_ok=True)
        env = self._env()
        env["SPARK_LOCAL_DIRS"] = str(home / "local")
        log = self.root / f"worker-{index}.log"
        proc = self._spawn([str(self.spark_home / "bin" / "spark-class"), "org.apache.spark.deploy.worker.Worker",
                            self.url, "--cores", "1", "--memory", "1g", "--host", "127.0.0.1", "--port", str(port),
                            "--webui-port", str(ui_port), "--work-dir", str(home / "work")], log, env, home)
        return _Worker(index, proc, port, log)

    def restart_worker(self, index: int) -> None:
        """Replace a worker that was killed (new ports: the old ones may linger)."""
        old = self.workers[index]
        _killpg(old.proc, grace=1.0)
        self.workers[index] = self._start_worker(index)
        self.wait_for_workers()

    def state(self) -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=5) as resp:
            return json.loads(resp.read())

    def wait_for_workers(self) -> None:
        """Until the master lists every current worker as ALIVE (by its port)."""
        deadline = time.monotonic() + START_TIMEOUT
        want = {w.port for w in self.workers}
        while True:
            for proc in [self.master, *(w.proc for w in self.workers)]:
                if proc is not None and proc.poll() is not None:
                    raise RuntimeError(f"a cluster process exited with {proc.returncode}:\n{self.logs()}")
            with contextlib.suppress(OSError, ValueError):
                alive = {w["port"] for w in self.state().get("workers", []) if w.get("state") == "ALIVE"}
                if want <= alive:
                    return
            if time.monotonic() > deadline:
                raise RuntimeError(f"workers not registered after {START_TIMEOUT:.0f}s:\n{self.logs()}")
            time.sleep(0.5)

    def executors(self) -> dict[int, int]:
        """Executor JVM pid -> index of the worker that launched it."""
        by_pid = {w.proc.pid: w.index for w in self.workers}
        return {pid: by_pid[ppid] for pid, (ppid, cmd) in _processes().items()
                if ppid in by_pid and "CoarseGrainedExecutorBackend" in cmd}

    def python_workers(self) -> list[tuple[int, int, int]]:
        """(pid, executor pid, worker index) of every Python process below an executor JVM: the
        daemon it starts and the workers the daemon forks."""
        procs = _processes()
        executors = self.executors()
        out = []
        for pid, (ppid, cmd) in procs.items():
            chain, parent = 0, ppid
            while parent not in executors and parent in procs and chain < 4:
                parent, chain = procs[parent][0], chain + 1
            if parent in executors and "pyspark" in cmd:
                out.append((pid, parent, executors[parent]))
        return out

    def logs(self) -> str:
        parts = [f"--- master.log\n{_tail(self.root / 'master.log')}"]
        parts += [f"--- {w.log.name}\n{_tail(w.log)}" for w in self.workers]
        return "\n".join(parts)

    def stop(self) -> None:
        for proc in reversed(self._started):
            _killpg(proc)

    # -- jobs ----------------------------------------------------------------------------------------

    def submit(self, py_files: Path, script: Path, args: list[str], name: str,
               extra_conf: dict[str, str] | None = None) -> subprocess.Popen:
        """Start ``spark-submit`` in client mode (in its own process group); output in ``<name>.out/.err``,
        the event log in ``events-<name>/``."""
        events = self.root / f"events-{name}"
        events.mkdir()
        env = _clean_env()
        env.update(SPARK_HOME=str(self.spark_home), SPARK_CONF_DIR=str(self.root / "conf"), SPARK_LOCAL_IP="127.0.0.1",
                   PYSPARK_PYTHON=str(self.executor_python), PYSPARK_DRIVER_PYTHON=sys.executable,
                   SPARK_LOCAL_DIRS=str(self.root / "driver-local"))
        conf = {
            "spark.app.name": f"test-cluster-{name}",
            "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
            "spark.ui.enabled": "false",
            "spark.executor.memory": "512m", "spark.executor.cores": "1", "spark.cores.max": "2",
            "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
            "spark.executor.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
            # both executors are there before the first job, so the scan runs on both
            "spark.scheduler.minRegisteredResourcesRatio": "1.0",
            "spark.scheduler.maxRegisteredResourcesWaitingTime": "120s",
            # numba caches kernels imported from a zip under $XDG_CACHE_HOME/numba (NUMBA_CACHE_DIR
            # is not used for them): a writable folder of the test, not the user's home
            "spark.executorEnv.XDG_CACHE_HOME": str(self.root / "executor-cache"),
            "spark.eventLog.enabled": "true", "spark.eventLog.dir": events.as_uri(),
            "spark.eventLog.compress": "false", "spark.eventLog.rolling.enabled": "false",
            **(extra_conf or {}),
        }
        cmd = [str(self.spark_home / "bin" / "spark-submit"), "--master", self.url, "--deploy-mode", "client",
               "--driver-memory", "1g", "--py-files", str(py_files)]
        for key, value in conf.items():
            cmd += ["--conf", f"{key}={value}"]
        cmd += [str(script), *args]
        out, err = open(self.root / f"{name}.out", "wb"), open(self.root / f"{name}.err", "wb")
        with out, err:
            proc = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env,
                                    cwd=self.root, start_new_session=True)
        self._started.append(proc)
        return proc

    def finish(self, proc: subprocess.Popen, name: str) -> Job:
        try:
            proc.wait(JOB_TIMEOUT)
        except subprocess.TimeoutExpired:
            _killpg(proc)
            pytest.fail(f"spark-submit {name} still running after {JOB_TIMEOUT:.0f}s:\n"
                        f"{_tail(self.root / f'{name}.err')}\n{self.logs()}")
        return Job(name, proc.returncode, (self.root / f"{name}.out").read_text(errors="replace"),
                   (self.root / f"{name}.err").read_text(errors="replace"), self.root / f"events-{name}")


@dataclass
class Job:
    name: str
    returncode: int
    stdout: str
    stderr: str
    events: Path

    def failed_tasks(self) -> dict[str, list[str]]:
        """Failed task attempts by the description of their job (``scan``, ``build``…), from the event log."""
        (log,) = [p for p in self.events.iterdir() if p.is_file()]
        stage_job: dict[int, str] = {}
        failed: dict[str, list[str]] = {}
        for line in log.read_text().splitlines():
            event = json.loads(line)
            if event["Event"] == "SparkListenerJobStart":
                desc = (event.get("Properties") or {}).get("spark.job.description") or f"job {event['Job ID']}"
                for stage in event["Stage IDs"]:
                    stage_job[stage] = desc
            elif event["Event"] == "SparkListenerTaskEnd":
                reason = event["Task End Reason"]
                if reason["Reason"] != "Success":
                    what = reason.get("Description") or reason.get("Loss Reason") or ""
                    failed.setdefault(stage_job.get(event["Stage ID"], "?"), []).append(
                        f"{reason['Reason']}: {str(what)[:200]}")
        return failed

    def context(self) -> str:
        return (f"spark-submit {self.name} exited {self.returncode}\n--- stdout (the driver's stderr too)\n"
                f"{self.stdout[-4000:]}\n--- stderr\n{self.stderr[-4000:]}")


# -- fixtures --------------------------------------------------------------------------------------

@dataclass
class Sample:
    store: Path
    conf: Path
    config: BrokerConfig
    reference: InMemoryRebuild


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Sample:
    root = tmp_path_factory.mktemp("cluster-store")
    config = load_broker_config(CONFIG_TEXT)
    info = generate_sample_store(str(root / "store"), config, messages=MESSAGES, seed=7)
    assert info["segments"] >= 5
    write_broker_conf(str(root / "broker.conf"), config)
    reference = rebuild_in_memory(open_store(str(root / "store"), config), config)
    return Sample(root / "store", root / "broker.conf", config, reference)


@pytest.fixture(scope="module")
def package_zip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The zip a user builds: ``python -m pipelines.package --out …``."""
    out = tmp_path_factory.mktemp("dist") / "rocketmq_offline_index.zip"
    proc = subprocess.run([sys.executable, "-m", "pipelines.package", "--out", str(out)], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    import pyspark
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no Java on PATH: the standalone cluster needs one (make test installs Java 17)")
    spark_home = Path(pyspark.__file__).resolve().parent
    root = tmp_path_factory.mktemp("cluster")
    # the executors' interpreter: the venv's Python without site initialisation, so without the
    # editable install of this checkout; site-packages (numpy, numba, pyarrow) as a plain path entry
    site_packages = spark_home.parent
    executor_python = root / "executor-python"
    executor_python.write_text(
        "#!/bin/sh\n"
        f'PYTHONPATH="${{PYTHONPATH:+$PYTHONPATH:}}{site_packages}"\n'
        "export PYTHONPATH\n"
        f'exec "{sys.executable}" -S "$@"\n')
    executor_python.chmod(0o755)
    c = Cluster(root, spark_home, executor_python)
    try:
        c.start()
        yield c
    finally:
        c.stop()


# -- helpers ---------------------------------------------------------------------------------------

def _tree(root: Path) -> dict[str, str]:
    """Every file and folder under ``root`` (hidden ones too): relative path -> sha256 (folders: '/')."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel = Path(dirpath).relative_to(root)
        for d in dirnames:
            out[(rel / d).as_posix() + "/"] = "/"
        for name in filenames:
            out[(rel / name).as_posix()] = hashlib.sha256((Path(dirpath) / name).read_bytes()).hexdigest()
    return out


def _expected_tree(ref: InMemoryRebuild) -> dict[str, str]:
    out = {"consumequeue/": "/", "index/": "/"}
    for rel, data in ref.consumequeue.items():
        parts = rel.split("/")
        for k in range(1, len(parts)):
            out["consumequeue/" + "/".join(parts[:k]) + "/"] = "/"
        out[f"consumequeue/{rel}"] = hashlib.sha256(data).hexdigest()
    for name, data in ref.index:
        out[f"index/{name}"] = hashlib.sha256(data).hexdigest()
    return out


def _assert_rebuilt(out: Path, ref: InMemoryRebuild) -> None:
    """``OUT/consumequeue`` and ``OUT/index`` are the reference's, byte for byte, and nothing else of
    the run is left in ``OUT`` (no staging folder, journal or lock)."""
    tree = {k: v for k, v in _tree(out).items() if not k.startswith("tables/")}
    expected = _expected_tree(ref)
    assert sorted(set(tree) - set(expected)) == [], "unexpected entries in OUT"
    assert sorted(set(expected) - set(tree)) == [], "missing files in OUT"
    differ = [k for k in expected if tree[k] != expected[k]]
    assert differ == [], f"{len(differ)} files differ from the sequential reference"
    # index files in creation order carry the reference's names
    assert sorted(os.listdir(out / "index")) == [name for name, _ in ref.index]


def _seed_previous_output(out: Path, ref: InMemoryRebuild) -> dict[str, str]:
    """A complete previous rebuild in OUT, with a marker in each folder, and its snapshot."""
    for rel, data in ref.consumequeue.items():
        (out / "consumequeue" / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / "consumequeue" / rel).write_bytes(data)
    (out / "index").mkdir(parents=True, exist_ok=True)
    for name, data in ref.index:
        (out / "index" / name).write_bytes(data)
    for folder in ("consumequeue", "index"):
        (out / folder / FAULT_MARKER).write_text("previous run\n")
    return _tree(out)


def _rebuild_args(sample: Sample, out: Path, *extra: str) -> list[str]:
    return ["rebuild", "--store", str(sample.store), "--out", str(out), "--config", str(sample.conf),
            "--split-size", SPLIT_SIZE, "--json", *extra]


def _summary(job: Job) -> dict:
    """The ``--json`` summary.  spark-submit merges the driver's stderr into its stdout, so the
    progress lines come first."""
    lines = job.stdout.splitlines()
    assert "{" in lines, job.context()
    return json.loads("\n".join(lines[lines.index("{"):]))


# -- the tests ---------------------------------------------------------------------------------------

def test_package_zip_holds_every_module_and_the_executor_python_cannot_import_the_checkout(
        package_zip: Path, cluster: Cluster) -> None:
    names = set(zipfile.ZipFile(package_zip).namelist())
    for package in PACKAGES:
        for path in (REPO_ROOT / package).rglob("*.py"):
            if "__pycache__" not in path.parts:
                assert path.relative_to(REPO_ROOT).as_posix() in names
    assert "pipelines/log4j2.properties" in names
    assert not any("__pycache__" in n or n.startswith("tests/") for n in names)
    # the same sources give the same bytes
    again = build_zip(cluster.root / "again.zip")
    assert sorted(again) == sorted(names) and (cluster.root / "again.zip").read_bytes() == package_zip.read_bytes()
    # without the zip the executors' interpreter finds neither package; with it, both come from the zip
    probe = ("import importlib, json, sys\nfound = {}\nfor name in ('store_format', 'pipelines'):\n"
             "    try:\n        found[name] = importlib.import_module(name).__file__\n"
             "    except ImportError:\n        found[name] = None\nprint(json.dumps(found))\n")
    env = _clean_env()
    bare = subprocess.run([str(cluster.executor_python), "-c", probe], env=env, capture_output=True, text=True,
                          cwd=cluster.root, timeout=120)
    assert json.loads(bare.stdout) == {"store_format": None, "pipelines": None}, bare.stderr
    env["PYTHONPATH"] = str(package_zip)
    shipped = subprocess.run([str(cluster.executor_python), "-c", probe], env=env, capture_output=True, text=True,
                             cwd=cluster.root, timeout=120)
    for name, file in json.loads(shipped.stdout).items():
        assert file == f"{package_zip}/{name}/__init__.py", shipped.stderr


@pytest.mark.full   # the rebuild below runs on executors that can import the project from the zip only
def test_executors_import_the_project_from_the_shipped_zip(package_zip: Path, cluster: Cluster) -> None:
    """A probe job imports, on every executor, each module of the checkout and reports where it came from."""
    modules = sorted(".".join(p.relative_to(REPO_ROOT).with_suffix("").parts).removesuffix(".__init__")
                     for package in PACKAGES for p in (REPO_ROOT / package).rglob("*.py")
                     if "__pycache__" not in p.parts)
    script = cluster.root / "probe_imports.py"
    script.write_text(
        "import importlib.util, json, os, sys, time\n"
        "from pyspark.sql import SparkSession\n"
        "modules = json.loads(sys.argv[1])\n"
        "def probe(_):\n"
        "    time.sleep(1.0)  # keep the first task busy so that the second one goes to the other executor\n"
        "    origins = {m: os.path.abspath(importlib.util.find_spec(m).origin) for m in modules}\n"
        "    return [json.dumps({'origins': origins, 'pythonpath': os.environ.get('PYTHONPATH', ''),\n"
        "                        'no_site': sys.flags.no_site})]\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        "rows = spark.sparkContext.parallelize(range(2), 2).mapPartitions(probe).collect()\n"
        "print(json.dumps([json.loads(r) for r in rows]))\n"
        "spark.stop()\n")
    job = cluster.finish(cluster.submit(package_zip, script, [json.dumps(modules)], "probe"), "probe")
    assert job.returncode == 0, job.context()
    rows = json.loads(job.stdout.strip().splitlines()[-1])
    zips = set()
    for row in rows:
        assert row["no_site"] == 1
        assert str(REPO_ROOT) not in row["pythonpath"].split(os.pathsep)
        for module, origin in row["origins"].items():
            zip_path, _, inner = origin.partition(".zip/")
            assert inner and zip_path.endswith("rocketmq_offline_index"), (module, origin)
            assert not origin.startswith(str(REPO_ROOT)), (module, origin)
            zips.add(zip_path)
    # each executor fetched its own copy into its working folder on its worker
    assert len(zips) == 2, zips
    assert {Path(z).relative_to(cluster.root).parts[0] for z in zips} == {"worker-0", "worker-1"}, zips


def test_rebuild_on_the_cluster_matches_the_sequential_reference(sample: Sample, package_zip: Path,
                                                                cluster: Cluster) -> None:
    out = cluster.root / "out-main"
    job = cluster.finish(cluster.submit(package_zip, REPO_ROOT / "pipelines" / "spark_submit.py",
                                        _rebuild_args(sample, out), "rebuild"), "rebuild")
    assert job.returncode == 0, job.context()
    summary = _summary(job)
    ref = sample.reference
    assert summary["splits"] > 2 * summary["segments"]
    assert (summary["records"], summary["dispatched"]) == (ref.records, ref.dispatched)
    _assert_rebuilt(out, ref)
    assert job.failed_tasks() == {}
    # the tables: a messages row per record on the reput's path (dispatched, or skipped for a size
    # mismatch), a message_keys row per index entry, a segments row per segment, one runs row
    assert summary["tables"] == str(out / "tables"), summary.get("tables_error")
    counts = {}
    for name in ("messages", "message_keys", "segments", "runs"):
        table = read_arrow(str(out / "tables"), name)
        assert table is not None, name
        counts[name] = table.num_rows
    assert summary["index_keys"] == ref.keys
    assert counts == {"messages": ref.records, "message_keys": ref.keys, "segments": summary["segments"], "runs": 1}


@pytest.mark.full
def test_relative_paths_on_the_cluster(sample: Sample, package_zip: Path, cluster: Cluster) -> None:
    """``--store`` and ``--out`` relative to the driver's working folder mean the same folders to the executors."""
    shutil.copytree(sample.store, cluster.root / "store-relative")
    shutil.copy(sample.conf, cluster.root / "broker-relative.conf")
    args = ["rebuild", "--store", "store-relative", "--out", "out-relative", "--config", "broker-relative.conf",
            "--split-size", SPLIT_SIZE, "--no-tables"]
    job = cluster.finish(cluster.submit(package_zip, REPO_ROOT / "pipelines" / "spark_submit.py", args, "relative"),
                         "relative")
    stray = [p for w in ("worker-0", "worker-1") for p in (cluster.root / w).rglob("out-relative")]
    assert stray == [], "executors wrote under their own working folders"
    assert job.returncode == 0, job.context()
    _assert_rebuilt(cluster.root / "out-relative", sample.reference)


def _run_with_fault(cluster: Cluster, sample: Sample, package_zip: Path, name: str, fault,
                    extra_conf: dict[str, str] | None = None) -> Job:
    """Submit a rebuild over a previous output and call ``fault(pid, executor pid, worker index)`` on
    the first executor Python process seen reading the commitlog (a scan task at work).  Then either
    the job succeeded, after a failed scan task, with the reference's bytes; or it failed with a
    message and left ``OUT`` exactly as it was."""
    out = cluster.root / f"out-{name}"
    before = _seed_previous_output(out, sample.reference)
    proc = cluster.submit(package_zip, REPO_ROOT / "pipelines" / "spark_submit.py",
                          _rebuild_args(sample, out, "--overwrite", "--no-tables"), name, extra_conf)
    commitlog = str(sample.store / "commitlog") + "/"
    done = ""
    deadline = time.monotonic() + JOB_TIMEOUT
    while not done and proc.poll() is None and time.monotonic() < deadline:
        for pid, executor, worker in cluster.python_workers():
            if _opens(pid, commitlog):
                # the executors' Python was not pointed at the checkout (the driver's session does not leak it)
                pythonpath = _environ(pid).get("PYTHONPATH", "").split(os.pathsep)
                assert str(REPO_ROOT) not in pythonpath, pythonpath
                done = fault(pid, executor, worker)
                break
        else:
            time.sleep(0.02)
    job = cluster.finish(proc, name)
    assert done, f"no executor Python process was seen reading the commitlog before the job ended\n{job.context()}"
    if job.returncode == 0:
        # Spark recovered: the scan task that lost its process ran again, and the bytes are the reference's
        failed = job.failed_tasks()
        assert failed.get("scan"), f"the {done} did not fail a scan task: {failed}\n{job.context()}"
        _assert_rebuilt(out, sample.reference)
    else:
        # Spark gave up: the driver says why, and OUT is exactly the previous output (no staging folder left)
        assert "Python worker exited unexpectedly" in job.stdout or "ExecutorLostFailure" in job.stdout, job.context()
        assert _tree(out) == before, f"a failed run changed OUT\n{job.context()}"
    return job


@pytest.mark.full
@pytest.mark.parametrize("attempts", [None, 1], ids=["retried", "no-retry"])
def test_killed_python_worker_mid_scan(sample: Sample, package_zip: Path, cluster: Cluster,
                                       attempts: int | None) -> None:
    """With Spark's task retries the job recovers; allowed one attempt per task (``spark.task.maxFailures=1``)
    it cannot, and must fail leaving OUT as it was."""
    def kill_python_worker(pid: int, executor: int, worker: int) -> str:
        os.kill(pid, signal.SIGKILL)
        return f"Python worker {pid} (executor JVM {executor} on worker {worker})"

    conf = {"spark.task.maxFailures": str(attempts)} if attempts else None
    job = _run_with_fault(cluster, sample, package_zip, f"kill-python-{attempts or 'default'}", kill_python_worker,
                          conf)
    if attempts == 1:
        assert job.returncode != 0, job.context()
    else:
        assert job.returncode == 0, job.context()
        assert "Python worker exited unexpectedly" in " ".join(job.failed_tasks()["scan"])


@pytest.mark.full
def test_killed_worker_jvm_mid_scan(sample: Sample, package_zip: Path, cluster: Cluster) -> None:
    killed: list[int] = []

    def kill_worker(pid: int, executor: int, worker: int) -> str:
        # the Worker JVM only: its executor notices and exits (WorkerWatcher), its Python workers with it
        os.kill(cluster.workers[worker].proc.pid, signal.SIGKILL)
        killed.append(worker)
        return f"Worker JVM {cluster.workers[worker].proc.pid} (worker {worker}, running executor JVM {executor})"

    try:
        job = _run_with_fault(cluster, sample, package_zip, "kill-worker", kill_worker)
        if job.returncode == 0:
            assert "ExecutorLostFailure" in " ".join(job.failed_tasks()["scan"])
    finally:
        for worker in killed:
            cluster.restart_worker(worker)
