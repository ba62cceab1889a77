"""Benchmark: ``python -m pipelines.bench [--size-gib 2] [--dir bench-data] [--split-size 128m]``.

In one run, over the same segment files:

1. a plain sequential read of the segments (the floor any rebuild pays),
2. the kernel alone: the sequential reput walk of :mod:`store_format` in this process, one core,
3. the full rebuild through ``python -m pipelines rebuild`` in a fresh process (JVM start-up,
   Spark session, scan, build, commit; no tables) with peak memory of the driver, the JVM and the
   Python workers sampled from ``/proc`` — and the scan stage's own time from its summary,
4. optionally (``--tables``) the same with the Delta tables published.

Figures are MB/s (10^6 bytes) and records/s, and each one's ratio to the plain read.
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


def _kernel_walk(root: str, config: BrokerConfig) -> tuple[int, float]:
    from store_format.reput import walk_store
    store = open_store(root, config)
    records = 0
    t = time.perf_counter()
    for _seg, res in walk_store(store, config, reuse_memory=True):
        records += len(res.rec)
    return records, time.perf_counter() - t


class _RssSampler(threading.Thread):
    """Peak resident memory of a process tree, by kind (driver, JVM, Python workers)."""

    def __init__(self, pid: int, interval: float = 0.05) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.interval = interval
        self.peak = {"driver": 0, "jvm": 0, "python_workers": 0, "total": 0}
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            usage = {"driver": 0, "jvm": 0, "python_workers": 0}
            for pid, kind in self._tree():
                usage[kind] += self._rss(pid)
            for k, v in usage.items():
                self.peak[k] = max(self.peak[k], v)
            self.peak["total"] = max(self.peak["total"], sum(usage.values()))
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
                except OSError:
                    continue
                ckind = "jvm" if comm == "java" else ("python_workers" if kind == "jvm" or kind == "python_workers"
                                                     else kind)
                stack.append((c, ckind))

    @staticmethod
    def _rss(pid: int) -> int:
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
        return 0


def _run_rebuild(root: str, out: str, split_size: str | None, master: str | None, tables: bool,
                 engine: str = "spark") -> dict:
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "pipelines", "rebuild", "--store", root, "--out", out, "--json", "--engine", engine]
    if not tables:
        cmd.append("--no-tables")
    if split_size:
        cmd += ["--split-size", split_size]
    if master:
        cmd += ["--master", master]
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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m pipelines.bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--size-gib", type=float, default=2.0, help="commitlog size to generate (default 2)")
    p.add_argument("--dir", default="bench-data", help="where the store and outputs go (default bench-data/)")
    p.add_argument("--split-size", default=None, help="scan split size, e.g. 128m (default: the job's default)")
    p.add_argument("--master", default=None, help="Spark master (default local[*])")
    p.add_argument("--tables", action="store_true", help="also time a rebuild that publishes the Delta tables")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = p.parse_args(argv)
    root = os.path.abspath(os.path.join(args.dir, "store"))
    out = os.path.abspath(os.path.join(args.dir, "out"))
    config = _ensure_store(root, args.size_gib)
    store = open_store(root, config)
    paths = [s.path for s in store.segments]
    _plain_read(paths)  # warm the page cache: every measurement below reads warm data
    size, t_read = _plain_read(paths)
    records, t_kernel = _kernel_walk(root, config)
    full = _run_rebuild(root, out, args.split_size, args.master, tables=False)
    rows = [("plain sequential read", t_read, None), ("kernel walk, 1 core (no Spark)", t_kernel, records)]
    scan_s = full["summary"]["timings"].get("scan")
    if scan_s:
        rows.append(("scan stage (Spark, inside the job)", scan_s, full["summary"]["records"]))
    rows.append(("full rebuild, end to end incl. Spark start-up", full["wall"], full["summary"]["records"]))
    post_start = (full["summary"]["seconds"] - full["summary"]["timings"].get("plan", 0.0)
                  - full["summary"]["timings"].get("spark session", 0.0))
    rows.append(("full rebuild after the session is up", post_start, full["summary"]["records"]))
    local = _run_rebuild(root, out, args.split_size, None, tables=False, engine="local")
    rows.append(("full rebuild, --engine local (forked processes, no JVM)", local["wall"],
                 local["summary"]["records"]))
    tables = None
    if args.tables:
        tables = _run_rebuild(root, out, args.split_size, args.master, tables=True)
        rows.append(("full rebuild + Delta tables, end to end", tables["wall"], tables["summary"]["records"]))
    mb = size / 1e6
    report = {"bytes": size, "segments": len(paths), "records": records, "cores": os.cpu_count(),
              "measurements": [{"what": w, "seconds": round(s, 3), "mb_per_s": round(mb / s, 1),
                                "records_per_s": round(r / s) if r else None,
                                "ratio_to_plain_read": round((mb / s) / (mb / t_read), 3)} for w, s, r in rows],
              "peak_rss_bytes": full["peak_rss"], "stage_timings": full["summary"]["timings"],
              "tables_peak_rss_bytes": tables["peak_rss"] if tables else None}
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"\ncommitlog: {mb:,.1f} MB in {len(paths)} segments, {records:,} records, {os.cpu_count()} cores, "
          "warm page cache")
    print(f"{'measurement':48s} {'seconds':>8s} {'MB/s':>9s} {'records/s':>12s} {'vs read':>8s}")
    for m in report["measurements"]:
        rps = f"{m['records_per_s']:,}" if m["records_per_s"] else "-"
        print(f"{m['what']:48s} {m['seconds']:8.2f} {m['mb_per_s']:9,.0f} {rps:>12s} {m['ratio_to_plain_read']:8.2f}")
    peak = full["peak_rss"]
    print(f"peak RSS (rebuild): driver {peak['driver'] / 2**20:,.0f} MiB, JVM {peak['jvm'] / 2**20:,.0f} MiB, "
          f"Python workers {peak['python_workers'] / 2**20:,.0f} MiB, together {peak['total'] / 2**20:,.0f} MiB")
    print("stage timings: " + ", ".join(f"{k} {v:.2f}s" for k, v in full["summary"]["timings"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
