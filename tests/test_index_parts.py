"""An index file built in parts side by side (pipelines.build.index_tasks) holds the bytes of the
sequential reput's file."""
from __future__ import annotations

from pathlib import Path

import pipelines.build as build
import pipelines.build_stage as build_stage
from pipelines.rebuild import Progress, run_rebuild
from store_format.config import load_broker_config
from store_format.reput import rebuild_in_memory
from store_format.sample import generate_sample_store
from store_format.store import open_store


def test_index_files_built_in_parts_are_the_reput_s(tmp_path: Path, monkeypatch) -> None:
    config = load_broker_config("mappedFileSizeCommitLog=1048576\nmappedFileSizeConsumeQueue=6000\n"
                                "maxHashSlotNum=97\nmaxIndexNum=5000\n")
    generate_sample_store(str(tmp_path / "store"), config, messages=4000, seed=3)
    monkeypatch.setattr(build, "MIN_INDEX_PART", 600)
    planned: list[list[dict]] = []

    def spy(*args, **kwargs):
        planned.append(build.index_tasks(*args, **kwargs))
        return planned[-1]

    monkeypatch.setattr(build_stage, "index_tasks", spy)
    out = tmp_path / "out"
    run_rebuild(str(tmp_path / "store"), str(out), config, engine="local", processes=2, split_size=200_000,
                progress=Progress(lambda line: None))
    files = {t["task_id"] for t in planned[0]}
    assert len(planned[0]) > len(files) > 1, planned[0]   # several files, some of them in parts
    expected = rebuild_in_memory(open_store(str(tmp_path / "store"), config), config)
    got = [p.read_bytes() for p in sorted((out / "index").iterdir())]
    assert [p.name for p in sorted((out / "index").iterdir())] == [name for name, _ in expected.index]
    assert got == [b for _, b in expected.index]
