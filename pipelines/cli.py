"""Command line: ``python -m pipelines <command> ...``.

Every command and every option is declared here, once; shared options come from parent parsers
(``parents=``) so that ``--store`` or ``--json`` mean the same everywhere.  Commands import their
module only when they run: ``python -m pipelines dump`` never starts a JVM.

``rebuild --store STORE --out OUT [--config broker.conf] [--split-size N] [--master URL]`` is a
contract with operators and schedulers: keep it stable.

Exit codes: 0 success; 1 the command ran and found something (differences, failed expectations, no
match, tables not published); 2 an error the user can fix (one line on stderr); 130 interrupted.

It holds the parser of every command with the words of each option (one function a command; the
options' types: :mod:`pipelines.arg_types`), and is the one place that prints results and maps
errors to exit codes; the commands' work lives in their own modules.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version

from store_format.errors import StoreError, UsageError

from .arg_types import positive_int, size_arg, split_size_arg, time_arg, zone_arg
from .console import configure_logging

__all__ = ["main", "build_parser", "size_arg", "time_arg", "zone_arg", "UsageError"]

log = logging.getLogger("pipelines")

TABLE_CHOICES = ("messages", "message_keys", "segments", "anomalies", "expiry_audit", "runs")


# ---------------------------------------------------------------------------------------------
# parser


_Command = Callable[..., argparse.ArgumentParser]   # build_parser's command(name, help, *parents): its parser


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (``error: ...``, exit 2) instead of usage + message."""

    def error(self, message: str):
        self.exit(2, f"error: {self.prog}: {message}\n")


def _parents() -> dict[str, argparse.ArgumentParser]:
    def parent() -> argparse.ArgumentParser:
        return argparse.ArgumentParser(add_help=False)

    store = parent()
    store.add_argument("--config", help="broker.conf the store was written with (Java properties); settings not "
                                        "in it take the broker's defaults")
    store.add_argument("--broker-version", choices=["4", "5", "5.5"], default=None,
                       help="mirror the 4.9.x, 5.0-5.3 or 5.5.x broker where they differ (default: brokerVersion "
                            "in the config, else detected from the records: 4 or 5)")
    spark = parent()
    spark.add_argument("--split-size", type=split_size_arg, default=None,
                       help="commitlog bytes per scan task, e.g. 128m (default 128 MiB)")
    spark.add_argument("--master", default=None, help="Spark master URL (default: local[*], or spark-submit's)")
    spark.add_argument("--log-level", default=None, type=str.upper, choices=["ERROR", "WARN", "INFO", "DEBUG"],
                       help="Spark's and this job's log level (default: Spark ERROR, job INFO)")
    out = parent()
    out.add_argument("--json", action="store_true", help="print the result as JSON")
    return {"store": store, "spark": spark, "json": out}


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m pipelines",
                     description="Offline rebuild of RocketMQ consume queues and index files, Delta tables, "
                                 "and store tools")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    par = _parents()

    def command(name: str, help_text: str, *parents: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text,
                           parents=[par[k] for k in parents])  # type: ignore[misc]
        p.set_defaults(func=_HANDLERS[name])
        return p

    for declare in (_rebuild_command, _demo_command, _sample_command, _tables_command, _lookup_command,
                    _audit_command, _validate_command, _optimize_command, _vacuum_command, _dump_command,
                    _verify_command, _repair_command):   # in the order --help lists them
        declare(command)
    return parser


def _rebuild_command(command: _Command) -> None:
    p = command("rebuild", "rebuild consumequeue/ and index/ (and consumequeue_ext/ with enableConsumeQueueExt, "
                "batchconsumequeue/ for 5.x BatchCQ topics) from commitlog/", "store", "spark", "json")
    _rebuild_arguments(p, store_required=True)


def _demo_command(command: _Command) -> None:
    p = command("demo", "rebuild a store (default: a generated sample) on local Spark and look a key up",
                "store", "spark")
    _rebuild_arguments(p, store_required=False)
    p.add_argument("--messages", type=positive_int, default=200_000,
                   help="messages in the generated sample store, when no --store is given (default 200000)")


def _sample_command(command: _Command) -> None:
    p = command("sample", "write a sample store (commitlog and broker.conf) for trying things out")
    p.add_argument("--out", required=True, help="store root to create (existing segments there are replaced)")
    p.add_argument("--messages", type=positive_int, default=20_000,
                   help="records to write, about 2%% of them special cases (default 20000)")
    p.add_argument("--seed", type=int, default=0,
                   help="random seed: the same seed and options give the same bytes (default 0)")
    p.add_argument("--config", help="broker.conf whose segment size and broker line the sample follows; its "
                                    "settings are written to OUT/broker.conf (default: the broker's defaults)")
    p.add_argument("--broker-version", choices=["4", "5"], default=None,
                   help="write records as the 4.9.x or the 5.x broker does (default: brokerVersion in --config, "
                        "else 4.9.x)")


def _tables_command(command: _Command) -> None:
    p = command("tables", "refresh the Delta tables of a store without rebuilding its files",
                "store", "spark", "json")
    p.add_argument("--store", required=True, help="broker store root (the folder holding commitlog/)")
    p.add_argument("--tables", required=True, help="root folder of the Delta tables")
    p.add_argument("--with-body", action="store_true", help="include message bodies in the messages table")
    p.add_argument("--full", action="store_true", help="rescan the whole store instead of what is new")
    p.add_argument("--strict", action="store_true",
                   help="refuse (exit 2) while a broker may be running on the store (its lock held, or abort "
                        "present); without it: a warning")
    _table_writer_argument(p)


def _lookup_command(command: _Command) -> None:
    p = command("lookup", "find messages by key, client msgId or offset msgId (exit 1: none found)", "json")
    p.add_argument("--tables", help="root folder of the Delta tables")
    p.add_argument("--topic", help="topic of the key (optional with --msg-id)")
    p.add_argument("--key", help="a KEYS token or UNIQ_KEY")
    p.add_argument("--msg-id", help="the client's msgId (UNIQ_KEY property)")
    p.add_argument("--offset-msg-id", help="the broker's offset msgId (store host + commitlog offset)")
    p.add_argument("--from", dest="begin", type=time_arg,
                   help="earliest store time (ISO 8601 or epoch ms; default: no bound)")
    p.add_argument("--to", dest="end", type=time_arg,
                   help="latest store time (ISO 8601 or epoch ms; default: no bound)")
    p.add_argument("--body", action="store_true", help="print message bodies")
    p.add_argument("--index", help="look up in this index/ folder instead of the tables (needs --store)")
    p.add_argument("--store", help="store root (for --index, and for --body when the tables hold no bodies)")
    p.add_argument("--config", help="broker.conf of the store (with --index, default: STORE/broker.conf if "
                                       "present, else the broker's defaults)")
    p.add_argument("--max", type=positive_int, default=None,
                   help="at most this many messages (default: all found in the tables; with --index: offsets "
                        "collected, default 64 as the broker's)")


def _audit_command(command: _Command) -> None:
    p = command("audit", "what the next cleanups delete, and the unconsumed messages lost with them", "json")
    p.add_argument("--tables", required=True, help="root folder of the Delta tables")
    p.add_argument("--as-of", required=True, type=time_arg,
                   help="audit time: ISO 8601 (UTC unless zoned), epoch ms, or now")
    p.add_argument("--config", help="broker.conf with the cleanup settings (default: the settings of the last run)")
    p.add_argument("--store", help="store root whose config/*.json offsets to use (default: the last run's)")
    p.add_argument("--consumer-offsets", help="consumerOffset.json (default: the store's config/consumerOffset.json)")
    p.add_argument("--delay-offsets", help="delayOffset.json (default: the store's config/delayOffset.json)")
    p.add_argument("--disk-used", type=float, default=None,
                   help="used space of the commitlog's disk in percent (default: below every threshold)")
    p.add_argument("--disk-size", type=size_arg, default=None,
                   help="size of that disk (e.g. 500g): deleted segments then lower the ratio and disk-driven rounds "
                        "stop when it falls below the thresholds (default: unknown; the ratio is held: upper bound)")
    p.add_argument("--manual-delete", action="store_true",
                   help="as if deleteExpiredCommitLog (executeDeleteFilesManually) was sent at --as-of: the next 20 "
                        "rounds run whatever the hour")
    p.add_argument("-D", dest="system_properties", action="append", default=[], metavar="PROPERTY=RATIO",
                   help="a ratio system property of the broker's JVM: rocketmq.broker.diskSpaceWarningLevelRatio "
                        "or rocketmq.broker.diskSpaceCleanForciblyRatio, or DLedger's dledger.disk.ratio.clean (e.g. "
                        "-D rocketmq.broker.diskSpaceCleanForciblyRatio=0.8; default: none, the broker's defaults)")
    p.add_argument("--tz", type=zone_arg, default="UTC",
                   help="the broker's time zone for deleteWhen hours (default UTC)")
    p.add_argument("--time-source", choices=["auto", "mtime", "last_store_time"], default="auto",
                   help="segment times: file mtimes, the last record's store time, or auto: mtimes when "
                        "plausible (default auto)")
    p.add_argument("--write", action="store_true", help="also replace the expiry_audit table with this audit")
    p.add_argument("--report", help="also write the audit summary as JSON to this file (default: none)")


def _validate_command(command: _Command) -> None:
    p = command("validate", "check the Delta tables against the data-quality suite and write Data Docs "
                            "(exit 1: expectations failed)", "json")
    p.add_argument("--tables", required=True, help="root folder of the Delta tables")
    p.add_argument("--docs", help="folder for the Data Docs (default: TABLES/_data_docs)")
    p.add_argument("--engine", choices=["arrow", "spark"], default="arrow",
                   help="what reads and reduces the tables: arrow (default) = delta-rs and Arrow in this process, "
                        "the suites on Great Expectations' pandas source; spark = Spark (through delta-spark when "
                        "the session has its jars), the same suites on its Spark source")
    p.add_argument("--master", default=None,
                   help="--engine spark: Spark master URL (default: local[*], or spark-submit's)")


def _optimize_command(command: _Command) -> None:
    p = command("optimize", "compact the small files of the Delta tables; readers see the same rows", "json")
    p.add_argument("--tables", required=True, help="root folder of the Delta tables")
    p.add_argument("--table", action="append", choices=TABLE_CHOICES, metavar="NAME",
                   help="a table to compact, repeatable (default: all six)")


def _vacuum_command(command: _Command) -> None:
    p = command("vacuum", "delete the files of replaced table versions, never those the newest complete run "
                          "reads", "json")
    p.add_argument("--tables", required=True, help="root folder of the Delta tables")
    p.add_argument("--table", action="append", choices=TABLE_CHOICES, metavar="NAME",
                   help="a table to vacuum, repeatable (default: all six)")
    p.add_argument("--retain-hours", type=int, default=168,
                   help="keep files removed less than this many hours ago (default 168, one week); the versions "
                        "readers may open are kept whatever it is")
    p.add_argument("--dry-run", action="store_true", help="list the files that would go, delete nothing")


def _dump_command(command: _Command) -> None:
    p = command("dump", "decode store files read-only: commitlog segments, DLedger data and index files "
                        "(dledger-<selfId>/data/, index/), consume queue and index files, checkpoint, config/*.json",
                "json")
    p.add_argument("files", nargs="+", metavar="FILE", help="store files to decode")
    p.add_argument("--from", dest="start", type=int, default=0,
                   help="first item to print (record, unit, entry), counted from 0 (default 0)")
    p.add_argument("--count", type=positive_int, default=None, help="items to print at most, per file (default: all)")
    p.add_argument("--config", help="broker.conf of the store: file sizes, delay levels (default: the broker's "
                                    "defaults)")
    p.add_argument("--strict", action="store_true",
                   help="refuse (exit 2) while a broker may be running on the files' store (its lock held, or "
                        "abort present); without it: a warning")


def _verify_command(command: _Command) -> None:
    p = command("verify", "compare a store's consumequeue/ (files or RocksDB entries), index/ (consumequeue_ext/, "
                          "batchconsumequeue/) with a rebuild from its commitlog (exit 1: differences)",
                "store", "spark", "json")
    p.add_argument("--store", required=True, help="broker store root (opened read-only)")
    p.add_argument("--work", help="where the reference rebuild goes (default: a temporary folder)")
    p.add_argument("--engine", choices=["spark", "local"], default="spark",
                   help="how the reference rebuild runs: spark (default) or local (see rebuild --engine)")
    p.add_argument("--strict", action="store_true",
                   help="refuse (exit 2) while a broker may be running on the store (its lock held, or abort "
                        "present); without it: a warning")


def _repair_command(command: _Command) -> None:
    p = command("repair", "verify, then replace only the damaged, missing or extra files of a store",
                "store", "spark", "json")
    p.add_argument("--store", required=True, help="broker store root")
    p.add_argument("--backup", help="where replaced files go (default: STORE/.repair-backup-<time>)")
    p.add_argument("--dry-run", action="store_true", help="print the plan and change nothing")
    p.add_argument("--force", action="store_true", help="repair even when a broker may be running on the store")
    p.add_argument("--engine", choices=["spark", "local"], default="spark",
                   help="how the reference rebuild runs: spark (default) or local (see rebuild --engine)")


def _table_writer_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--table-writer", choices=["auto", "delta-spark", "delta-rs"], default="auto",
                   help="what commits the Delta tables: auto (default) = delta-spark when its jars are there "
                        "(make delta-jars; on a cluster spark-submit --packages), else delta-rs")


def _rebuild_arguments(p: argparse.ArgumentParser, store_required: bool) -> None:
    p.add_argument("--store", required=store_required,
                   help="broker store root: the folder holding commitlog/ (local path, hdfs:// or s3:// URI)"
                        + ("" if store_required else "; default: a sample store generated beside OUT"))
    p.add_argument("--out", required=True,
                   help="where consumequeue/, index/ (and consumequeue_ext/, batchconsumequeue/) go, as in a store")
    p.add_argument("--tables", default=None, help="publish the Delta tables under this path (default: OUT/tables)")
    p.add_argument("--no-tables", action="store_true", help="do not publish the Delta tables")
    p.add_argument("--with-body", action="store_true", help="include message bodies in the messages table")
    p.add_argument("--tz", type=zone_arg, default="UTC", help="time zone of index file names (default UTC)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the outputs already in OUT (consumequeue/, index/ ...) once the new ones are complete")
    p.add_argument("--engine", choices=["spark", "local"], default="spark",
                   help="spark (default), or local: the same tasks in forked processes on this machine, no JVM "
                        "(no tables)")
    p.add_argument("--processes", type=positive_int, default=None,
                   help="--engine local: processes to run the tasks in (default: the number of cores)")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 when the store shows any anomaly; refuse (exit 2) while a broker may be running "
                        "on the store (its lock held, or abort present)")
    _table_writer_argument(p)
    p.add_argument("--as-restart", action="store_true",
                   help="apply the broker's recovery first: the files a restart would write (ext, batch and "
                        "DLedger stores too, see docs/restart-settings.md; not RocksDB)")


# ---------------------------------------------------------------------------------------------
# handlers: plain values in, the module's function, output and exit code out


def _config(args: argparse.Namespace):
    from store_format.store import load_config_for
    overrides = {"brokerVersion": args.broker_version} if getattr(args, "broker_version", None) else {}
    return load_config_for(getattr(args, "config", None), **overrides)


def _tables_path(args: argparse.Namespace) -> str | None:
    """Where the rebuild publishes the tables (None: not published)."""
    if args.no_tables or args.engine == "local":
        return None
    return args.tables or args.out.rstrip("/") + "/tables"


def _table_writer(args: argparse.Namespace, tables: str | None) -> str:
    """``--table-writer`` for the session: delta-rs without tables (a rebuild without tables never
    puts the Delta jars on the classpath); delta-spark on a local run needs the cached jars."""
    if tables is None:
        return "delta-rs"
    local = (args.master or "local").startswith("local") and "PYSPARK_GATEWAY_PORT" not in os.environ
    if args.table_writer == "delta-spark" and local:
        from .delta_jars import cached_jars, missing_reason
        if not cached_jars():
            raise StoreError(f"--table-writer delta-spark: {missing_reason()}")
    return args.table_writer


def _print(value, as_json: bool, render) -> None:
    print(json.dumps(value, indent=2, default=str) if as_json else render(value))


def cmd_rebuild(args: argparse.Namespace) -> int:
    config = _config(args)
    from .brokerlock import REBUILD_MEANING, warn_if_broker_live
    warn_if_broker_live(args.store, strict=args.strict, meaning=REBUILD_MEANING)   # before the JVM starts
    session = None
    if args.engine == "spark":  # options and settings are valid: the JVM starts while the rest loads
        from .session import start_session
        session = start_session(args.master, args.log_level, sql=_tables_path(args) is not None,
                                table_writer=_table_writer(args, _tables_path(args)))
    from .rebuild import run_rebuild
    summary = run_rebuild(args.store, args.out, config, spark=session, master=args.master, split_size=args.split_size,
                          tables=_tables_path(args), with_body=args.with_body, tz=args.tz,
                          overwrite=args.overwrite, engine=args.engine,
                          processes=args.processes or os.cpu_count() or 1, log_level=args.log_level,
                          as_restart=args.as_restart, strict=None)
    _print(summary.as_dict(), args.json, lambda _: summary.render())
    if summary.tables_error:
        return summary.tables_error_code
    return 1 if args.strict and summary.anomaly_count else 0


def cmd_demo(args: argparse.Namespace) -> int:
    """Rebuild a store (or a generated sample store) on local Spark and show the result."""
    if args.store is None:
        from store_format.config import load_broker_config
        from store_format.sample import DEMO_BROKER_CONF, generate_sample_store, write_broker_conf
        args.store = os.path.join(os.path.dirname(os.path.abspath(args.out)), "store")
        if not os.path.isdir(os.path.join(args.store, "commitlog")):
            log.info("generating a sample store in %s ...", args.store)
            config = load_broker_config(DEMO_BROKER_CONF)
            generate_sample_store(args.store, config, messages=args.messages, body_size=512)
            write_broker_conf(os.path.join(args.store, "broker.conf"), config)
        args.config = os.path.join(args.store, "broker.conf")
    config = _config(args)
    from .session import start_session
    tables = None if args.no_tables else (args.tables or os.path.join(args.out, "tables"))
    # the JVM starts while the job's modules load
    session = start_session(args.master, args.log_level, sql=tables is not None,
                            table_writer=_table_writer(args, tables))
    from .rebuild import run_rebuild
    summary = run_rebuild(args.store, args.out, config, spark=session, master=args.master,
                          split_size=args.split_size, tables=tables, tz=args.tz, overwrite=True,
                          log_level=args.log_level)
    print(summary.render())
    if tables is not None and summary.tables:
        from .commands.lookup import demo_lookup
        demo_lookup(tables)
    return 1 if summary.tables_error else 0


def cmd_sample(args: argparse.Namespace) -> int:
    from store_format.sample import generate_sample_store, write_broker_conf
    config = _config(args)
    info = generate_sample_store(args.out, config, messages=args.messages, seed=args.seed)
    write_broker_conf(os.path.join(args.out, "broker.conf"), config)
    print(json.dumps(info, indent=2, default=str))
    return 0


def cmd_tables(args: argparse.Namespace) -> int:
    from .brokerlock import warn_if_broker_live
    warn_if_broker_live(args.store, strict=args.strict,
                        meaning="the newest segment may still be growing, so the tables may end part-way through a "
                                "write; the next refresh rescans from that segment")
    from .tables import render_tables_summary, run_tables
    summary = run_tables(args.store, args.tables, _config(args), master=args.master, split_size=args.split_size,
                         with_body=args.with_body, full=args.full, log_level=args.log_level,
                         table_writer=_table_writer(args, args.tables))
    _print(summary, args.json, render_tables_summary)
    return 0


def cmd_lookup(args: argparse.Namespace) -> int:
    from .commands import lookup
    return lookup.run_lookup(tables=args.tables, topic=args.topic, key=args.key, msg_id=args.msg_id,
                             offset_msg_id=args.offset_msg_id, begin_ms=args.begin, end_ms=args.end, body=args.body,
                             index=args.index, store=args.store, config_path=args.config, max_messages=args.max,
                             as_json=args.json)


def cmd_audit(args: argparse.Namespace) -> int:
    from .commands import audit
    return audit.run_audit_command(tables=args.tables, as_of_ms=args.as_of, config_path=args.config, store=args.store,
                                   consumer_file=args.consumer_offsets, delay_file=args.delay_offsets,
                                   disk_used_percent=args.disk_used, tz=args.tz, time_source=args.time_source,
                                   write=args.write, report=args.report, as_json=args.json, disk_size=args.disk_size,
                                   manual_delete=args.manual_delete, system_properties=args.system_properties)


def cmd_validate(args: argparse.Namespace) -> int:
    from .commands import validate
    return validate.run_validate_command(tables=args.tables, docs=args.docs, as_json=args.json, engine=args.engine,
                                         master=args.master)


def cmd_optimize(args: argparse.Namespace) -> int:
    from .tables import maintenance
    results = maintenance.optimize_tables(args.tables, args.table)
    _print([dataclasses.asdict(r) for r in results], args.json, lambda _: maintenance.render_optimize(results))
    return 0


def cmd_vacuum(args: argparse.Namespace) -> int:
    from .tables import maintenance
    results = maintenance.vacuum_tables(args.tables, args.table, retain_hours=args.retain_hours, dry_run=args.dry_run)
    _print([dataclasses.asdict(r) for r in results], args.json, lambda _: maintenance.render_vacuum(results))
    return 0


def cmd_dump(args: argparse.Namespace) -> int:
    from .commands import dump
    return dump.run_dump_command(args.files, start=args.start, count=args.count, config_path=args.config,
                                 as_json=args.json, strict=args.strict)


def cmd_verify(args: argparse.Namespace) -> int:
    from .commands import verify
    return verify.run_verify_command(store=args.store, config=_config(args), work=args.work, engine=args.engine,
                                     master=args.master, split_size=args.split_size, as_json=args.json,
                                     strict=args.strict)


def cmd_repair(args: argparse.Namespace) -> int:
    from .commands import verify
    return verify.run_repair_command(store=args.store, config=_config(args), backup=args.backup, dry_run=args.dry_run,
                                     force=args.force, engine=args.engine, master=args.master,
                                     split_size=args.split_size, as_json=args.json)


_HANDLERS = {
    "rebuild": cmd_rebuild, "demo": cmd_demo, "sample": cmd_sample, "tables": cmd_tables, "lookup": cmd_lookup,
    "audit": cmd_audit, "validate": cmd_validate,
    "optimize": cmd_optimize, "vacuum": cmd_vacuum, "dump": cmd_dump, "verify": cmd_verify, "repair": cmd_repair,
}


def _version() -> str:
    try:
        return version("rocketmq-offline-index")
    except PackageNotFoundError:
        return "unknown"


def _interrupted(signum, frame) -> None:
    """SIGINT: silence the JVM's stderr at once, then interrupt as Python does.  Cancelling the job
    (``pipelines.session.stop_jobs``) makes Spark cut its Python workers off, and their tracebacks
    (``BrokenPipeError`` in ``pyspark/daemon.py``) come through the JVM's stderr while the driver
    is still cleaning up: they must not reach the terminal, whenever the Ctrl-C comes.  The Ctrl-C
    is remembered: whatever error surfaces after it (the job failing as the terminal's SIGINT kills
    its workers, a clean-up cut short) ends the command as an interruption."""
    _SIGINT_SEEN.set()
    session = sys.modules.get("pipelines.session")
    if session is not None:
        session.mute_jvm()
    raise KeyboardInterrupt


_SIGINT_SEEN = threading.Event()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _SIGINT_SEEN.clear()
    configure_logging(getattr(args, "log_level", None))
    previous = None
    if (getattr(args, "log_level", None) != "DEBUG" and threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
        previous = signal.signal(signal.SIGINT, _interrupted)
    try:
        return _run(args)
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def _ended_by_interrupt() -> int:
    if "pyspark" in sys.modules:
        from .session import mute_jvm
        mute_jvm()   # the JVM's lines about the tasks it abandons
    print("interrupted", file=sys.stderr)
    return 130


def _spark_failure(e: BaseException) -> bool:
    """A Spark job that failed: the JVM's exception (``Py4JJavaError``) or a task's Python exception as
    PySpark raises it in the driver (``pyspark.errors.exceptions.captured.CapturedException``: a failed
    RDD job's ``PythonException``)."""
    if type(e).__name__ == "Py4JJavaError":
        return True
    captured = sys.modules.get("pyspark.errors.exceptions.captured")
    return captured is not None and isinstance(e, captured.CapturedException)


def _run(args: argparse.Namespace) -> int:
    """The command, its errors as one line and an exit code (see the module docstring)."""
    try:
        return args.func(args)
    except StoreError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return _ended_by_interrupt()
    except Exception as e:
        if _SIGINT_SEEN.is_set():
            return _ended_by_interrupt()
        from .oserrors import os_error_line
        found = os_error_line(e)   # in the driver, or wrapped in an executor's failure
        if found is not None:
            if getattr(args, "log_level", None) == "DEBUG":
                traceback.print_exc()
            print(f"error: {found.line}", file=sys.stderr)
            return found.exit_code
        if not _spark_failure(e):
            raise
        # Spark gave up (tasks failed past their retries): the output was left as it was
        from .oserrors import failure_line, missing_module
        module = missing_module(e)
        if module is not None:   # a Python package missing where the tasks run
            print(f"error: the Spark tasks' Python cannot import {module!r} (No module named {module!r}): install "
                  "the project's dependencies where the executors run (docs/clusters.md); nothing was committed",
                  file=sys.stderr)
            return 2
        print(f"error: the Spark job failed: {failure_line(e)} (nothing was committed; --log-level INFO shows "
              "Spark's log)", file=sys.stderr)
        return 1
