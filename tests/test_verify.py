"""``verify`` and ``repair`` on broker-written golden stores damaged in controlled ways.

A "good" store is a golden case's commitlog with the broker's own ``expected/consumequeue`` and
``expected/index`` beside it.  Rebuilds run with ``engine="local"`` (the same tasks, no JVM).
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from pipelines import cli
from pipelines.verify import check_broker, repair_store, verify_store
from store_format.errors import StoreError
from store_format.javahash import index_key_hash
from store_format.layout import CQ_UNIT_DTYPE, INDEX_ENTRY_SIZE, INDEX_HEADER_SIZE, INDEX_SLOT_SIZE
from store_format.store import load_config_for

REPO = Path(__file__).resolve().parents[1]
CASE = "index-rollover-4.9.8"  # 8 MB commitlog, 32 consume queue files of 300 units, 16 index files of 7 slots

CQ_CHANGED = "BasicTopic1/1/00000000000000000000"
CQ_DELETED = "BasicTopic0/0/00000000000000000000"
CQ_EXTRA = "BasicTopic2/2/00000000000000012000"
CQ_EXTRA_SOURCE = "BasicTopic2/2/00000000000000006000"
CHANGED_UNIT = 10
INDEX_CHANGED_NO, INDEX_TRUNCATED_NO, CHANGED_ENTRY = 3, 7, 5


# ---------------------------------------------------------------------------------------------
# helpers


@pytest.fixture(autouse=True)
def _restore_cli_logging():
    """cli.main attaches a handler bound to the sys.stderr of the moment (capsys's, closed after the
    test); put the "pipelines" logger back as it was."""
    logger = logging.getLogger("pipelines")
    saved = (logger.handlers[:], logger.propagate, logger.level)
    yield
    logger.handlers[:], logger.propagate = saved[0], saved[1]
    logger.setLevel(saved[2])


def make_store(golden_dir: Path, tmp_path: Path, case: str = CASE, name: str = "store") -> tuple[Path, str]:
    src = golden_dir / case
    root = tmp_path / name
    root.mkdir()
    shutil.copytree(src / "store" / "commitlog", root / "commitlog")
    shutil.copytree(src / "expected" / "consumequeue", root / "consumequeue")
    shutil.copytree(src / "expected" / "index", root / "index")
    return root, str(src / "broker.conf")


def tree(root: Path, *, stats: bool = False) -> dict[str, object]:
    """relative path → sha256 (and size, mode, mtime with ``stats``) of every file and folder."""
    out: dict[str, object] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            p = Path(dirpath) / d
            out[str(p.relative_to(root)) + "/"] = "dir"
        for f in filenames:
            p = Path(dirpath) / f
            digest = hashlib.sha256(p.read_bytes()).hexdigest()
            st = p.stat()
            out[str(p.relative_to(root))] = (digest, st.st_size, st.st_mode, st.st_mtime_ns) if stats else digest
    return out


def files_of(root: Path) -> dict[str, bytes]:
    """Bytes of every file under consumequeue/ and index/."""
    out = {}
    for area in ("consumequeue", "index"):
        for p in sorted((root / area).rglob("*")):
            if p.is_file():
                out[str(p.relative_to(root))] = p.read_bytes()
    return out


def cq_files(root: Path) -> list[Path]:
    return sorted(p for p in (root / "consumequeue").rglob("*") if p.is_file())


def index_names(root: Path) -> list[str]:
    return sorted(os.listdir(root / "index"))


def damage(root: Path) -> dict:
    """The five damages: a consume queue file deleted, one unit changed, one index entry changed,
    an index file truncated, an extra consume queue file.  Returns what was done."""
    cq = root / "consumequeue"
    (cq / CQ_DELETED).unlink()
    p = cq / CQ_CHANGED
    b = bytearray(p.read_bytes())
    units = np.frombuffer(bytes(b), dtype=CQ_UNIT_DTYPE)
    old = units[CHANGED_UNIT].copy()
    b[CHANGED_UNIT * 20 + 8:CHANGED_UNIT * 20 + 12] = int(old["size"] + 1).to_bytes(4, "big", signed=True)
    p.write_bytes(bytes(b))
    shutil.copyfile(cq / CQ_EXTRA_SOURCE, cq / CQ_EXTRA)
    names = index_names(root)
    slots = 7  # maxHashSlotNum of the case
    p = root / "index" / names[INDEX_CHANGED_NO]
    b = bytearray(p.read_bytes())
    pos = INDEX_HEADER_SIZE + INDEX_SLOT_SIZE * slots + INDEX_ENTRY_SIZE * CHANGED_ENTRY
    key_hash = int.from_bytes(b[pos:pos + 4], "big", signed=True)
    offset = int.from_bytes(b[pos + 4:pos + 12], "big", signed=True)
    b[pos + 4:pos + 12] = (offset + 1).to_bytes(8, "big", signed=True)
    p.write_bytes(bytes(b))
    p = root / "index" / names[INDEX_TRUNCATED_NO]
    size = p.stat().st_size
    os.truncate(p, size // 2)
    return {"unit": old, "entry_hash": key_hash, "entry_offset": offset, "index_size": size}


def run_cli(args: list[str], capsys) -> tuple[int, str, str]:
    rc = cli.main(args)
    out = capsys.readouterr()
    return rc, out.out, out.err


# ---------------------------------------------------------------------------------------------
# verify


@pytest.mark.golden
@pytest.mark.parametrize("case", [CASE, "basic-5.3.3", "rebased-4.9.8", "lmq-4.9.8"])
def test_verify_good_store_is_identical_and_read_only(golden_dir, tmp_path, capsys, case):
    root, conf = make_store(golden_dir, tmp_path, case)
    for dirpath, dirnames, filenames in os.walk(root):  # chmod -R a-w
        for name in [*dirnames, *filenames]:
            p = os.path.join(dirpath, name)
            os.chmod(p, os.stat(p).st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    os.chmod(root, 0o555)
    before = tree(root, stats=True)
    try:
        rc, out, _ = run_cli(["verify", "--store", str(root), "--config", conf, "--engine", "local", "--json"],
                             capsys)
        after = tree(root, stats=True)
    finally:
        os.chmod(root, 0o755)
    assert rc == 0
    report = json.loads(out)
    assert report["identical"] is True
    assert report["consume_queue"] == [] and report["index"] == []
    assert report["counts"]["consume_queue"]["identical"] == len(cq_files(root))
    assert report["restart"]["units_lost"] == 0 and report["restart"]["units_dispatched_again"] == 0
    # running as root, chmod does not stop writes: the snapshot (content, size, mode, mtime) is the check
    assert after == before


@pytest.mark.golden
def test_verify_finds_exactly_the_damage(golden_dir, tmp_path, capsys):
    root, conf = make_store(golden_dir, tmp_path)
    names = index_names(root)
    info = damage(root)
    config = load_config_for(conf)
    report = verify_store(str(root), config, engine="local")
    assert not report.identical
    by_status: dict[str, set[str]] = {}
    for r in report.consume_queue:
        by_status.setdefault(r.status, set()).add(r.path)
    assert by_status.pop("missing") == {CQ_DELETED}
    assert by_status.pop("differs") == {CQ_CHANGED}
    assert by_status.pop("extra") == {CQ_EXTRA}
    assert set(by_status) == {"identical"}

    changed = next(r for r in report.consume_queue if r.path == CQ_CHANGED)
    assert changed.differing_units == 1
    d = changed.first_difference
    assert d.queue_offset == CHANGED_UNIT and d.position == CHANGED_UNIT * 20
    assert d.expected.size == int(info["unit"]["size"]) and d.found.size == int(info["unit"]["size"]) + 1
    assert d.expected.commitlog_offset == d.found.commitlog_offset == int(info["unit"]["commitlogOffset"])
    assert d.expected.tags_code == d.found.tags_code == int(info["unit"]["tagsCode"])

    diffs = {r.number: r for r in report.index if r.status != "identical"}
    assert set(diffs) == {INDEX_CHANGED_NO, INDEX_TRUNCATED_NO}
    assert all(r.status == "differs" for r in diffs.values())
    entry = diffs[INDEX_CHANGED_NO]
    assert entry.store_name == names[INDEX_CHANGED_NO]
    assert entry.differing_entries == 1 and entry.differing_slots == 0 and entry.differing_header_fields == []
    assert entry.unreachable_entries == 1 and entry.spurious_entries == 1
    [example] = entry.examples
    assert example.commitlog_offset == info["entry_offset"] and example.key_hash == info["entry_hash"]
    assert example.key is not None and index_key_hash(example.key) == info["entry_hash"]
    assert example.key.startswith("BasicTopic")
    cut = diffs[INDEX_TRUNCATED_NO]
    assert cut.found_size == info["index_size"] // 2 and cut.expected_size == info["index_size"]
    assert cut.unreachable_entries > 0 and len(cut.examples) == 3
    assert all(e.key and index_key_hash(e.key) == e.key_hash for e in cut.examples)

    # the next start: the extra file lies after the queue's last unit, so recover deletes it with its units;
    # the deleted file's 300 units are never written back (the reput restarts at the end)
    p = report.restart
    assert not p.start_fails
    queues = {q.queue: q for q in p.queues}
    extra_q = queues["BasicTopic2/2"]
    assert extra_q.files_deleted_by_recover == ["00000000000000012000"]
    source_units = np.frombuffer((root / "consumequeue" / CQ_EXTRA_SOURCE).read_bytes(), dtype=CQ_UNIT_DTYPE)
    assert extra_q.units_dropped_by_recover == int((source_units["size"] > 0).sum())
    assert queues["BasicTopic0/0"].units_lost == 300 == p.units_lost
    assert p.tail_bytes == 0 and p.units_dispatched_again == 0
    assert p.index_files_extended == [names[INDEX_TRUNCATED_NO]]

    rc, out, _ = run_cli(["verify", "--store", str(root), "--config", conf, "--engine", "local"], capsys)
    assert rc == 1
    assert out.splitlines()[0].startswith("verify: DIFFERENT:")
    assert f"missing  {CQ_DELETED}" in out and f"extra    {CQ_EXTRA}" in out


def _zero_units(root: Path, keep: Callable[[np.ndarray], np.ndarray]) -> int:
    """Zero every consume queue unit for which keep(offset) is false; returns how many."""
    n = 0
    for p in cq_files(root):
        raw = bytearray(p.read_bytes())
        units = np.frombuffer(bytes(raw), dtype=CQ_UNIT_DTYPE)
        for k in np.flatnonzero((units["size"] > 0) & ~keep(units["commitlogOffset"].astype(np.int64))):
            raw[k * 20:(k + 1) * 20] = bytes(20)
            n += 1
        p.write_bytes(bytes(raw))
    return n


def _all_units(root: Path) -> np.ndarray:
    parts = [np.frombuffer(p.read_bytes(), dtype=CQ_UNIT_DTYPE) for p in cq_files(root)]
    u = np.concatenate(parts)
    return u[(u["size"] > 0) & (u["size"] != 0x7FFFFFFF)]


@pytest.mark.golden
@pytest.mark.parametrize("case", [CASE, "basic-5.3.3"])
def test_restart_prediction_of_a_lagging_store(golden_dir, tmp_path, case):
    """All queues lose their last units: the restart dispatches the tail again, nothing is lost.
    4.9.x reputs from the queues' max physical offset; 5.x's recovery dispatches only records
    strictly after it."""
    root, conf = make_store(golden_dir, tmp_path, case)
    offsets = np.sort(_all_units(root)["commitlogOffset"].astype(np.int64))
    cut = int(offsets[-40])
    zeroed = _zero_units(root, lambda off: off < cut)
    assert zeroed == 40
    report = verify_store(str(root), load_config_for(conf), engine="local")
    p = report.restart
    kept = _all_units(root)
    max_end = int((kept["commitlogOffset"].astype(np.int64) + kept["size"]).max())
    assert p.max_physic_offset_in_queues == max_end == p.reput_from
    if case.endswith("5.3.3"):
        assert p.broker_version == "5" and not p.reput_from_inclusive
        # the record that starts exactly at the queues' max physical offset is not dispatched again,
        # and the reput then starts at the commitlog's end: its unit is lost
        at_max = 1 if cut == max_end else 0
        assert at_max == 1  # the first removed unit is the record right after the last one kept
        assert p.units_dispatched_again == zeroed - at_max and p.units_lost == at_max
    else:
        assert p.broker_version == "4" and p.reput_from_inclusive
        assert p.units_dispatched_again == zeroed and p.units_lost == 0
    assert p.tail_bytes == p.commitlog_end - (p.reput_from + (0 if p.reput_from_inclusive else 1))


@pytest.mark.golden
def test_restart_prediction_lagging_queue_and_units_past_the_end(golden_dir, tmp_path):
    """One queue loses its last units while the others are complete: the reput restarts at the
    end and they are lost.  A unit pointing past the commitlog's end is cut by
    truncateDirtyLogicFiles."""
    root, conf = make_store(golden_dir, tmp_path)
    lag = root / "consumequeue" / "BasicTopic1/2/00000000000000006000"
    raw = bytearray(lag.read_bytes())
    units = np.frombuffer(bytes(raw), dtype=CQ_UNIT_DTYPE)
    n = int((units["size"] > 0).sum())
    raw[(n - 5) * 20:n * 20] = bytes(100)
    lag.write_bytes(bytes(raw))
    past = root / "consumequeue" / "BasicTopic3/3/00000000000000006000"
    raw = bytearray(past.read_bytes())
    units = np.frombuffer(bytes(raw), dtype=CQ_UNIT_DTYPE)
    m = int((units["size"] > 0).sum())
    report0 = verify_store(str(root), load_config_for(conf), engine="local")
    end = report0.restart.commitlog_end
    raw[m * 20:(m + 1) * 20] = (end + 100).to_bytes(8, "big") + (50).to_bytes(4, "big") + bytes(8)
    past.write_bytes(bytes(raw))
    report = verify_store(str(root), load_config_for(conf), engine="local")
    p = report.restart
    queues = {q.queue: q for q in p.queues}
    assert queues["BasicTopic1/2"].units_lost == 5 == p.units_lost
    assert p.truncate_dirty_logic_files and p.max_physic_offset_in_queues == end + 150
    assert queues["BasicTopic3/3"].units_truncated == 1 == p.units_truncated
    assert p.reput_from == end and p.units_dispatched_again == 0


# ---------------------------------------------------------------------------------------------
# repair


@pytest.mark.golden
def test_repair_restores_byte_identity(golden_dir, tmp_path):
    good, conf = make_store(golden_dir, tmp_path, name="good")
    root, _ = make_store(golden_dir, tmp_path)
    damage(root)
    damaged = files_of(root)
    result = repair_store(str(root), load_config_for(conf), engine="local")
    assert files_of(root) == files_of(good)  # index files keep the store's (the broker's) names
    assert not [p for p in root.iterdir() if p.name.startswith(".repair-work")]
    manifest = json.loads((Path(result.backup) / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["index_mode"] == "by_name"
    actions = {a["path"]: a for a in manifest["actions"]}
    assert {p: a["action"] for p, a in actions.items()} == {
        f"consumequeue/{CQ_DELETED}": "add", f"consumequeue/{CQ_CHANGED}": "replace",
        f"consumequeue/{CQ_EXTRA}": "remove", f"index/{index_names(good)[INDEX_CHANGED_NO]}": "replace",
        f"index/{index_names(good)[INDEX_TRUNCATED_NO]}": "replace"}
    for path, a in actions.items():
        assert a["done"]
        if a["action"] in ("replace", "remove"):
            old = damaged[path]
            assert a["sha256_before"] == hashlib.sha256(old).hexdigest()
            assert (Path(result.backup) / a["backup"]).read_bytes() == old
        if a["action"] in ("replace", "add"):
            assert a["sha256_after"] == hashlib.sha256((root / path).read_bytes()).hexdigest()
        else:
            assert not (root / path).exists()
    assert len((Path(result.backup) / "manifest.journal").read_text().splitlines()) == 5
    assert verify_store(str(root), load_config_for(conf), engine="local").identical


@pytest.mark.golden
def test_repair_replaces_the_index_set_when_counts_differ(golden_dir, tmp_path):
    good, conf = make_store(golden_dir, tmp_path, name="good")
    root, _ = make_store(golden_dir, tmp_path)
    names = index_names(root)
    (root / "index" / names[5]).unlink()
    report = verify_store(str(root), load_config_for(conf), engine="local")
    assert [(r.status, r.number) for r in report.index if r.status != "identical"] == [("missing", 5)]
    result = repair_store(str(root), load_config_for(conf), engine="local")
    assert result.plan.index_mode == "replace_all" and result.plan.notes
    new_names = index_names(root)
    assert len(new_names) == len(names) and not set(new_names) & set(names)
    assert [(root / "index" / n).read_bytes() for n in new_names] == \
        [(good / "index" / n).read_bytes() for n in names]
    assert verify_store(str(root), load_config_for(conf), engine="local").identical


@pytest.mark.golden
def test_repair_dry_run_touches_nothing(golden_dir, tmp_path, capsys):
    root, conf = make_store(golden_dir, tmp_path)
    damage(root)
    before = tree(root, stats=True)
    rc, out, _ = run_cli(["repair", "--store", str(root), "--config", conf, "--engine", "local", "--dry-run"], capsys)
    assert rc == 1
    assert "repair plan: 1 add, 3 replace, 1 remove" in out and "dry run: nothing was changed" in out
    assert tree(root, stats=True) == before


@pytest.mark.golden
def test_repair_refuses_while_a_broker_may_run(golden_dir, tmp_path, capsys):
    root, conf = make_store(golden_dir, tmp_path)
    damage(root)
    (root / "abort").write_text("999999999")
    before = tree(root)
    rc, _, err = run_cli(["repair", "--store", str(root), "--config", conf, "--engine", "local"], capsys)
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert "abort exists" in err and "pid 999999999, not running here" in err and "--force" in err
    assert tree(root) == before
    result = repair_store(str(root), load_config_for(conf), engine="local", force=True)
    assert result.applied == 5 and any("--force" in n for n in result.notes)


JAVA_LOCK_HOLDER = textwrap.dedent("""
    import java.io.RandomAccessFile;
    import java.nio.channels.FileLock;
    public class LockHolder {
        public static void main(String[] args) throws Exception {
            // as DefaultMessageStore: RandomAccessFile "rw", then tryLock(0, 1, false)
            RandomAccessFile f = new RandomAccessFile(args[0], "rw");
            FileLock lock = f.getChannel().tryLock(0, 1, false);
            System.out.println(lock == null ? "busy" : "locked");
            System.out.flush();
            Thread.sleep(60000);
        }
    }
""")


@pytest.mark.golden
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("java") is None, reason="needs a JDK to hold the lock as a broker does")
def test_repair_refuses_when_a_jvm_holds_the_lock(golden_dir, tmp_path):
    root, conf = make_store(golden_dir, tmp_path)
    damage(root)
    (root / "lock").write_bytes(b"")
    src = tmp_path / "LockHolder.java"
    src.write_text(JAVA_LOCK_HOLDER)
    jvm = subprocess.Popen(["nice", "-n", "19", "java", str(src), str(root / "lock")], stdout=subprocess.PIPE,
                           text=True)
    try:
        assert jvm.stdout.readline().strip() == "locked"
        check = check_broker(str(root))
        assert check.lock_holder_pid == jvm.pid and check.broker_may_be_running
        with pytest.raises(StoreError, match=f"process {jvm.pid} holds the lock"):
            repair_store(str(root), load_config_for(conf), engine="local")
    finally:
        jvm.kill()
        jvm.wait()
    assert not check_broker(str(root)).broker_may_be_running
    result = repair_store(str(root), load_config_for(conf), engine="local")
    assert result.applied == 5 and "held the broker's lock file while repairing" in result.notes


KILLER = textwrap.dedent("""
    import os, signal, sys
    from pipelines.verify import repair_store
    from store_format.store import load_config_for
    store, conf, kill_at = sys.argv[1], sys.argv[2], int(sys.argv[3])
    finished = []

    def hook(event, i, action):
        if event in ("replaced", "removed"):
            finished.append(i)
        # SIGKILL once kill_at actions are complete and the next new file is staged, not yet renamed
        if event == "staged" and len(finished) == kill_at:
            print("killing", action.path, flush=True)
            os.kill(os.getpid(), signal.SIGKILL)

    repair_store(store, load_config_for(conf), engine="local", hook=hook)
""")


@pytest.mark.golden
@pytest.mark.slow
def test_interrupted_repair_leaves_old_or_new_files_and_a_rerun_completes(golden_dir, tmp_path):
    good, conf = make_store(golden_dir, tmp_path, name="good")
    root, _ = make_store(golden_dir, tmp_path)
    damage(root)
    old, new = files_of(root), files_of(good)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    # actions in plan order: add, replace (cq), remove, replace (index), replace (index): kill while the
    # fourth action's new file is staged, after three are done
    proc = subprocess.run(["nice", "-n", "19", sys.executable, "-c", KILLER, str(root), conf, "3"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert "killing index/" in proc.stdout
    now = files_of(root)
    leftovers = [p for p in now if p not in old and p not in new]
    assert len(leftovers) == 1 and ".repair-" in leftovers[0] and leftovers[0].endswith(".tmp")
    for path in set(old) | set(new):
        state = now.get(path)
        assert state in (old.get(path), new.get(path)), path
    assert now[f"consumequeue/{CQ_DELETED}"] == new[f"consumequeue/{CQ_DELETED}"]  # done before the kill
    idx = f"index/{index_names(good)[INDEX_CHANGED_NO]}"
    assert now[idx] == old[idx]  # staged, not yet in place
    # the half-done repair is visible to verify, and a second run completes it
    report = verify_store(str(root), load_config_for(conf), engine="local")
    assert any("interrupted repair" in r.note for r in report.index if r.status == "extra")
    result = repair_store(str(root), load_config_for(conf), engine="local")
    assert any(a.action == "drop_leftover" for a in result.plan.actions)
    assert files_of(root) == new
    assert not [p for p in root.iterdir() if p.name.startswith(".repair-work")]
    assert verify_store(str(root), load_config_for(conf), engine="local").identical


def test_verify_errors_are_one_line(tmp_path, capsys):
    rc, _, err = run_cli(["verify", "--store", str(tmp_path / "nowhere"), "--engine", "local"], capsys)
    assert rc == 2 and err.startswith("error: ") and len(err.strip().splitlines()) == 1
    (tmp_path / "s" / "commitlog").mkdir(parents=True)
    rc, _, err = run_cli(["verify", "--store", str(tmp_path / "s"), "--work", str(tmp_path / "s" / "w"),
                          "--engine", "local"], capsys)
    assert rc == 2 and "inside the store" in err


@pytest.mark.golden
def test_timer_files_are_named_as_not_checked(golden_dir, tmp_path):
    """The 5.x timer's wheel and log are not derivable from the commitlog: verify says it leaves them
    alone (and why), and still checks the consume queues; a store without them gets no such line.  So is
    5.5's ``rocksdbstore/`` (its transaction and timer families are not derivable either)."""
    root, conf = make_store(golden_dir, tmp_path, "basic-5.3.3")
    plain = verify_store(str(root), load_config_for(conf), engine="local")
    assert plain.identical and plain.not_checked == [] and "not checked" not in plain.render()
    (root / "timerwheel").write_bytes(bytes(64))
    (root / "timerlog").mkdir()
    (root / "timerlog" / "00000000000000000000").write_bytes(bytes(64))
    report = verify_store(str(root), load_config_for(conf), engine="local")
    assert report.identical
    assert [n.split("/")[0] for n in report.not_checked] == ["timerwheel", "timerlog"]
    assert all("TimerMessageStore" in n for n in report.not_checked)
    assert report.render().count("\nnot checked: ") == 2 and report.as_dict()["not_checked"] == report.not_checked
    (root / "rocksdbstore").mkdir()     # 5.5's message RocksDB database: named too
    report = verify_store(str(root), load_config_for(conf), engine="local")
    assert report.identical and [n.split("/")[0] for n in report.not_checked] == ["timerwheel", "timerlog",
                                                                                 "rocksdbstore"]
    assert "MessageRocksDBStorage" in report.not_checked[2]
