"""Outputs on file systems that refuse writes: read-only, or too small (a tmpfs mounted for the
test; skipped where mounting is not permitted).  Refused before any work when it can be known
(pipelines.preflight, pipelines.outlock), else one line ``error: <path>: <strerror>`` during the
work (pipelines.oserrors), and the run's staging removed either way."""
from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pipelines.cli import main
from pipelines.preflight import preflight
from pipelines.tables.publish import discard_staged_tables
from store_format.config import load_broker_config
from store_format.errors import StoreLayoutError
from store_format.sample import generate_sample_store, write_broker_conf
from store_format.store import open_store

# no index files: the certain minimum (one consume queue file per queue) is small, what the run
# writes (several files per queue, work files) is not
CONF = "mappedFileSizeCommitLog=1048576\nmappedFileSizeConsumeQueue=6000\nmessageIndexEnable=false\n"
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("fs") / "store"
    config = load_broker_config(CONF)
    generate_sample_store(str(root), config, messages=20_000, body_size=64)
    write_broker_conf(str(root / "broker.conf"), config)
    return root


@pytest.fixture()
def tmpfs(tmp_path: Path) -> Iterator[Callable[..., Path]]:
    """``tmpfs(size, read_only=False)``: a fresh tmpfs mounted below tmp_path, unmounted afterwards."""
    mounted: list[Path] = []

    def mount(size: str, read_only: bool = False) -> Path:
        point = tmp_path / f"mnt{len(mounted)}"
        point.mkdir()
        opts = f"size={size}" + (",ro" if read_only else "")
        res = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(point)], capture_output=True,
                             text=True)
        if res.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here ({res.stderr.strip() or res.returncode}): needs root or "
                        "CAP_SYS_ADMIN")
        mounted.append(point)
        return point

    yield mount
    for point in reversed(mounted):
        subprocess.run(["umount", "-l", str(point)], check=False)


def _lines(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.strip()]


def test_tables_on_a_read_only_file_system_are_refused_before_any_work(store, tmpfs, tmp_path) -> None:
    ro = tmpfs("1m", read_only=True)
    config = load_broker_config(CONF)
    with pytest.raises(StoreLayoutError, match=f"--tables {ro}/tables: {ro} is not writable "
                                               r"\(Read-only file system\)"):
        preflight(open_store(str(store), config), config, str(tmp_path / "out"), str(ro / "tables"))


def test_rebuild_with_read_only_tables_is_one_line_exit_2_and_writes_nothing(store, tmpfs, tmp_path) -> None:
    ro = tmpfs("1m", read_only=True)
    out = tmp_path / "out"
    res = subprocess.run([sys.executable, "-m", "pipelines", "rebuild", "--store", str(store), "--config",
                          str(store / "broker.conf"), "--master", "local[1]", "--out", str(out), "--tables",
                          str(ro / "tables")], capture_output=True, text=True, cwd=ROOT, timeout=300,
                         env=dict(os.environ, PYSPARK_PYTHON=sys.executable))
    assert res.returncode == 2, res.stderr
    errors = [ln for ln in _lines(res.stderr) if not ln.startswith("[") and not ln.startswith("WARNING: Using")]
    assert len(errors) == 1 and errors[0].startswith(f"error: --tables {ro}/tables") \
        and "Read-only file system" in errors[0], res.stderr
    assert not out.exists()


def test_out_running_out_of_space_mid_run_is_one_line_and_leaves_nothing(store, tmpfs, capsys) -> None:
    small = tmpfs("256k")
    out = small / "out"
    code = main(["rebuild", "--store", str(store), "--config", str(store / "broker.conf"), "--engine", "local",
                 "--processes", "1", "--out", str(out)])
    err = _lines(capsys.readouterr().err)
    assert code == 2
    assert err[-1].startswith(f"error: {out}/.rebuild-staging-") and err[-1].endswith(": No space left on device")
    assert not any("Traceback" in ln for ln in err)
    assert list(small.iterdir()) == []   # no staging, no lock file, OUT as it was (not there)


def test_tables_running_out_of_space_in_the_executors(store, tmpfs, tmp_path) -> None:
    """The tables' tasks fail in Spark's Python workers: the driver sees their traceback as text."""
    small = tmpfs("200k")
    out = tmp_path / "out"
    res = subprocess.run([sys.executable, "-m", "pipelines", "rebuild", "--store", str(store), "--config",
                          str(store / "broker.conf"), "--master", "local[2]", "--out", str(out), "--with-body",
                          "--tables", str(small / "tables")], capture_output=True, text=True, cwd=ROOT, timeout=300,
                         env=dict(os.environ, PYSPARK_PYTHON=sys.executable))
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr and "\tat " not in res.stderr, res.stderr
    failed = [ln for ln in _lines(res.stderr) if "tables not published" in ln]
    assert len(failed) == 1 and failed[0].startswith(f"[rebuild] tables not published: {small}/tables/") \
        and failed[0].endswith(": No space left on device"), res.stderr
    assert list(small.iterdir()) == []   # the staged rows removed
    assert (out / "consumequeue").is_dir()   # the rebuilt files are committed all the same (see rebuild)


def test_staging_of_dead_runs_is_removed_but_not_that_of_the_audit(tmp_path) -> None:
    tables = tmp_path / "tables"
    dead = tables / "messages" / "_staging" / "20260101000000-abcdef" / "segment=0"
    dead.mkdir(parents=True)
    (dead / "part.parquet").write_bytes(b"x")
    (tables / "messages" / "_delta_log").mkdir()
    audit = tables / "expiry_audit" / "_staging" / "run"
    audit.mkdir(parents=True)
    removed = discard_staged_tables(str(tables))
    assert removed == [str(dead.parent)]
    assert not (tables / "messages" / "_staging").exists() and (tables / "messages" / "_delta_log").is_dir()
    assert audit.is_dir()


def test_data_docs_on_a_read_only_file_system_are_refused_before_the_checks(tmpfs, tmp_path) -> None:
    from pipelines.validate.data_docs import docs_folder
    ro = tmpfs("1m", read_only=True)
    with pytest.raises(StoreLayoutError, match=f"--docs {ro}/docs: {ro} is not writable "
                                               r"\(Read-only file system\)"):
        docs_folder(str(tmp_path / "tables"), str(ro / "docs"))
