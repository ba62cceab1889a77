"""The driver's side of the spare Python daemon of local sessions (see :mod:`pipelines.sparkdaemon`):
start it next to the JVM and name its socket in the environment the JVM inherits."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from typing import Any

__all__ = ["start_spare", "SPARE_ENV"]

SPARE_ENV = "PIPELINES_SPARE_DAEMON"   # the spare's socket path, inherited by the JVM and its daemon


# its own process group from the start: a Ctrl-C at the terminal while it starts up (before it
# ignores SIGINT) is not its to handle (Popen's process_group is new in Python 3.11)
_OWN_GROUP: dict[str, Any] = {"process_group": 0} if sys.version_info >= (3, 11) else {}


def start_spare() -> subprocess.Popen | None:
    """Start a spare daemon and name its socket in this process's environment (which the JVM about
    to be launched inherits).  The socket listens before this returns, so a launch never misses the
    spare.  The spare exits when this process does (its stdin is a pipe from here)."""
    folder = tempfile.mkdtemp(prefix="pipelines-daemon-")   # mode 0700: the socket carries the secret
    path = os.path.join(folder, "spare.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(path)
        listener.listen(1)
        proc = subprocess.Popen([sys.executable, "-m", "pipelines.sparkdaemon", "--spare", path,
                                 str(listener.fileno())], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                pass_fds=[listener.fileno()], **_OWN_GROUP)
    except OSError:
        shutil.rmtree(folder, ignore_errors=True)
        return None
    finally:
        listener.close()
    os.environ[SPARE_ENV] = path
    _SPARES.append(proc)
    return proc


_SPARES: list[subprocess.Popen] = []   # kept referenced: they end with this process


