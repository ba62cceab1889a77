"""``python -m pipelines.package``: the zip that Spark executors import this project from.

    python -m pipelines.package --out dist/rocketmq_offline_index.zip
    spark-submit --master spark://host:7077 --py-files dist/rocketmq_offline_index.zip \\
        pipelines/spark_submit.py rebuild --store hdfs:///rmq/store --out hdfs:///rmq/rebuilt --config broker.conf

The zip holds the packages ``store_format`` and ``pipelines`` (their ``.py`` files and package data,
no ``__pycache__``), at its root, as ``--py-files`` wants them.  Its bytes depend only on the sources
(fixed member order and times), so the same checkout always gives the same zip.  The executors'
Python needs the dependencies installed (numpy, numba, pyarrow; see the README); the zip carries only
this project.
"""
from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
import zipfile
from pathlib import Path

__all__ = ["PACKAGES", "DEFAULT_OUT", "package_files", "build_zip", "main"]

log = logging.getLogger(__name__)

PACKAGES = ("store_format", "pipelines")
DEFAULT_OUT = os.path.join("dist", "rocketmq_offline_index.zip")
# what a package holds besides its modules (pyproject.toml's package-data)
_DATA_SUFFIXES = (".properties",)
_FIXED_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip can record: members carry no build time


def _package_dir(package: str) -> Path:
    """The folder a package is imported from (a checkout or an installed copy)."""
    module = importlib.import_module(package)
    if module.__file__ is None:
        raise ValueError(f"{package} is a namespace package: nothing to ship")
    return Path(module.__file__).resolve().parent


def package_files(packages: tuple[str, ...] = PACKAGES) -> list[tuple[str, Path]]:
    """``(name in the zip, file)`` for every module and data file of ``packages``, sorted by name.

    Raises:
        ValueError: a package is not a folder of ``.py`` files (e.g. it was itself imported from a zip).
    """
    members: list[tuple[str, Path]] = []
    for package in packages:
        root = _package_dir(package)
        if not (root / "__init__.py").is_file():
            raise ValueError(f"{package} is imported from {root}, which is not a source folder; "
                             "run python -m pipelines.package from a checkout or an installed copy")
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))
            for name in filenames:
                if name.endswith(".py") or name.endswith(_DATA_SUFFIXES):
                    path = Path(dirpath) / name
                    members.append(((Path(package) / path.relative_to(root)).as_posix(), path))
    return sorted(members)


def build_zip(out: str | os.PathLike[str], packages: tuple[str, ...] = PACKAGES) -> list[str]:
    """Write the zip of ``packages`` to ``out`` (folders created, an existing file replaced whole).

    Returns:
        The member names, in zip order.
    """
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    members = package_files(packages)
    partial = out.with_name(f".{out.name}.{os.getpid()}.partial")
    try:
        with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for name, path in members:
                info = zipfile.ZipInfo(name, date_time=_FIXED_TIME)
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = 0o644 << 16
                zf.writestr(info, path.read_bytes())
        os.replace(partial, out)
    finally:
        if partial.exists():
            partial.unlink()
    log.info("wrote %s: %d files of %s", out, len(members), ", ".join(packages))
    return [name for name, _ in members]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m pipelines.package", description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--out", default=DEFAULT_OUT, help=f"the zip to write (default {DEFAULT_OUT})")
    args = p.parse_args(argv)
    names = build_zip(args.out)
    size = os.path.getsize(args.out)
    print(f"{args.out}: {len(names)} files ({', '.join(PACKAGES)}), {size:,} bytes; ship it with "
          f"spark-submit --py-files {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
