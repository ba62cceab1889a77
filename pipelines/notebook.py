"""The notebooks' shared setup: which store, which settings, which tables, and a scratch folder.

Every notebook in ``notebooks/`` takes the same parameters (``store``, ``config``, ``tables``, ``out``,
``master``, ``messages``) and needs the same answer: the store's broker settings (``config``, else
``STORE/broker.conf``; never guessed), and the Delta tables to read (``tables`` as given, or a rebuild
of the store published into ``out``).  Without ``store`` a small demo store is generated.  The rebuild
runs ``python -m pipelines rebuild`` in a child process, so no JVM lives in the notebook's kernel.
"""
from __future__ import annotations

import atexit
import dataclasses
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from store_format.config import BrokerConfig, load_broker_config
from store_format.errors import StoreLayoutError
from store_format.sample import DEMO_BROKER_CONF, generate_sample_store, write_broker_conf
from store_format.store import load_config_for

__all__ = ["NotebookStore", "open_notebook_store", "broker_config_of", "DEMO_SEGMENT_SIZE"]

# the demo's small file sizes, with 1 MiB segments so that a few thousand messages fill several
DEMO_SEGMENT_SIZE = 1 << 20

DemoWriter = Callable[[str, BrokerConfig, int], dict]


@dataclasses.dataclass
class NotebookStore:
    """What a notebook works on.

    Attributes:
        store: the store root.  config_path / broker_config: its settings and where they came from.
        tables: the Delta tables to read.  out: the rebuild's output (None when ``tables`` was given).
        workdir: the notebook's scratch folder (removed at the kernel's exit, or by :meth:`cleanup`).
        demo: the store was generated here.  rebuilt: the tables were published here.
        summary: the rebuild's JSON summary (None when not rebuilt).
    """
    store: str
    config_path: str
    broker_config: BrokerConfig
    tables: str
    out: str | None
    workdir: Path
    demo: bool
    rebuilt: bool
    summary: dict[str, Any] | None

    def cleanup(self) -> None:
        shutil.rmtree(self.workdir, ignore_errors=True)


def broker_config_of(store: str, config: str | None) -> tuple[str, BrokerConfig]:
    """The settings the store was written with: ``config``, else ``STORE/broker.conf``; never guessed."""
    path = config or f"{str(store).rstrip('/')}/broker.conf"
    try:
        return path, load_config_for(path)
    except StoreLayoutError:
        if config:
            raise
        raise FileNotFoundError(
            f"{store} has no broker.conf and no config was given: pass the broker.conf the broker ran with, e.g. "
            "papermill ... -p config /path/to/broker.conf. The file sizes it sets (mappedFileSizeCommitLog, "
            "mappedFileSizeConsumeQueue, maxHashSlotNum, maxIndexNum) cannot be guessed.") from None


def _publish_tables(store: str, config_path: str, out: str, master: str, with_body: bool) -> dict[str, Any]:
    """Rebuild ``store`` into ``out`` with its tables under ``OUT/tables``, in a child process."""
    cmd = [sys.executable, "-m", "pipelines", "rebuild", "--store", store, "--out", out, "--config", config_path,
           "--tables", f"{out}/tables", "--master", master, "--overwrite", "--json"]
    done = subprocess.run(cmd + (["--with-body"] if with_body else []), capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the rebuild failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout)


def open_notebook_store(*, store: str | None, config: str | None, tables: str | None, out: str | None,
                        master: str = "local[2]", messages: int = 5000, with_body: bool = False,
                        write_demo_store: DemoWriter | None = None) -> NotebookStore:
    """Resolve a notebook's parameters to a store, its settings and readable tables, printing each choice.

    ``write_demo_store(store, config, messages)`` writes a notebook's own demo store (default: the
    project's sample store); it returns ``{"messages": …, "segments": …}``.
    """
    workdir = Path(tempfile.mkdtemp(prefix="rocketmq-notebook-"))
    atexit.register(shutil.rmtree, workdir, ignore_errors=True)
    demo = store is None
    if store is None:
        store = str(workdir / "store")
        demo_config = load_broker_config(DEMO_BROKER_CONF, mappedFileSizeCommitLog=DEMO_SEGMENT_SIZE)
        if write_demo_store is not None:
            info = write_demo_store(store, demo_config, messages)
        else:
            info = generate_sample_store(store, demo_config, messages=messages, body_size=256)
        write_broker_conf(f"{store}/broker.conf", demo_config)
        print(f"demo store {store}: {info['messages']:,} messages in {info['segments']} segment(s)")
    config_path, broker_config = broker_config_of(store, config)
    print(f"store   {store}\nconfig  {config_path}")
    summary = None
    rebuilt = tables is None
    if tables is None:
        out = out or str(workdir / "out")
        summary = _publish_tables(store, config_path, out, master, with_body)
        tables = summary.get("tables") or f"{out}/tables"
        print(f"rebuilt {summary['segments']} segment(s) into {out}: {summary['dispatched']:,} messages dispatched, "
              f"{summary['index_keys']:,} index keys")
    print(f"tables  {tables}")
    return NotebookStore(store=store, config_path=config_path, broker_config=broker_config, tables=tables,
                         out=out, workdir=workdir, demo=demo, rebuilt=rebuilt, summary=summary)
