"""Benchmark: ``python -m pipelines.bench [--size-gib 4[,16]] [--dir bench-data] [--split-size 128m]``.

In one run, for each store size, over the same segment files (warm page cache):

0. the bar: the broker's own rebuild of the same commitlog (:mod:`pipelines.bench_broker`: RocketMQ's
   published store code, load + dispatch, single-threaded), unless entered with ``--broker-seconds``;
1. a plain sequential read of the segments (the floor any rebuild pays);
2. the kernel alone: the sequential reput walk of :mod:`store_format` in this process on one core,
   a first pass (fresh scratch memory, kernels loaded from their cache) and a steady one;
3. the rebuild through ``python -m pipelines rebuild --no-tables`` in a fresh process on
   ``local[2]`` (process start to exit: JVM and session start-up included) and its time once the
   session is up; the same on ``local[1]`` for the speed-up from one core to two;
4. the rebuild with the Delta tables (the default job), once per table writer: delta-rs, and
   delta-spark when its jars are cached (``make delta-jars``), side by side; and ``--engine local``
   (the same tasks, no JVM);
5. peak resident memory of each run's driver, JVM and Python workers, sampled from ``/proc``:
   anonymous memory and mapped file pages (the commitlog the walk maps, page cache) apart.

Figures are MB/s (10^6 bytes) and records/s, each one's ratio to the plain read, and the ratio of
the broker's rebuild of the same data to each of ours: above 1 is faster than the broker.  With
several sizes the runs with the tables are made at the first size only, and a last block gives each
size's end-to-end seconds against the broker's, and the largest process kind's peak memory.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time

from store_format.config import BrokerConfig
from store_format.store import open_store

from .bench_broker import BROKER_LINE, BrokerTiming, time_broker_rebuild

__all__ = ["main"]


def _ensure_store(root: str, size_gib: float) -> BrokerConfig:
    config = BrokerConfig()
    target = int(size_gib * (1 << 30))
    seg_dir = os.path.join(root, "commitlog")
    have = sum(os.path.getsize(os.path.join(seg_dir, f)) for f in os.listdir(seg_dir)) if os.path.isdir(seg_dir) else 0
    if have >= target and have - target < config.mappedFileSizeCommitLog:
        return config
    from store_format.sample import generate_sample_store
    shutil.rmtree(root, ignore_errors=True)
    per_message = 1024 + 250  # 1 KiB body plus header, topic and properties
    messages = int(target * 0.995) // per_message
    print(f"generating {size_gib:g} GiB sample commitlog in {root} ({messages:,} messages) ...", flush=True)
    t = time.perf_counter()
    generate_sample_store(root, config, messages=messages, topics=16, queues=8, body_size=1024,
                          keys_per_message=(1, 3), features=False, seed=7)
    print(f"  written in {time.perf_counter() - t:.1f}s", flush=True)
    return config


def _plain_read(paths: list[str], chunk: int = 16 << 20) -> tuple[int, float]:
    total = 0
    t = time.perf_counter()
    buf = bytearray(chunk)
    for p in paths:
        with open(p, "rb", buffering=0) as f:
            while True:
                n = f.readinto(buf)
                if not n:
                    break
                total += n
    return total, time.perf_counter() - t


def _kernel_walk(root: str, config: BrokerConfig) -> tuple[int, float, float]:
    """Records walked, seconds of a first pass and of a second (steady) pass, one core."""
    from store_format.commitlog import Scratch, use_system_allocator
    from store_format.reput import walk_store
    use_system_allocator()
    store = open_store(root, config)
    scratch = Scratch()  # the second pass reuses the memory the first one touched
    times = []
    records = 0
    for _ in range(2):
        records = 0
        t = time.perf_counter()
        for _seg, res in walk_store(store, config, scratch=scratch):
            records += len(res.rec)
        times.append(time.perf_counter() - t)
    return records, times[0], times[1]


def _kernel_in_memory(path: str, config: BrokerConfig, window: int = 256 << 20) -> tuple[int, float]:
    """Records and best seconds of three walks of the first ``window`` bytes of a segment held in
    memory: the kernel alone, without mapping or reading files."""
    import numpy as np

    from store_format import commitlog as cl
    buf = np.fromfile(path, dtype=np.uint8, count=window)
    scratch = cl.Scratch()
    best, n = float("inf"), 0
    for _ in range(3):
        t = time.perf_counter()
        res = cl.walk_range(lambda pos, length: buf[pos:pos + length], 0, len(buf), cl.WalkState(0, 0, 0, 1 << 62),
                            len(buf) - (2 << 20), config, window=len(buf), scratch=scratch)
        best = min(best, time.perf_counter() - t)
        n = len(res.rec)
    return n, best


class _RssSampler(threading.Thread):
    """Peak resident memory of a process tree, by kind (driver, JVM, Python workers)."""

    def __init__(self, pid: int, interval: float = 0.05) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.interval = interval
        self.peak = {"driver": 0, "jvm": 0, "python_workers": 0, "total": 0, "driver_anon": 0, "jvm_anon": 0,
                     "python_workers_anon": 0, "total_anon": 0}
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            usage = {"driver": 0, "jvm": 0, "python_workers": 0}
            anon = {"driver": 0, "jvm": 0, "python_workers": 0}
            for pid, kind in self._tree():
                rss, rss_anon = self._rss(pid)
                usage[kind] += rss
                anon[kind] += rss_anon
            for k, v in usage.items():
                self.peak[k] = max(self.peak[k], v)
                self.peak[k + "_anon"] = max(self.peak[k + "_anon"], anon[k])
            self.peak["total"] = max(self.peak["total"], sum(usage.values()))
            self.peak["total_anon"] = max(self.peak["total_anon"], sum(anon.values()))
            time.sleep(self.interval)

    def stop(self) -> None:
        self._halt.set()
        self.join()

    def _tree(self):
        children: dict[int, list[int]] = {}
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    with open(f"/proc/{d}/stat") as f:
                        ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                    children.setdefault(ppid, []).append(int(d))
                except OSError:
                    pass
        stack = [(self.pid, "driver")]
        while stack:
            pid, kind = stack.pop()
            yield pid, kind
            for c in children.get(pid, []):
                try:
                    with open(f"/proc/{c}/comm") as f:
                        comm = f.read().strip()
                    with open(f"/proc/{c}/cmdline", "rb") as f:
                        cmdline = f.read()
                except OSError:
                    continue
                # Python workers: the JVM's children, and the spare daemon the driver starts for a local
                # session (pipelines.sparkdaemon) with the workers it forks
                if comm == "java":
                    ckind = "jvm"
                elif kind in ("jvm", "python_workers") or b"pipelines.sparkdaemon" in cmdline:
                    ckind = "python_workers"
                else:
                    ckind = kind
                stack.append((c, ckind))

    @staticmethod
    def _rss(pid: int) -> tuple[int, int]:
        """(VmRSS, RssAnon) in bytes: all resident pages, and those that are not file pages."""
        rss = anon = 0
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        rss = int(line.split()[1]) * 1024
                    elif line.startswith("RssAnon:"):
                        anon = int(line.split()[1]) * 1024
        except OSError:
            pass
        return rss, anon


def _run_rebuild(root: str, out: str, split_size: str | None, master: str | None, tables: bool,
                 engine: str = "spark", processes: int | None = None, table_writer: str | None = None) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "pipelines", "rebuild", "--store", root, "--out", out, "--json", "--engine", engine]
    if not tables:
        cmd.append("--no-tables")
    if table_writer:
        cmd += ["--table-writer", table_writer]
    if split_size:
        cmd += ["--split-size", split_size]
    if master:
        cmd += ["--master", master]
    if processes:
        cmd += ["--processes", str(processes)]
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sampler = _RssSampler(proc.pid)
    sampler.start()
    stdout, stderr = proc.communicate()
    wall = time.perf_counter() - t
    sampler.stop()
    if proc.returncode != 0:
        raise SystemExit(f"rebuild failed ({proc.returncode}):\n{stderr[-4000:]}")
    summary = json.loads(stdout)
    return {"wall": wall, "summary": summary, "peak_rss": sampler.peak}


def _work(run: dict) -> float:
    """Seconds of the scan and build stages: the work itself, without start-up."""
    t = run["summary"]["timings"]
    return t.get("scan", 0.0) + t.get("build", 0.0)


def _mib(v: int) -> str:
    return f"{v / 2**20:,.0f}"


def _settings(config: BrokerConfig) -> dict[str, str]:
    """The bench store's file sizes as broker.conf settings, for the broker's own rebuild."""
    return {"mappedFileSizeCommitLog": str(config.mappedFileSizeCommitLog),
            "mappedFileSizeConsumeQueue": str(config.mappedFileSizeConsumeQueue),
            "maxHashSlotNum": str(config.maxHashSlotNum), "maxIndexNum": str(config.maxIndexNum)}


def _sizes(text: str) -> list[float]:
    try:
        sizes = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of sizes in GiB: {text!r}") from None
    if not sizes or min(sizes) <= 0:
        raise argparse.ArgumentTypeError(f"sizes must be positive: {text!r}")
    return sizes


def _measure(root: str, out: str, size_gib: float, args: argparse.Namespace, with_tables: bool) -> dict:
    """Every figure of one store size (module docstring), as the report's dict."""
    config = _ensure_store(root, size_gib)
    store = open_store(root, config)
    paths = [s.path for s in store.segments]
    _plain_read(paths)  # warm the page cache: every measurement below reads warm data
    size, t_read = _plain_read(paths)
    records, t_kernel_first, t_kernel = _kernel_walk(root, config)
    mem_records, t_mem = _kernel_in_memory(paths[0], config)
    if args.broker_seconds is not None:
        broker = BrokerTiming(args.broker_line, seconds=args.broker_seconds, why="entered (--broker-seconds)")
    else:
        print(f"timing the broker's own rebuild ({args.broker_line}) ...", flush=True)
        broker = time_broker_rebuild(root, os.path.join(os.path.dirname(root), "broker-scratch"), _settings(config),
                                     args.broker_line)
        if broker.seconds is None:
            print(f"  broker not measured: {broker.why}", flush=True)
    spark2 = _run_rebuild(root, out, args.split_size, "local[2]", tables=False)
    spark1 = _run_rebuild(root, out, args.split_size, "local[1]", tables=False)
    local = _run_rebuild(root, out, args.split_size, None, tables=False, engine="local", processes=2)
    local1 = _run_rebuild(root, out, args.split_size, None, tables=False, engine="local", processes=1)
    from .delta_jars import cached_jars
    writers = [] if not with_tables else ["delta-rs"] + (["delta-spark"] if cached_jars() else [])
    by_writer = {w: _run_rebuild(root, out, args.split_size, "local[2]", tables=True, table_writer=w) for w in writers}
    tables = by_writer.get("delta-rs")

    def after_session(run: dict) -> float:
        t = run["summary"]["timings"]
        return run["summary"]["seconds"] - t.get("plan", 0.0) - t.get("spark session", 0.0)

    rows: list[tuple[str, float, int | None, bool, int]] = [("plain sequential read", t_read, None, False, size),
            ("kernel walk, 1 core, first pass", t_kernel_first, records, False, size),
            ("kernel walk, 1 core, steady", t_kernel, records, False, size),
            ("kernel, 1 core, 256 MB of a segment in memory", t_mem, mem_records, False, 256 << 20),
            ("Spark local[2], end to end, no tables", spark2["wall"], records, True, size),
            ("Spark local[2], after the session is up", after_session(spark2), records, True, size),
            ("Spark local[1], after the session is up", after_session(spark1), records, False, size),
            ("--engine local (2 processes, no JVM)", local["wall"], records, True, size),
            ("--engine local, scan + build, 2 processes", _work(local), records, False, size),
            ("--engine local, scan + build, 1 process", _work(local1), records, False, size)]
    if broker.seconds is not None:
        rows.insert(0, (f"broker {broker.line}, load + dispatch", broker.seconds, records, False, size))
    for w, wrun in by_writer.items():
        rows.append((f"Spark local[2] + tables ({w}), end to end", wrun["wall"], records, False, size))
    bar = broker.seconds
    return {"size_gib": size_gib, "bytes": size, "segments": len(paths), "records": records, "cores": os.cpu_count(),
            "broker": {"line": broker.line, "seconds": bar, "load_seconds": broker.load_seconds,
                       "dispatch_seconds": broker.dispatch_seconds, "note": broker.why},
            "measurements": [{"what": w, "seconds": round(s, 3), "mb_per_s": round(nbytes / 1e6 / s, 1),
                              "records_per_s": round(r / s) if r else None,
                              "ratio_to_plain_read": round(t_read / s * nbytes / size, 3),
                              "broker_ratio": round(bar / s, 2) if vs_broker and bar else None}
                             for w, s, r, vs_broker, nbytes in rows],
            "speedup_1_to_2_cores": round(after_session(spark1) / max(after_session(spark2), 1e-9), 2),
            "steady_speedup_1_to_2_processes": round(_work(local1) / max(_work(local), 1e-9), 2),
            "seconds_per_gib": {"local[2] end to end": round(spark2["wall"] / (size / 2**30), 3),
                                "local[1] after the session is up": round(after_session(spark1) / (size / 2**30), 3)},
            "peak_rss_bytes": {"spark": spark2["peak_rss"], "local[1]": spark1["peak_rss"],
                               "tables": tables["peak_rss"] if tables else None, "local": local["peak_rss"]},
            "table_writers": {w: {"seconds": round(run["wall"], 3), "tables_seconds":
                                  round(run["summary"]["timings"].get("tables", 0.0), 3),
                                  "peak_rss_bytes": run["peak_rss"]["total"],
                                  "peak_rss_jvm_bytes": run["peak_rss"]["jvm"]} for w, run in by_writer.items()},
            "stage_timings": {"spark": spark2["summary"]["timings"], "local[1]": spark1["summary"]["timings"],
                              **{f"tables ({w})": r["summary"]["timings"] for w, r in by_writer.items()}},
            "with_tables": bool(by_writer), "delta_spark_measured": "delta-spark" in by_writer}


def _print(report: dict) -> None:
    mb = report["bytes"] / 1e6
    b = report["broker"]
    bar = (f"broker's own rebuild ({b['line']}): {b['seconds']:.2f} s "
           + (f"(load {b['load_seconds']:.2f} s + dispatch {b['dispatch_seconds']:.2f} s, measured in this run)"
              if b["load_seconds"] is not None else f"({b['note']})")) if b["seconds"] else f"broker: {b['note']}"
    print(f"\ncommitlog: {report['size_gib']:g} GiB, {mb:,.1f} MB in {report['segments']} segments, "
          f"{report['records']:,} records, {report['cores']} cores, warm page cache; {bar}")
    print(f"{'measurement':45s} {'seconds':>8s} {'MB/s':>8s} {'records/s':>11s} {'vs read':>8s} {'vs broker':>9s}")
    for m in report["measurements"]:
        rps = f"{m['records_per_s']:,}" if m["records_per_s"] else "-"
        vb = f"{m['broker_ratio']:.2f}x" if m["broker_ratio"] else "-"
        print(f"{m['what']:45s} {m['seconds']:8.2f} {m['mb_per_s']:8,.0f} {rps:>11s} {m['ratio_to_plain_read']:8.3f} "
              f"{vb:>9s}")
    print(f"speed-up from local[1] to local[2] once the session is up: {report['speedup_1_to_2_cores']:.2f}x; "
          f"steady state (scan + build, 1 to 2 processes, no JVM): {report['steady_speedup_1_to_2_processes']:.2f}x")
    per = report["seconds_per_gib"]
    print(f"seconds per GiB: {per['local[2] end to end']:.3f} (local[2], end to end), "
          f"{per['local[1] after the session is up']:.3f} per core once the session is up; "
          f"1 TiB on 32 such cores at that rate: {per['local[1] after the session is up'] * 1024 / 32:,.0f} s")
    writers = report["table_writers"]
    if writers:
        print(f"\n{'default job (rebuild + tables)':34s} " + " ".join(f"{w:>14s}" for w in writers))
        for label, key, fmt in (("end to end, seconds", "seconds", "{:14.2f}"),
                                ("tables stage, seconds", "tables_seconds", "{:14.2f}"),
                                ("peak RSS, MiB (all processes)", "peak_rss_bytes", "{:>14s}"),
                                ("peak RSS of the JVM, MiB", "peak_rss_jvm_bytes", "{:>14s}")):
            cells = [writers[w][key] for w in writers]
            print(f"{label:34s} " + " ".join(fmt.format(_mib(c) if key.startswith("peak") else c) for c in cells))
        if not report["delta_spark_measured"]:
            print("delta-spark: no cached jars (make delta-jars), not measured")
    for name, pk in report["peak_rss_bytes"].items():
        if pk is None:
            continue
        print(f"peak RSS {name}: driver {_mib(pk['driver'])} MiB ({_mib(pk['driver_anon'])} anon), "
              f"JVM {_mib(pk['jvm'])} MiB ({_mib(pk['jvm_anon'])} anon), Python workers "
              f"{_mib(pk['python_workers'])} MiB ({_mib(pk['python_workers_anon'])} anon); together "
              f"{_mib(pk['total'])} MiB ({_mib(pk['total_anon'])} anon; the rest is mapped commitlog pages)")
    for name, timings in report["stage_timings"].items():
        print(f"stages {name}: " + ", ".join(f"{k} {v:.2f}s" for k, v in timings.items()))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m pipelines.bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--size-gib", type=_sizes, default=[4.0],
                   help="commitlog size(s) to generate and measure, comma-separated, e.g. 4,16 (default 4); "
                        "the runs with the tables only at the first size")
    p.add_argument("--dir", default="bench-data",
                   help="where the stores and outputs go (default bench-data/: store/ for one size, store-<N>g/ "
                        "for each of several)")
    p.add_argument("--split-size", default=None, help="scan split size, e.g. 128m (default: the job's default)")
    p.add_argument("--broker-line", default=BROKER_LINE, choices=["4.9.8", "5.3.3", "5.5.1"],
                   help=f"the RocketMQ line whose own rebuild is timed as the bar (default {BROKER_LINE})")
    p.add_argument("--broker-seconds", type=float, default=None,
                   help="enter the broker's load + dispatch seconds instead of measuring them (default: measured "
                        "in this run with the broker harness, make harness)")
    p.add_argument("--no-tables", action="store_true", help="skip the runs with the Delta tables")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = p.parse_args(argv)
    reports = []
    for i, size_gib in enumerate(args.size_gib):
        name = "store" if len(args.size_gib) == 1 else f"store-{size_gib:g}g"
        root = os.path.abspath(os.path.join(args.dir, name))
        out = os.path.abspath(os.path.join(args.dir, "out"))
        reports.append(_measure(root, out, size_gib, args, with_tables=i == 0 and not args.no_tables))
        if not args.json:
            _print(reports[-1])
    if args.json:
        print(json.dumps(reports[0] if len(reports) == 1 else reports, indent=2))
    elif len(reports) > 1:
        print("\ngrowth, no tables (Spark local[2], end to end):")
        for line in _growth(reports):
            print("  " + line)
    return 0


def _growth(reports: list[dict]) -> list[str]:
    """One line per size: our end-to-end seconds, the broker's, the ratio, the largest process kind."""
    parts = []
    for r in reports:
        ours = next(m["seconds"] for m in r["measurements"] if m["what"].startswith("Spark local[2], end to end"))
        bar = r["broker"]["seconds"]
        biggest = max(r["peak_rss_bytes"]["spark"][k] for k in ("driver", "jvm", "python_workers"))
        parts.append(f"{r['size_gib']:g} GiB: ours {ours:.2f} s, broker " + (f"{bar:.2f} s ({bar / ours:.2f}x)"
                     if bar else "not measured") + f", largest process kind {_mib(biggest)} MiB")
    return parts


if __name__ == "__main__":
    sys.exit(main())
