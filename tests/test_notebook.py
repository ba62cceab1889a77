"""The notebooks run headless under papermill, on the demo store or a given one, and show what they claim.

The kernel is this interpreter: an ipykernel spec is installed into a temporary Jupyter path for the
test, so a fresh venv needs no user-level kernel.  Each run gets its own ``TMPDIR``: a notebook must
leave no ``rocketmq-*`` folder behind.  The rebuild a notebook runs (``python -m pipelines rebuild`` on
local Spark) is a child process: no JVM lives in the kernel, so none can print a stack trace at shutdown.
"""
from __future__ import annotations

import datetime as dt
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO_ROOT / "notebooks"
NAMES = ["explore_store.ipynb", "find_message.ipynb", "expiry_audit.ipynb"]
KERNEL_NAME = "rocketmq-offline-index"


@pytest.fixture
def kernel_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A kernel spec running ``sys.executable``, visible through ``JUPYTER_PATH`` only."""
    from ipykernel.kernelspec import install

    prefix = tmp_path / "jupyter-prefix"
    install(kernel_name=KERNEL_NAME, display_name="rocketmq-offline-index (test)", prefix=str(prefix))
    monkeypatch.setenv("JUPYTER_PATH", str(prefix / "share" / "jupyter"))
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    monkeypatch.setenv("PYSPARK_DRIVER_PYTHON", sys.executable)
    return KERNEL_NAME


def _execute(name: str, tmp_path: Path, kernel: str, monkeypatch: pytest.MonkeyPatch, tag: str,
             **parameters: Any) -> Any:
    """Run a notebook with papermill in a fresh ``TMPDIR``; check it failed nowhere, left no scratch folder and
    printed no JVM or Python stack trace."""
    import nbformat
    import papermill

    tmpdir = tmp_path / f"tmp-{tag}"
    tmpdir.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmpdir))  # the kernel inherits it: tempfile.mkdtemp goes there
    executed = tmp_path / f"{tag}.out.ipynb"
    try:
        papermill.execute_notebook(str(NOTEBOOKS / name), str(executed), parameters=parameters, kernel_name=kernel,
                                   cwd=str(REPO_ROOT), progress_bar=False, start_timeout=120)
    finally:
        assert not list(tmpdir.glob("rocketmq-*")), f"{name} left {list(tmpdir.glob('rocketmq-*'))}"
    nb = nbformat.read(executed, as_version=4)
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            assert out.get("output_type") != "error", out
            if out.get("output_type") == "stream" and out.get("name") == "stderr":
                text = out.get("text", "")
                assert "Traceback" not in text and "py4j" not in text and "Exception" not in text, text
    return nb


def _code(nb: Any, tag: str) -> list[Any]:
    return [c for c in nb.cells if c.cell_type == "code" and tag in c.metadata.get("tags", [])]


def _summary(nb: Any) -> dict:
    cells = _code(nb, "summary")
    assert len(cells) == 1
    text = "".join(o.get("text", "") for o in cells[0].get("outputs", []) if o.get("name") == "stdout")
    return json.loads(text)


def _images(nb: Any) -> int:
    return sum("image/png" in o.get("data", {}) for c in nb.cells for o in c.get("outputs", []))


def _store(root: Path, *, with_conf: bool = True) -> Path:
    from store_format.config import load_broker_config
    from store_format.sample import DEMO_BROKER_CONF, generate_sample_store, write_broker_conf

    config = load_broker_config(DEMO_BROKER_CONF, mappedFileSizeCommitLog=1 << 20)
    generate_sample_store(str(root), config, messages=3000, body_size=128, seed=3)
    if with_conf:
        write_broker_conf(str(root / "broker.conf"), config)
    return root


# ---------------------------------------------------------------------------------------------
# the files as committed


@pytest.mark.parametrize("name", NAMES)
def test_notebook_is_stripped_and_parameterised(name: str) -> None:
    import nbformat

    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in code), "outputs not stripped"
    params = _code(nb, "parameters")
    assert len(params) == 1 and code.index(params[0]) == 0
    for setting in ("store = None", "config = None", "tables = None", "out = None"):
        assert setting in params[0].source


# ---------------------------------------------------------------------------------------------
# runs


@pytest.mark.slow
@pytest.mark.spark
def test_explore_store_on_the_demo_store(tmp_path: Path, kernel_name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import pyarrow.compute as pc

    from pipelines.delta import read_arrow

    out = tmp_path / "out"
    nb = _execute("explore_store.ipynb", tmp_path, kernel_name, monkeypatch, "explore", out=str(out), messages=4000)
    summary = _summary(nb)
    tables = str(out / "tables")
    assert summary["rebuilt"] is True and summary["tables"] == tables
    assert _images(nb) >= 3  # segment ranges, rate per topic, queue depth

    segments = read_arrow(tables, "segments")
    live = segments.filter(pc.equal(segments["status"], "live"))
    assert summary["segments"] == live.num_rows >= 2
    messages = read_arrow(tables, "messages", ["topic", "consume_queue"])
    assert summary["records"] == summary["rate_records"] == messages.num_rows == 4000
    assert summary["queue_messages"] == pc.sum(messages["consume_queue"].cast("int64")).as_py()
    assert set(summary["topics"]) == set(messages["topic"].to_pylist())
    keys = read_arrow(tables, "message_keys", ["topic", "key", "kind"]).to_pylist()
    counts = Counter((r["topic"], r["key"]) for r in keys if r["kind"] == "key")
    top = summary["top_keys"]
    assert len(top) == 10
    assert [r["messages"] for r in top] == sorted((n for n in counts.values()), reverse=True)[:10]
    assert all(counts[(r["topic"], r["key"])] == r["messages"] for r in top)
    assert summary["anomalies"] == {}


@pytest.mark.slow
@pytest.mark.spark
def test_find_message_through_tables_and_index_files(tmp_path: Path, kernel_name: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from pipelines.delta import read_arrow

    store = _store(tmp_path / "store")
    out = tmp_path / "out"
    nb = _execute("find_message.ipynb", tmp_path, kernel_name, monkeypatch, "find", store=str(store), out=str(out))
    found = _summary(nb)
    assert found["rebuilt"] is True and found["bodies_kept"] is True and found["agree"] is True

    # what the tables hold, read plainly
    msgs = read_arrow(str(out / "tables"), "messages", ["commitlog_offset", "topic", "keys", "uniq_key"]).to_pylist()
    by_key = sorted(m["commitlog_offset"] for m in msgs if m["topic"] == found["topic"] and found["key"] in m["keys"])
    by_id = sorted(m["commitlog_offset"] for m in msgs if m["uniq_key"] == found["msg_id"])
    assert by_key and found["by_key"] == found["by_key_index"] == by_key
    assert by_id and found["by_msg_id"] == found["by_msg_id_index"] == by_id
    assert found["bodies_shown"] == len(by_key) + len(by_id)
    assert "kept in the messages table" in "".join(
        o.get("text", "") for c in _code(nb, "helpers") for o in c.get("outputs", []))

    # given published tables and a key: no rebuild, the same answer
    again = _summary(_execute("find_message.ipynb", tmp_path, kernel_name, monkeypatch, "find-again",
                              store=str(store), tables=str(out / "tables"), index=str(out / "index"),
                              topic=found["topic"], key=found["key"], msg_id=found["msg_id"]))
    assert again["rebuilt"] is False
    assert {k: again[k] for k in ("by_key", "by_key_index", "by_msg_id", "by_msg_id_index", "agree")} == \
           {k: found[k] for k in ("by_key", "by_key_index", "by_msg_id", "by_msg_id_index", "agree")}


@pytest.mark.slow
@pytest.mark.spark
def test_expiry_audit_on_the_demo_store(tmp_path: Path, kernel_name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import pyarrow.compute as pc

    from pipelines.delta import read_arrow

    out = tmp_path / "out"
    as_of = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    nb = _execute("expiry_audit.ipynb", tmp_path, kernel_name, monkeypatch, "expiry", out=str(out),
                  as_of=as_of.isoformat())
    audit = _summary(nb)
    assert _images(nb) >= 2  # the timeline and the losses per group
    assert audit["as_of"].startswith(as_of.strftime("%Y-%m-%dT%H:%M:%S"))
    segments = sorted(read_arrow(str(out / "tables"), "segments")["segment"].to_pylist())
    # messages spread over five days in three segments: only the first is older than fileReservedTime (72 h)
    assert len(segments) == 3 and audit["segments_at_next_cleanup"] == segments[:1]
    # the lagging group loses the consume-queued SampleTopic0 messages of that segment, the caught-up one nothing
    msgs = read_arrow(str(out / "tables"), "messages", ["segment", "topic", "consume_queue"])
    first = msgs.filter(pc.and_(pc.equal(msgs["segment"], segments[0]), pc.equal(msgs["topic"], "SampleTopic0")))
    expected = pc.sum(first["consume_queue"].cast("int64")).as_py()
    assert expected > 0
    assert audit["lost_per_group"] == {"demo-caught-up": 0, "demo-lagging": expected}
    assert audit["total_lost_messages"] == expected


@pytest.mark.slow
def test_a_store_without_broker_conf_is_an_error(tmp_path: Path, kernel_name: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from papermill.exceptions import PapermillExecutionError

    store = _store(tmp_path / "store", with_conf=False)
    with pytest.raises(PapermillExecutionError, match="has no broker.conf and no config was given"):
        _execute("explore_store.ipynb", tmp_path, kernel_name, monkeypatch, "noconf", store=str(store))
