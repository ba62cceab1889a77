"""Driving the JVM harness in ``tests/broker/``: the published RocketMQ store as the oracle.

``tests/broker/rmq-<version>`` is one Maven module per broker line (4.9.8, 5.3.3, 5.5.1), each with
its own classpath. Its two programs (sources in ``tests/broker/src``):

* ``harness.Writer SCENARIOS.json [THREADS]``: puts each scenario's messages through the broker's
  ``DefaultMessageStore``, then lets the broker rebuild ``consumequeue/`` and ``index/`` from the
  commitlog (the way the shared golden stores were made) into ``<dir>/expected`` (with
  ``consumequeue_ext/`` when the settings say ``enableConsumeQueueExt=true``); ``<dir>/store``
  keeps the commitlog and ``<dir>/broker.conf`` the settings. One JSON line per scenario.
* ``harness.Reader REQUEST.json``: what the broker's store answers on a store folder (queryMessage,
  getMessage over every queue, min/max offsets, cleanup), one JSON line per answer.

Scenario JSON (written by :mod:`broker_scenarios`): ``name``, ``dir``, ``config`` (broker.conf
settings, strings) and ``messages``: objects with ``topic``, ``queueId``, ``body`` (base64; or
``bodySize``: that many bytes of ``x``, for large stores), and any
of ``tags``, ``keys`` (the KEYS property as is), ``uniqKey``, ``properties`` (more properties),
``delayLevel``, ``tranType`` (none/prepared/commit/rollback), ``bornHost``/``storeHost``
(``host:port``, IPv6 as ``[addr]:port``), ``bornTimestamp``, ``flag``; or ``batch`` (a list of such
messages put as one batch into ``topic``/``queueId``); or ``sleepMs`` (a pause; on a DLedger store the
writer then also waits, once the puts are dispatched, until the checkpoint's ``logicsMsgTimestamp`` is the last
dispatch's for good: ``Stores.awaitCheckpointTimestamps``, which the line reports as
``checkpointLogicsTimestampRewritten``, how often it had to write that value again). A DLedger crash scenario
(``abort``) without one means a 5.3.3 walk from the first data file: the line adds ``crashWalkStartFile`` (the
broker's own ``isMmapFileMatchedRecover`` asked before the shutdown, ``WalkStart.java``); where the puts took 3 s
past a later file's first message (a loaded machine, or a ``pauseMs``) the writer lowers the checkpoint's
``physicMsgTimestamp`` and ``logicsMsgTimestamp`` before the shutdown writes them, to the highest value at which that
check answers the first file (2999 ms past the earliest later file's first store time, never above the broker's
value), asks it again, and the line adds ``checkpointTimestampsSet`` (``was``, ``set``, ``movedFrom``); on 5.3.3
nothing else on the restart reads them, and ``before/checkpoint`` (which ``verify``/``--as-restart`` read) holds
them.  Should the check still answer a later file, the store is written again once, its puts alone in the JVM
(``crashWalkRewritten``: why; a second miss fails the scenario). ``crashWalkFromCheckpoint`` leaves the walk's
start as the checkpoint sets it (the stores past 2 GiB, whose thorough checkpoint flush means their last data file).

BatchCQ topics (5.x; scenarios in :mod:`broker_batchcq_scenarios`): ``batchTopics`` lists topics the
writer gives ``queue.type=BatchCQ`` in ``<dir>/store/config/topics.json`` (kept there; the 5.x store
is always opened with that file's topic table, as the broker's TopicConfigManager loads it), so their
queues go to ``batchconsumequeue/``, moved into ``<dir>/expected`` as well. A ``batch`` for such a
topic with a ``uniqKey`` is stored as one inner-batch record (SendMessageProcessor's way); the
writer's line adds ``batchQueueMaxOffsets`` ("topic/queueId": max offset).

Restart knobs (``tests/broker/src/common/harness/Damage.java``; :func:`restart_variants`,
:mod:`test_restart_layouts_broker`, :mod:`test_rocksdb_restart_broker`):
``damageMessage`` (an index into the scenario's puts) flips a body byte of that put's record after the
writes, ``abort`` leaves an ``abort`` file; with either, ``<dir>/before`` keeps the store as the restart
found it (commitlog, checkpoint, abort, ``config/topics.json``) and the line adds ``damagedRecord`` (its
commitlog offset) and ``damagedByte``; ``keepBefore`` keeps ``<dir>/before`` without either; ``restartDamage``
(as ``reputDamage`` below, written before the restart: :mod:`broker_topic_empty_mix_restart_scenarios`) too.
5.x stores written with ``enabledAppendPropCRC=true`` (:mod:`test_restart_propcrc_broker`): ``refreshPropCrc``
writes the damaged record's CRC32 property again over its damaged bytes (the broker's ``UtilAll.crc32`` and
``MessageDecoder.createCrc32``), ``damageHead`` (a put index, instead of ``damageMessage``) flips its
bornTimestamp's lowest byte (outside the body: only the property covers it).
``keepQueues`` (:mod:`test_restart_prediction_broker`): the restart
keeps the queue folders and ``index/`` (``before/`` has them too; ``expected/`` then holds them as the
restart left them), and the line adds ``queuesAfterLoad`` and ``queuesAfterDispatch``: "topic/queueId" ->
the queue's class (``type``), ``maxOffset`` (where its files end), ``files``, ``maxPhysicOffset`` and,
with ext files, ``extMaxOffset`` and ``extFiles``, after ``load()`` and once the reput has caught up
(``QueueStates.java``); ``reportQueues`` adds ``queuesAfterDispatch`` alone (the queues deleted as usual).

``reputDamage`` (``{"message": i, "field": "magic"|"totalSize"|"totalSizeDelta"|"totalSizeReach"|"blankPast"|
"none", "value": n}``, or ``"offset"``, or ``"segmentLast": k`` (the last record before segment k's blank) for
``"message"``; ``ReputOnly.java``, :mod:`broker_concurrent_scenarios`): the restart's recovery dispatches
nothing, that put's record is damaged after it (``totalSizeDelta``: n added to its totalSize;
``totalSizeReach``: its totalSize set to reach the start of the n-th record after it, a blank reaching its
file's end, and ``"plus"`` bytes further; ``blankPast``: a blank's magic code, and a totalSize running n
bytes past the end of its file; ``none``: left as it is), and the broker's reput alone
dispatches from the commitlog's min offset until it stands still (it may stop for good before the end, or
with a batch task that never ends); ``store/`` keeps the damaged commitlog and the line adds
``damagedRecord``, ``damagedSize`` (its totalSize before the damage), ``reputStoodAt`` and ``reputHung`` (a
batch still held).

DLedger stores (``enableDLegerCommitLog=true`` in ``config``, a single-node group; scenarios in
:mod:`broker_dledger_scenarios`): ``config`` also carries ``dLegerGroup``, ``dLegerSelfId`` and
``dLegerPeers``, whose ``{port}`` the writer replaces by a port free on 127.0.0.1 (broker.conf then
holds that port: only the peer's server uses it); on the 5.x lines ``recheckReputOffsetFromCq=true``
too (the writer refuses a DLedger scenario without it: a 5.x restart would not dispatch the
commitlog again). The writer waits after each start until the node is leader. A message object
``{"switchToDLedger": true}`` makes a store converted in place: the messages before it go into an
ordinary commitlog (``enableDLegerCommitLog=false``), then the store restarts with DLedger for the
rest. ``<dir>/store`` keeps ``commitlog/`` (if the broker made one: legacy files of a converted store)
and ``dledger-<selfId>/`` (``data/``, ``index/``, ``checkpoint``, ``currterm``); the writer's line adds
``dledgerCommittedPos``, ``dledgerCommittedIndex``, ``dledgerBeginIndex``, ``dledgerEndIndex``,
``dividedCommitlogOffset`` (as the broker's restart found them), ``dledgerLeaderWaitMs`` and
``dledgerLoopbackOnly`` (false on 4.9.8: its remoting listens on the wildcard address).
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

HARNESS_DIR = Path(__file__).resolve().parent / "broker"
LINES = ("4.9.8", "5.3.3", "5.5.1")
BROKER_VERSION_ARG = {"4.9.8": "4", "5.3.3": "5", "5.5.1": "5.5"}   # each line as --broker-version names it
# the 4.x store unmaps files through JDK internals; the 5.x store needs the same on Java 17.  TLS off: a
# DLedger store's RPC server (NettyRemotingServer) otherwise makes a self-signed RSA certificate in its
# constructor, about a second of CPU for each store opened, one at a time; a single-node group's RPC
# carries nothing the store writes
JVM_OPTIONS = ["-Xmx2g", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Dtls.server.mode=disabled",
               "--add-opens", "java.base/java.nio=ALL-UNNAMED",
               "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
               "--add-opens", "java.base/jdk.internal.ref=ALL-UNNAMED",
               "--add-exports", "java.base/jdk.internal.ref=ALL-UNNAMED"]


class HarnessUnavailable(Exception):
    """No JDK or Maven here, or the harness could not be built: the one line the suite skips with."""


def lines_from_env(variable: str, default: str) -> tuple[str, ...]:
    """The broker lines a test module runs: the comma-separated ``variable`` of the environment, else
    ``default`` (e.g. ``CQEXT_LINES=5.3.3,5.5.1``)."""
    return tuple(os.environ.get(variable, default).split(","))


def bounded(scenarios: list[dict], full_only: tuple[str, ...]) -> list[dict]:
    """The scenarios the default suite writes: without those whose name ends with one of ``full_only``
    (variants another scenario of the module already covers in the same rule), unless
    ``PIPELINES_FULL_SUITE=1`` (``make test-full``) asks for all."""
    if os.environ.get("PIPELINES_FULL_SUITE", "") not in ("", "0"):
        return scenarios
    return [sc for sc in scenarios if not sc["name"].endswith(full_only)]


def params_or_skip(values: list, why: str) -> list:
    """``values`` for a parametrize, or one skipped case saying ``why`` (how to run it) when the default
    suite has none: a named skip rather than pytest's "got empty parameter set"."""
    import pytest
    return values or [pytest.param(None, marks=pytest.mark.skip(reason=why))]


def missing_tools() -> str | None:
    """What is missing to build and run the harness (None: nothing)."""
    for tool in ("java", "javac", "mvn"):
        if shutil.which(tool) is None:
            return f"no {tool} on PATH"
    return None


def skip_without_tools() -> None:
    """Skip the calling test module when the harness cannot be built here (no JDK or Maven)."""
    why = missing_tools()
    if why:
        import pytest
        pytest.skip(f"broker harness not available: {why} (it needs a JDK and Maven)", allow_module_level=True)


def _module(line: str) -> Path:
    return HARNESS_DIR / f"rmq-{line}"


def _built(line: str) -> bool:
    """The module's classpath and classes exist, the classes newer than every harness source and pom
    (the classpath file is rewritten only when it changes)."""
    target = _module(line) / "target"
    classes = list((target / "classes" / "harness").glob("*.class"))
    if not (target / "classpath.txt").is_file() or not classes:
        return False
    newest = max(p.stat().st_mtime for p in [*HARNESS_DIR.glob("**/*.java"), *HARNESS_DIR.glob("**/pom.xml")]
                 if "target" not in p.parts)
    return min(p.stat().st_mtime for p in classes) >= newest


_BUILDING = threading.Lock()   # the background writer (prewrite) and a test may ask at once


def build() -> None:
    """``mvn -o -q package`` (offline, from ~/.m2); online once when something is not cached yet."""
    why = missing_tools()
    if why:
        raise HarnessUnavailable(why)
    with _BUILDING:
        if not all(_built(line) for line in LINES):
            _package()


def _package() -> None:
    base = ["mvn", "-q", "-B", "-f", str(HARNESS_DIR / "pom.xml"), "package"]
    offline = subprocess.run([*base[:1], "-o", *base[1:]], capture_output=True, text=True)
    if offline.returncode == 0:
        return
    online = subprocess.run(base, capture_output=True, text=True)
    if online.returncode != 0:
        tail = (online.stdout + online.stderr).strip().splitlines()[-5:]
        raise HarnessUnavailable("the broker harness did not build: " + " | ".join(tail))


def _java(line: str, main: str, arg: Path, timeout: float, *more: str) -> list[dict]:
    target = _module(line) / "target"
    classpath = os.pathsep.join([str(target / "classes"), (target / "classpath.txt").read_text().strip()])
    proc = subprocess.run(["java", *JVM_OPTIONS, "-cp", classpath, f"harness.{main}", str(arg), *more],
                          capture_output=True, text=True, timeout=timeout)
    rows = [json.loads(s) for s in proc.stdout.splitlines() if s.startswith("{")]
    if proc.returncode != 0 and not rows:
        raise RuntimeError(f"harness.{main} ({line}) failed with exit code {proc.returncode}: "
                           f"{proc.stderr.strip()[-2000:]}")
    return rows


# scenarios one writer JVM takes: each store open at once holds heap buffers of its own (a message encoder of
# maxMessageSize, DLedger's), so a JVM of JVM_OPTIONS' heap given a hundred at a time runs out of memory
# (OutOfMemoryError, then puts refused or the run timed out); the chunks run one after the other. Fewer, larger
# chunks share one JVM's start and warm-up: 96 DLedger crash stores took 45 s in chunks of 24 (512 MiB heap), 32 s
# in chunks of 48 (2 GiB)
WRITER_CHUNK = 48
# writer JVMs of one line at a time: a store's shutdown sleeps (3 s on 5.x, DLedger's 2 s more), during which
# another JVM's stores use the CPU (96 DLedger crash stores: 32 s one JVM after the other, 28 s two at a time)
WRITER_JVMS = 2


def write_stores(line: str, scenarios: list[dict], work: Path, timeout: float = 600,
                 threads: int = 1) -> dict[str, dict]:
    """Runs the broker's writer on ``scenarios`` (a JVM per :data:`WRITER_CHUNK` of them, :data:`WRITER_JVMS` at
    a time, ``threads`` scenarios at a time in each; ``timeout`` per JVM): name -> the writer's report."""
    def chunk_run(k: int) -> list[dict]:
        chunk = scenarios[k:k + WRITER_CHUNK]
        spec = work / f"scenarios-{line}-{k // WRITER_CHUNK}.json"
        spec.write_text(json.dumps(chunk))
        return _java(line, "Writer", spec, timeout, str(min(threads, len(chunk))))

    with ThreadPoolExecutor(WRITER_JVMS) as pool:
        return {r["name"]: r for rows in pool.map(chunk_run, range(0, len(scenarios), WRITER_CHUNK)) for r in rows}


@dataclass(frozen=True)
class Stores:
    """What a test module has the broker write (:func:`write_lines`): per line its scenarios, what they are (the
    progress line says), and how many one JVM writes at a time (None: all of a chunk). A module that holds one at
    module level (or uses a shared fixture whose stores conftest names) has them written beforehand, in the
    background, while earlier modules run (:func:`prewrite`)."""
    scenarios: dict[str, list[dict]]
    what: str
    threads: int | None = None
    timeout: float = 300   # per writer JVM

    def key(self) -> str:
        return self._key

    @functools.cached_property
    def _key(self) -> str:
        # once per Stores: the shared DLedger set's scenarios are some 180 MB of JSON (planted files), and conftest
        # asks each test item's sets (a second per call: minutes over the 200 items using that set)
        return hashlib.sha256(json.dumps([self.scenarios, self.threads], sort_keys=True).encode()).hexdigest()


def _write(stores: Stores, work: Path) -> tuple[dict[str, dict], float]:
    """Every line's scenarios written (a JVM per line, the lines in parallel): the run per scenario name
    (``line``, ``scenario`` with its ``dir``, ``written``: the writer's report) and the seconds it took."""
    build()
    started = time.monotonic()
    placed = {ln: [{**sc, "dir": str(work / sc["name"])} for sc in scs] for ln, scs in stores.scenarios.items()}
    with ThreadPoolExecutor(max(1, len(placed))) as pool:
        futures = {ln: pool.submit(write_stores, ln, scs, work, stores.timeout, stores.threads or len(scs))
                   for ln, scs in placed.items()}
        reports = {ln: f.result() for ln, f in futures.items()}
    return ({sc["name"]: {"line": ln, "scenario": sc,
                          "written": reports[ln].get(sc["name"], {"ok": False, "error": "no report"})}
             for ln, scs in placed.items() for sc in scs}, time.monotonic() - started)


# Stores.key -> the background writing of those stores (prewrite), one set after the other in the order the run
# reaches their modules: the writers' JVMs spend much of their time in the stores' shutdown sleeps, which the tests
# before them fill
_BEFOREHAND: dict[str, Future] = {}
_PREWRITER: ThreadPoolExecutor | None = None
_PREWRITTEN = {"sets": 0, "taken": 0, "waited": 0.0}   # for the run's summary line (prewrite_summary)


def prewrite(sets: list[tuple[Stores, Path]]) -> None:
    """Has the broker write each ``(stores, work)`` in the background, in that order, one set at a time, for
    :func:`write_lines` to take when a test asks for them (a set it reaches before its turn it writes itself)."""
    global _PREWRITER
    if _PREWRITER is None:
        _PREWRITER = ThreadPoolExecutor(1, thread_name_prefix="broker-prewrite")
    for stores, work in sets:
        if stores.key() not in _BEFOREHAND:
            _BEFOREHAND[stores.key()] = _PREWRITER.submit(_write, stores, work)
            _PREWRITTEN["sets"] += 1


def stop_prewriting() -> None:
    """Drops the sets not begun and waits for the one being written (the end of the session)."""
    if _PREWRITER is not None:
        _PREWRITER.shutdown(wait=True, cancel_futures=True)


def prewrite_summary() -> str:
    """How the background writing served the run: sets begun, taken by a test (and the seconds tests waited for
    them), the rest written for nothing (their modules' tests skipped) or written again by the test itself."""
    if not _PREWRITTEN["sets"]:
        return ""
    return (f"broker stores written beforehand: {_PREWRITTEN['taken']} of {_PREWRITTEN['sets']} sets taken, "
            f"tests waited {_PREWRITTEN['waited']:.0f} s for them")


def write_lines(request, stores: Stores, work: Path) -> dict[str, dict]:  # noqa: ANN001
    """Every line's scenarios of ``stores`` written by the broker into ``work`` (or taken from :func:`prewrite`,
    which wrote them beforehand into a folder of its own) while the suite's Spark session starts (the ``spark``
    fixture of ``request``): scenario name -> ``{"line", "scenario"`` (with its ``dir``), ``"written"`` (the
    writer's report)``}``.  Skips the test when the harness cannot be built."""
    import pytest
    beforehand = _BEFOREHAND.pop(stores.key(), None)
    if beforehand is not None and not beforehand.cancel():
        waited = time.monotonic()
        request.getfixturevalue("spark")
        try:
            runs, took = beforehand.result()
        except Exception as e:   # failed in the background: written again here
            print(f"\nwriting {stores.what} beforehand failed ({e}): writing them again")
        else:
            _PREWRITTEN["taken"] += 1
            _PREWRITTEN["waited"] += time.monotonic() - waited
            n = sum(map(len, stores.scenarios.values()))
            print(f"\nthe broker wrote {n} {stores.what} in {took:.1f} s beforehand (waited "
                  f"{time.monotonic() - waited:.1f} s)")
            return runs
    try:
        build()
    except HarnessUnavailable as e:
        pytest.skip(f"broker harness not available: {e}")
    with ThreadPoolExecutor(1) as pool:
        written = pool.submit(_write, stores, work)
        request.getfixturevalue("spark")
        runs, took = written.result()
    print(f"\nthe broker wrote {sum(map(len, stores.scenarios.values()))} {stores.what} in {took:.1f} s")
    return runs


def written_once(request, runs: dict[str, dict], stores: Stores, *, then=None, every: bool = False):  # noqa: ANN001
    """The fixture body of a broker test module whose stores the broker writes once a pytest session: on the first
    call every scenario written (:func:`write_lines`, into a folder named after the module) into ``runs``, and
    ``then(run)`` called on each one written (our rebuild, verify: its results kept in the run); then the run of the
    test's ``name`` parameter, or with ``every`` all of them.  Fails the test, naming the scenarios, when the broker's
    writer failed on one it gets."""
    import pytest
    if not runs:
        work = request.getfixturevalue("tmp_path_factory").mktemp(request.module.__name__.removeprefix("test_"))
        runs.update(write_lines(request, stores, work))
        for r in runs.values():
            if then is not None and r["written"].get("ok"):
                then(r)
    names = list(runs) if every else [request.node.callspec.params["name"]]
    failed = {n: runs[n]["written"].get("error") for n in names if not runs[n]["written"].get("ok")}
    if failed:
        pytest.fail(f"the broker's writer failed on {', '.join(failed)}: {'; '.join(map(str, failed.values()))}")
    return runs if every else runs[names[0]]


def restart_run(request, runs: dict[str, dict], stores: Stores) -> dict:  # noqa: ANN001
    """The fixture body of a restart module: every scenario written and checked once (:func:`written_once` with
    :func:`restart_checked`: the broker's restart, our ``verify`` of ``before/``), then the run of the test's
    ``name`` parameter."""
    written_once(request, runs, stores, every=True, then=restart_checked)
    return runs[request.node.callspec.params["name"]]


def cq_units(path: Path) -> list[tuple[int, int]]:
    """(commitlog offset, size) of every 20-byte unit of a consume queue file, zeros included (size signed)."""
    data = path.read_bytes()
    return [(int.from_bytes(data[i:i + 8], "big"), int.from_bytes(data[i + 8:i + 12], "big", signed=True))
            for i in range(0, len(data) - 19, 20)]


def read_stores(line: str, requests: list[dict], work: Path, timeout: float = 600) -> list[list[dict]]:
    """The broker's answers on each request's store (one JVM; stores are opened in place: pass
    copies). A request: ``store``, ``config``, ``queries`` [(topic, key)], ``queues`` (bool),
    ``commitlog`` (bool: min/max offsets), ``cleanup`` ({clockMs, mtimes, cleanImmediately}). Returns
    the answer lines per request."""
    spec = work / f"read-{line}.json"
    spec.write_text(json.dumps([{**r, "store": str(r["store"]),
                                 "queries": [{"topic": t, "key": k} for t, k in r.get("queries", ())]}
                                for r in requests]))
    answers: list[list[dict]] = [[] for _ in requests]
    for row in _java(line, "Reader", spec, timeout):
        answers[row.pop("request")].append(row)
    return answers


def expected_lookup(answer: dict) -> list[int]:
    """What the client keeps of a Reader ``query`` answer (``queryMessage``'s offsets): the key filter,
    and the unique-key matches of the asked topic (the project's lookup answers both kinds at once)."""
    by_uniq = {u["offset"] for u in answer["byUniqKey"] if u["topic"] == answer["topic"]}
    return sorted(set(answer["byKey"]) | by_uniq)


def sparse_copy(src: str, dst: str) -> str:
    """``shutil.copy2`` that leaves runs of zeros as holes (``copytree(..., copy_function=sparse_copy)``): a
    broker's preallocated files (a DLedger index file is 160 MiB) cost no disk in the copies a test makes."""
    step = 1 << 20
    with open(src, "rb") as f, open(dst, "wb") as g:
        while chunk := f.read(step):
            if chunk.count(0) == len(chunk):
                g.seek(len(chunk), os.SEEK_CUR)
            else:
                g.write(chunk)
        g.truncate()
    shutil.copystat(src, dst)
    return dst


def copy_store(src: Path, dst: Path) -> Path:
    """A copy of a store folder with :func:`sparse_copy` (holes for runs of zeros)."""
    return Path(shutil.copytree(src, dst, copy_function=sparse_copy))


def broker_store(d: Path, dst: Path, areas: tuple[str, ...] = ("consumequeue", "index")) -> Path:
    """A copy (:func:`copy_store`) of the scenario's ``d/store`` with the broker's own files of ``areas``
    from ``d/expected``: the store as the broker left it after its rebuild."""
    store = copy_store(d / "store", dst)
    for sub in areas:
        copy_store(d / "expected" / sub, store / sub)
    return store


def aged_store_with_tables(d: Path, store: Path, old: int, clock: int, broker_version: str) -> dict:
    """The cleanup tests' case in ``d/case``: ``store``'s commitlog segments before the ``old``-th aged 100
    hours and the others one hour (their mtimes as of ``clock`` ms), a broker.conf with fileReservedTime=48
    and deleteWhen=04, the store's tables published (``tables --store``) and a copy of the store for the
    broker's own cleanup; returns ``segments``, ``mtimes``, ``conf``, ``conf_file``, ``tables`` and ``copy``."""
    hour = 3_600_000
    segs = sorted(p.name for p in (store / "commitlog").iterdir())
    mtimes = {n: clock - (100 if i < old else 1) * hour for i, n in enumerate(segs)}
    for n, t in mtimes.items():
        os.utime(store / "commitlog" / n, (t / 1000, t / 1000))
    conf = {**read_conf(d / "broker.conf"), "fileReservedTime": "48", "deleteWhen": "04"}
    conf_file = d / "case" / "broker.conf"
    conf_file.write_text("".join(f"{k}={v}\n" for k, v in sorted(conf.items())))
    tables = d / "case" / "tables"
    code, _out, err = cli(["tables", "--store", str(store), "--tables", str(tables), "--config", str(conf_file),
                           "--broker-version", broker_version, "--split-size", "4k"])
    assert code == 0, f"tables --store failed: {err[-2000:]}"
    copy = d / "case" / "broker"
    shutil.copytree(store, copy)
    return {"segments": segs, "mtimes": mtimes, "conf": conf, "conf_file": conf_file, "tables": tables,
            "copy": copy}


def read_conf(path: Path) -> dict[str, str]:
    """The ``key=value`` lines the writer wrote (plain: no escapes, no continuations)."""
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def same_bytes(expected: bytes, ours: bytes, what: str) -> None:
    """Fails naming the first byte where our file differs from the broker's."""
    if expected == ours:
        return
    n = min(len(expected), len(ours))
    first = next((i for i in range(n) if expected[i] != ours[i]), n)
    raise AssertionError(f"{what} differs at byte {first} (sizes {len(ours)} vs broker's {len(expected)}): "
                         f"ours {ours[first:first + 8].hex()} broker {expected[first:first + 8].hex()}")


def restart_variants(scenarios: list[dict], crash: str | tuple[str, ...]) -> list[dict]:
    """The restart knobs on each scenario: ``<name>-restart`` with the record six puts before the end
    damaged (``damageMessage``); those whose name ends with ``crash`` also as ``<name>-crash``, the same
    with an ``abort`` file (an abnormal recovery)."""
    out = []
    for sc in scenarios:
        puts = sum(1 for m in sc["messages"] if "sleepMs" not in m)
        damaged = {**sc, "name": f"{sc['name']}-restart", "damageMessage": puts - 6}
        out.append(damaged)
        if sc["name"].endswith(crash):
            out.append({**damaged, "name": f"{sc['name']}-crash", "abort": True})
    return out


def cli(argv: list[str]) -> tuple[int, str, str]:
    """``python -m pipelines ARGV`` in this process (on the test session's Spark context): exit code,
    what it printed on stdout and on stderr."""
    import contextlib
    import io

    from pipelines.cli import main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def cli_ok(argv: list[str]) -> tuple[int, str]:
    """:func:`cli` for a command that must answer (exit 0 or 1, no traceback): exit code and stdout."""
    code, out, err = cli(argv)
    assert "Traceback" not in err and code in (0, 1), err[-3000:]
    return code, out


def verify_json(store: Path, conf: Path, broker_version: str) -> dict:
    """``verify --json`` on ``store`` with ``conf`` at 4 KiB splits: ``{"code", "stderr"`` (its last 3000
    characters), ``"report"`` (None where it printed none)``}``; a traceback fails the test."""
    import json
    code, out, err = cli(["verify", "--store", str(store), "--config", str(conf), "--broker-version", broker_version,
                          "--split-size", "4k", "--json"])
    assert "Traceback" not in err, err[-3000:]
    return {"code": code, "stderr": err[-3000:], "report": json.loads(out) if out.strip() else None}


def verified(store: Path, conf: Path, broker_version: str) -> dict:
    """:func:`verify_json`'s report of a ``verify`` that must answer (exit 0 or 1)."""
    v = verify_json(store, conf, broker_version)
    assert v["code"] in (0, 1) and v["report"] is not None, v["stderr"]
    return v["report"]


def rebuild(d: Path, broker_version: str, *extra: str) -> dict:
    """``rebuild`` of ``d/store`` with ``d/broker.conf`` into ``d/ours`` at 4 KiB splits (so that most
    splits start inside a record), without tables unless ``extra`` says otherwise: ``{"code", "stderr"}``."""
    tables = [] if "--tables" in extra else ["--no-tables"]
    code, _, err = cli(["rebuild", "--store", str(d / "store"), "--out", str(d / "ours"), "--config",
                        str(d / "broker.conf"), "--broker-version", broker_version, "--split-size", "4k",
                        *tables, *extra])
    return {"code": code, "stderr": err.strip()}


def rebuilt_dir(run: dict) -> Path:
    """The scenario's folder of a harness run whose :func:`rebuild` (``run["rebuild"]``) exited 0; else the test
    fails with the rebuild's error lines."""
    if run["rebuild"]["code"] != 0:
        import pytest
        stderr = run["rebuild"]["stderr"]
        why = [ln for ln in stderr.splitlines() if ln.startswith("error:")] or [stderr[-1000:]]
        pytest.fail(f"rebuild exited {run['rebuild']['code']}: {' | '.join(why)}")
    return Path(run["scenario"]["dir"])


def rebuild_as_restart(d: Path, broker_version: str) -> dict:
    """``rebuild --as-restart`` on ``d/before`` (the store as the broker's restart found it) into ``d/ours``,
    at 4 KiB splits, without tables: ``{"code", "stderr"}``."""
    code, _, err = cli(["rebuild", "--store", str(d / "before"), "--out", str(d / "ours"), "--as-restart",
                        "--config", str(d / "broker.conf"), "--broker-version", broker_version,
                        "--split-size", "4k", "--no-tables", "--json"])
    return {"code": code, "stderr": err.strip()}


def restart_checked(run: dict) -> None:
    """A ``then`` step of :func:`written_once` for a restarted scenario: with its queues kept (``keepQueues``: the store
    as the restart found it) our ``verify`` of ``before/`` (``run["verify"]``, :func:`verify_json`), else our
    ``rebuild --as-restart`` of it (``run["rebuild"]``)."""
    d, version = Path(run["scenario"]["dir"]), BROKER_VERSION_ARG[run["line"]]
    if run["scenario"].get("keepQueues"):
        run["verify"] = verify_json(d / "before", d / "broker.conf", version)
    else:
        run["rebuild"] = rebuild_as_restart(d, version)


def restart_files_are_the_broker_s(run: dict, areas: tuple[str, ...] = ("consumequeue",)) -> None:
    """Our ``rebuild --as-restart`` of a restarted scenario (``run["rebuild"]``) exited 0 and wrote the broker's
    restart's files (``<dir>/expected``) into ``<dir>/ours`` byte for byte: each of ``areas`` (the same files, at
    least one) and ``index/`` (the same number of files, at least one, in name order: named by creation time)."""
    import pytest
    reb = run["rebuild"]
    if reb["code"] != 0:
        why = [ln for ln in reb["stderr"].splitlines() if ln.startswith("error:")] or [reb["stderr"][-1000:]]
        pytest.fail(f"rebuild --as-restart exited {reb['code']}: {' | '.join(why)}")
    d = Path(run["scenario"]["dir"])
    for area in areas:
        exp, ours = d / "expected" / area, d / "ours" / area
        names = sorted(str(p.relative_to(exp)) for p in exp.rglob("*") if p.is_file())
        assert names and names == sorted(str(p.relative_to(ours)) for p in ours.rglob("*") if p.is_file()), area
        for rel in names:
            same_bytes((exp / rel).read_bytes(), (ours / rel).read_bytes(), f"{area}/{rel}")
    exp_idx, our_idx = sorted((d / "expected" / "index").iterdir()), sorted((d / "ours" / "index").iterdir())
    assert exp_idx and len(our_idx) == len(exp_idx), (len(exp_idx), len(our_idx))
    for i, (e, o) in enumerate(zip(exp_idx, our_idx)):
        same_bytes(e.read_bytes(), o.read_bytes(), f"index file #{i}")


def restart_rebuilt_and_verified(run: dict) -> None:
    """A ``then`` step of :func:`written_once` for a restarted scenario: our ``rebuild --as-restart`` of ``before/``
    (``run["rebuild"]``) and our ``verify`` of it (``run["verify"]``, :func:`verify_json`)."""
    d, version = Path(run["scenario"]["dir"]), BROKER_VERSION_ARG[run["line"]]
    run["rebuild"] = rebuild_as_restart(d, version)
    run["verify"] = verify_json(d / "before", d / "broker.conf", version)


def check_cut_at_damaged_record(run: dict) -> None:
    """The harness itself on a restarted scenario (``write_lines``'s entry): the broker's restart ended the
    commitlog at the damaged record, which is not the last one (a record or a segment's blank follows it:
    a plain rebuild, whose reput checks no CRC, would dispatch past it), and ``before/`` has an ``abort``
    file exactly when the scenario asked for one."""
    w, sc = run["written"], run["scenario"]
    assert w["maxPhyOffset"] == w["damagedRecord"], w
    before = Path(sc["dir"]) / "before"
    assert (before / "abort").is_file() == bool(sc.get("abort"))
    size = int(sc["config"]["mappedFileSizeCommitLog"])
    at = w["damagedRecord"]
    data = (before / "commitlog" / f"{at - at % size:020d}").read_bytes()
    total = int.from_bytes(data[at % size:at % size + 4], "big")
    assert data[at % size + total:at % size + total + 8] != bytes(8), "nothing follows the damaged record"
