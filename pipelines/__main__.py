"""``python -m pipelines <command> ...``; see ``python -m pipelines --help``.

Once a command has returned, the process ends without the interpreter's orderly shutdown: with
numba, LLVM, Arrow and a Py4J gateway loaded that takes a quarter of a second and does nothing a
finished command needs (output is flushed and logging shut down first; the local JVM and spare
Python daemon end when their pipes from this process close, the JVM at once:
:func:`pipelines.session.let_local_jvm_go`).
"""
import logging
import os
import sys

from .cli import main
from .pyspark_private import plain_pyspark

if __name__ == "__main__":
    code = main()
    if plain_pyspark():
        sys.exit(code)   # the interpreter's orderly shutdown
    if "pyspark" in sys.modules:
        from .session import let_local_jvm_go
        let_local_jvm_go()
    sys.stdout.flush()
    sys.stderr.flush()
    logging.shutdown()
    os._exit(code)
