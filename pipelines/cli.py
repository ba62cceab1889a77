"""Command line: ``python -m pipelines {rebuild,demo,sample,...}``.

``rebuild --store STORE --out OUT [--config broker.conf] [--split-size N] [--master URL]`` is a
contract with operators and schedulers: keep it stable.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Callable

from store_format.errors import StoreError

__all__ = ["main", "build_parser", "COMMANDS"]

# extra subcommands register themselves here: name -> (add_arguments, run)
COMMANDS: dict[str, tuple[Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]] = {}


def _size(text: str) -> int:
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    t = text.strip().lower().rstrip("ib").rstrip("b")
    if t and t[-1] in units:
        return int(float(t[:-1]) * units[t[-1]])
    return int(t)


def _add_rebuild_args(p: argparse.ArgumentParser, store_required: bool = True) -> None:
    p.add_argument("--store", required=store_required,
                   help="broker store root: the folder holding commitlog/ (local path, hdfs:// or s3:// URI)")
    p.add_argument("--out", required=True, help="where consumequeue/ and index/ are written, laid out like a store root")
    p.add_argument("--config", help="broker.conf the store was written with (Java properties); "
                                    "settings not in it take the broker's defaults")
    p.add_argument("--split-size", type=_size, default=None, help="bytes per scan task, e.g. 128m (default 128 MiB)")
    p.add_argument("--master", default=None, help="Spark master URL (default: local[*], or spark-submit's)")
    p.add_argument("--broker-version", choices=["4", "5"], default=None,
                   help="mirror the 4.9.x or the 5.x reput where they differ (default: brokerVersion in the "
                        "config, else detected from the records)")
    p.add_argument("--tables", default=None, help="publish the Delta tables under this path (default: OUT/tables)")
    p.add_argument("--no-tables", action="store_true", help="do not publish the Delta tables")
    p.add_argument("--with-body", action="store_true", help="include message bodies in the messages table")
    p.add_argument("--tz", default="UTC", help="time zone of index file names (default UTC)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace consumequeue/ and index/ already in OUT, once the new ones are complete")
    p.add_argument("--engine", choices=["spark", "local"], default="spark",
                   help="spark (default), or local: the same tasks in forked processes on this machine, no JVM "
                        "(no tables)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")


def _load_config(args: argparse.Namespace):
    from store_format.store import load_config_for
    overrides = {"brokerVersion": args.broker_version} if getattr(args, "broker_version", None) else {}
    return load_config_for(args.config, **overrides)


def _tables_path(args: argparse.Namespace) -> str | None:
    if args.no_tables:
        return None
    return args.tables or os.path.join(args.out, "tables") if "://" not in args.out else (
        args.tables or args.out.rstrip("/") + "/tables")


def cmd_rebuild(args: argparse.Namespace) -> int:
    from .rebuild import run_rebuild
    config = _load_config(args)
    tables = _tables_path(args)
    if tables is not None:
        try:
            from . import tables as _tables  # noqa: F401
        except ImportError:
            print("note: the Delta tables are not available in this build; rebuilding without them", file=sys.stderr)
            tables = None
    if args.engine == "local":
        tables = None
    summary = run_rebuild(args.store, args.out, config, master=args.master, split_size=args.split_size,
                          tables=tables, with_body=args.with_body, tz=args.tz, overwrite=args.overwrite,
                          engine=args.engine, processes=os.cpu_count() or 1)
    print(json.dumps(summary.as_dict(), indent=2) if args.json else summary.render())
    return 1 if summary.tables_error else 0


def cmd_sample(args: argparse.Namespace) -> int:
    from store_format.sample import generate_sample_store, write_broker_conf
    config = _load_config(args)
    info = generate_sample_store(args.out, config, messages=args.messages, seed=args.seed)
    write_broker_conf(os.path.join(args.out, "broker.conf"), config)
    print(json.dumps(info, indent=2, default=str))
    return 0


DEMO_CONFIG = ("mappedFileSizeCommitLog=67108864\nmappedFileSizeConsumeQueue=600000\n"
               "maxHashSlotNum=50000\nmaxIndexNum=200000\n")


def cmd_demo(args: argparse.Namespace) -> int:
    """Rebuild a store (or a generated sample store) on local Spark and show the result."""
    from store_format.store import load_config_for
    store = args.store
    config_path = args.config
    if store is None:
        from store_format.config import load_broker_config
        from store_format.sample import generate_sample_store, write_broker_conf
        store = os.path.join(os.path.dirname(os.path.abspath(args.out)), "store")
        config = load_broker_config(DEMO_CONFIG)
        if not os.path.isdir(os.path.join(store, "commitlog")):
            print(f"generating a sample store in {store} ...", file=sys.stderr)
            generate_sample_store(store, config, messages=args.messages, body_size=512)
            write_broker_conf(os.path.join(store, "broker.conf"), config)
        config_path = os.path.join(store, "broker.conf")
    args.store, args.config = store, config_path
    config = load_config_for(config_path)
    from .rebuild import run_rebuild
    tables = None if args.no_tables else (args.tables or os.path.join(args.out, "tables"))
    if tables is not None:
        try:
            from . import tables as _tables  # noqa: F401
        except ImportError:
            tables = None
    summary = run_rebuild(store, args.out, config, master=args.master, split_size=args.split_size, tables=tables,
                          tz=args.tz, overwrite=True)
    print(summary.render())
    if tables is not None and "lookup" in COMMANDS:
        from .lookup import demo_lookup
        demo_lookup(tables)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m pipelines",
                                     description="Offline rebuild of RocketMQ consume queues and index files")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("rebuild", help="rebuild consumequeue/ and index/ from commitlog/")
    _add_rebuild_args(p)
    p.set_defaults(func=cmd_rebuild)
    p = sub.add_parser("demo", help="rebuild a store (default: a generated sample) on local Spark")
    _add_rebuild_args(p, store_required=False)
    p.add_argument("--messages", type=int, default=200_000, help="messages in the generated sample store")
    p.set_defaults(func=cmd_demo)
    p = sub.add_parser("sample", help="write a sample commitlog (and broker.conf) for trying things out")
    p.add_argument("--out", required=True, help="store root to create")
    p.add_argument("--config", help="broker.conf with the file sizes to use")
    p.add_argument("--broker-version", choices=["4", "5"], default=None)
    p.add_argument("--messages", type=int, default=20_000)
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=cmd_sample)
    for name, (add_args, run) in COMMANDS.items():
        p = sub.add_parser(name)
        add_args(p)
        p.set_defaults(func=run)
    return parser


def _register_optional() -> None:
    for module in ("lookup", "audit", "tables"):
        try:
            __import__(f"pipelines.{module}")
        except ImportError:
            pass


def main(argv: list[str] | None = None) -> int:
    _register_optional()
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except StoreError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
