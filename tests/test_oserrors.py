"""One line for an OS error wherever it was raised (pipelines.oserrors): the texts are the forms
Spark, the JDK and pyarrow wrap them in."""
from __future__ import annotations

import errno
import os

import pytest

from pipelines.oserrors import failure_line, missing_module, naming, os_error_line


class Wrapped(Exception):
    """Stands for Py4JJavaError / PythonException: only their text reaches the driver."""


@pytest.mark.parametrize("text, code, path", [
    ("org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
     '  File "/venv/pyarrow/error.pxi", line 92, in check_status\n'
     "OSError: [Errno 28] Error writing bytes to file. Detail: [errno 28] No space left on device\n"
     "The above exception was the direct cause of the following exception:\n"
     "OSError: [Errno 28] No space left on device: '/mnt/t/messages/_staging/r/part.parquet'\n SQLSTATE: 38000",
     errno.ENOSPC, "/mnt/t/messages/_staging/r/part.parquet"),
    ("java.io.FileNotFoundException: /mnt/t/_delta_log/00000.json (Read-only file system)\n\tat java.io.X",
     errno.EROFS, "/mnt/t/_delta_log/00000.json"),
    ("java.nio.file.AccessDeniedException: /data/out/x: Permission denied", errno.EACCES, "/data/out/x"),
    ("OSError: Failed to open local file '/mnt/a/b.parquet'. Detail: [errno 30] Read-only file system",
     errno.EROFS, "/mnt/a/b.parquet"),
    ("java.io.IOException: Input/output error", errno.EIO, None),
])
def test_wrapped_errors_are_found_with_their_path(text: str, code: int, path: str | None) -> None:
    found = os_error_line(Wrapped(text))
    assert found is not None and (found.errno, found.path) == (code, path)
    assert found.line == (f"{path}: {os.strerror(code)}" if path else os.strerror(code))
    assert found.exit_code == (1 if code == errno.EIO else 2)


def test_an_error_without_a_name_gets_the_file_being_written(tmp_path) -> None:
    with pytest.raises(OSError) as info, naming(str(tmp_path / "f")):
        raise OSError(errno.ENOSPC, "Error writing bytes to file")
    found = os_error_line(info.value)
    assert found is not None and found.line == f"{tmp_path / 'f'}: {os.strerror(errno.ENOSPC)}"


def test_no_os_error_gives_none_and_the_task_exception_is_the_failure_line() -> None:
    assert os_error_line(ValueError("bad value")) is None
    wrapped = Wrapped("org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
                      '  File "x.py", line 1, in f\nKeyError: \'topic\'\n SQLSTATE: 38000\n\tat org.apache.X')
    wrapped.java_exception = str(wrapped)  # type: ignore[attr-defined]
    assert failure_line(wrapped) == "KeyError: 'topic'"
    assert failure_line(ValueError("bad value")) == "ValueError: bad value"


def test_a_module_the_executors_lack_is_named() -> None:
    wrapped = Wrapped("org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 3.0 "
                      "failed 4 times\norg.apache.spark.api.python.PythonException: Traceback (most recent call "
                      'last):\n  File "/w/pipelines/index_rocksdb.py", line 97, in write_split_sst\n'
                      "ModuleNotFoundError: No module named 'rocksdict'\n\tat org.apache.X")
    wrapped.java_exception = str(wrapped)  # type: ignore[attr-defined]
    assert missing_module(wrapped) == "rocksdict"
    assert missing_module(Wrapped("org.apache.spark.api.python.PythonException: KeyError: 'topic'")) is None
