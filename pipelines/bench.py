"""Benchmark: ``python -m pipelines.bench [--size-gib 4] [--dir bench-data] [--split-size 128m]``.

In one run, over the same segment files (warm page cache):

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
the broker's own restart rebuild of the same data (``--broker-seconds``, measured here: 5-6 s of
load + dispatch for the 4 GiB store) to each rebuild: above 1 is faster than the broker.
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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m pipelines.bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--size-gib", type=float, default=4.0, help="commitlog size to generate (default 4)")
    p.add_argument("--dir", default="bench-data", help="where the store and outputs go (default bench-data/)")
    p.add_argument("--split-size", default=None, help="scan split size, e.g. 128m (default: the job's default)")
    p.add_argument("--broker-seconds", type=float, default=5.5,
                   help="the broker's own load + dispatch time for this data (default 5.5: 5-6 s measured for 4 GiB)")
    p.add_argument("--no-tables", action="store_true", help="skip the run with the Delta tables")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = p.parse_args(argv)
    root = os.path.abspath(os.path.join(args.dir, "store"))
    out = os.path.abspath(os.path.join(args.dir, "out"))
    config = _ensure_store(root, args.size_gib)
    store = open_store(root, config)
    paths = [s.path for s in store.segments]
    _plain_read(paths)  # warm the page cache: every measurement below reads warm data
    size, t_read = _plain_read(paths)
    records, t_kernel_first, t_kernel = _kernel_walk(root, config)
    mem_records, t_mem = _kernel_in_memory(paths[0], config)
    spark2 = _run_rebuild(root, out, args.split_size, "local[2]", tables=False)
    spark1 = _run_rebuild(root, out, args.split_size, "local[1]", tables=False)
    local = _run_rebuild(root, out, args.split_size, None, tables=False, engine="local", processes=2)
    local1 = _run_rebuild(root, out, args.split_size, None, tables=False, engine="local", processes=1)
    from .delta_jars import cached_jars
    writers = [] if args.no_tables else ["delta-rs"] + (["delta-spark"] if cached_jars() else [])
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
    for w, wrun in by_writer.items():
        rows.append((f"Spark local[2] + tables ({w}), end to end", wrun["wall"], records, False, size))
    mb = size / 1e6
    speedup = after_session(spark1) / max(after_session(spark2), 1e-9)
    steady = _work(local1) / max(_work(local), 1e-9)
    report = {"bytes": size, "segments": len(paths), "records": records, "cores": os.cpu_count(),
              "broker_seconds": args.broker_seconds,
              "measurements": [{"what": w, "seconds": round(s, 3), "mb_per_s": round(nbytes / 1e6 / s, 1),
                                "records_per_s": round(r / s) if r else None,
                                "ratio_to_plain_read": round(t_read / s * nbytes / size, 3),
                                "broker_ratio": round(args.broker_seconds / s, 2) if vs_broker else None}
                               for w, s, r, vs_broker, nbytes in rows],
              "speedup_1_to_2_cores": round(speedup, 2), "steady_speedup_1_to_2_processes": round(steady, 2),
              "peak_rss_bytes": {"spark": spark2["peak_rss"], "tables": tables["peak_rss"] if tables else None,
                                 "local": local["peak_rss"]},
              "table_writers": {w: {"seconds": round(run["wall"], 3), "tables_seconds":
                                    round(run["summary"]["timings"].get("tables", 0.0), 3),
                                    "peak_rss_bytes": run["peak_rss"]["total"],
                                    "peak_rss_jvm_bytes": run["peak_rss"]["jvm"]} for w, run in by_writer.items()},
              "stage_timings": {"spark": spark2["summary"]["timings"], "local[1]": spark1["summary"]["timings"],
                                "tables": tables["summary"]["timings"] if tables else None}}
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"\ncommitlog: {mb:,.1f} MB in {len(paths)} segments, {records:,} records, {os.cpu_count()} cores, "
          f"warm page cache; broker's own rebuild: {args.broker_seconds:g} s")
    print(f"{'measurement':45s} {'seconds':>8s} {'MB/s':>8s} {'records/s':>11s} {'vs read':>8s} {'vs broker':>9s}")
    for m in report["measurements"]:
        rps = f"{m['records_per_s']:,}" if m["records_per_s"] else "-"
        vb = f"{m['broker_ratio']:.2f}x" if m["broker_ratio"] else "-"
        print(f"{m['what']:45s} {m['seconds']:8.2f} {m['mb_per_s']:8,.0f} {rps:>11s} {m['ratio_to_plain_read']:8.3f} "
              f"{vb:>9s}")
    print(f"speed-up from local[1] to local[2] once the session is up: {speedup:.2f}x; "
          f"steady state (scan + build, 1 to 2 processes, no JVM): {steady:.2f}x")
    if by_writer:
        print(f"\n{'default job (rebuild + tables)':34s} " + " ".join(f"{w:>14s}" for w in by_writer))
        for label, key, fmt in (("end to end, seconds", "seconds", "{:14.2f}"),
                                ("tables stage, seconds", "tables_seconds", "{:14.2f}"),
                                ("peak RSS, MiB (all processes)", "peak_rss_bytes", "{:>14s}"),
                                ("peak RSS of the JVM, MiB", "peak_rss_jvm_bytes", "{:>14s}")):
            cells = [report["table_writers"][w][key] for w in by_writer]
            print(f"{label:34s} " + " ".join(fmt.format(_mib(c) if key.startswith("peak") else c) for c in cells))
        if "delta-spark" not in by_writer:
            print("delta-spark: no cached jars (make delta-jars), not measured")
    with_tables = [(f"Spark + tables ({w})", r) for w, r in by_writer.items()]
    for name, run in [("Spark", spark2), *with_tables, ("--engine local", local)]:
        if run is None:
            continue
        pk = run["peak_rss"]
        print(f"peak RSS {name}: driver {_mib(pk['driver'])} MiB ({_mib(pk['driver_anon'])} anon), "
              f"JVM {_mib(pk['jvm'])} MiB ({_mib(pk['jvm_anon'])} anon), Python workers "
              f"{_mib(pk['python_workers'])} MiB ({_mib(pk['python_workers_anon'])} anon); together "
              f"{_mib(pk['total'])} MiB ({_mib(pk['total_anon'])} anon; the rest is mapped commitlog pages)")
    for name, run in [("Spark", spark2), ("local[1]", spark1), *with_tables]:
        if run is not None:
            print(f"stages {name}: " + ", ".join(f"{k} {v:.2f}s" for k, v in run["summary"]["timings"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
