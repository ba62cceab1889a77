"""The public facade of ``pipelines``: every name in ``__all__`` resolves, and importing the package
stays cheap (no Spark, none of its own modules until a name is used)."""
from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pipelines

REPO = Path(__file__).resolve().parents[1]


def test_every_public_name_resolves() -> None:
    assert len(set(pipelines.__all__)) == len(pipelines.__all__)
    for name in pipelines.__all__:
        value = getattr(pipelines, name)
        assert value is not None, name
        assert getattr(value, "__name__", name) == name, f"pipelines.{name} is {value!r}"
    assert set(pipelines.__all__) <= set(dir(pipelines))


def test_no_public_name_hides_a_module() -> None:
    # ``from pipelines import lookup`` must keep giving the module, not a function of that name
    modules = {m.name for m in pkgutil.iter_modules(pipelines.__path__)}
    assert not modules & set(pipelines.__all__)


def test_unknown_names_are_attribute_errors() -> None:
    assert not hasattr(pipelines, "no_such_name")


def test_import_pipelines_imports_neither_spark_nor_its_modules() -> None:
    code = ("import json, sys; import pipelines; "
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j', 'numba') "
            "or m.startswith(('pipelines.', 'store_format')))))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env={"PYTHONPATH": str(REPO), "PATH": ""},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []
