"""``notebooks/explore_store.ipynb`` runs end to end under papermill on a generated sample store.

The kernel is this interpreter: an ipykernel spec is installed into a temporary Jupyter path for the
test, so a fresh venv needs no user-level kernel.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO_ROOT / "notebooks" / "explore_store.ipynb"
KERNEL_NAME = "rocketmq-offline-index"

pytestmark = [pytest.mark.slow, pytest.mark.spark]


@pytest.fixture
def kernel_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A kernel spec running ``sys.executable``, visible through ``JUPYTER_PATH`` only."""
    from ipykernel.kernelspec import install

    prefix = tmp_path / "jupyter-prefix"
    install(kernel_name=KERNEL_NAME, display_name="rocketmq-offline-index (test)", prefix=str(prefix))
    monkeypatch.setenv("JUPYTER_PATH", str(prefix / "share" / "jupyter"))
    return KERNEL_NAME


def _stdout(cell: dict) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("name") == "stdout")


def test_explore_store_notebook_runs(tmp_path: Path, kernel_name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import nbformat
    import papermill

    # the kernel inherits this environment: sample store under tmp_path, Spark workers on this interpreter
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    monkeypatch.setenv("PYSPARK_DRIVER_PYTHON", sys.executable)
    out = tmp_path / "rebuilt"
    executed = tmp_path / "explore_store.out.ipynb"
    papermill.execute_notebook(str(NOTEBOOK), str(executed), parameters={"out": str(out)}, kernel_name=kernel_name,
                               cwd=str(REPO_ROOT), progress_bar=False, start_timeout=120)

    nb = nbformat.read(executed, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not any(o.get("output_type") == "error" for o in c.get("outputs", [])) for c in code)
    summary_cells = [c for c in code if "summary" in c.metadata.get("tags", [])]
    assert len(summary_cells) == 1
    summary = json.loads(_stdout(summary_cells[0]))
    assert summary["dispatched"] > 0
    assert any((out / "consumequeue").rglob("*")) and any((out / "index").iterdir())
    # the lookup cell found the first keyed message through the rebuilt index files (it asserts so itself)
    lookup = [c for c in code if "lookup" in c.metadata.get("tags", [])]
    assert len(lookup) == 1 and "(commitlog offset " in _stdout(lookup[0])
