"""Restarts whose own reput puts blanks' empty requests and multi-dispatch requests naming an empty queue into topic
"" queue 0 (``consumequeue/0/``), for :mod:`test_topic_empty_mix_restart_broker`.

The stores of :mod:`broker_topic_empty_mix_scenarios` (5.x ``enableBuildConsumeQueueConcurrently=true``,
``",%LMQ%a"`` requests on records of queue 0; the same damage, the last record before the second segment's blank made
to reach that file's end, but written before the restart: the writer's ``restartDamage``, so ``before/`` holds it),
followed by :data:`PREPARED` prepared transaction messages (no consume queue unit) that fill the last files.  The
restart (queue folders and ``index/`` deleted): ``commitLogRecoverMaxNum=2``, so the 5.5.1 recovery walks the last
two files alone (past the damaged record) and queues nothing; ``recheckReputOffsetFromCq=true``, so
``doRecheckReputOffsetFromCq`` sets the reput at the commitlog's min offset (the queue table is empty) and the
concurrent reput walks the store again, reading the blank inside the damaged record (its empty request) and the
empty-name requests around it.

* ``-after`` / ``-before`` (with consume queue ext files): the requests of the same names there, a clean shutdown;
  ``-crash``: after a crash (an ``abort`` file).
* ``-held``: files planted before the restart (``plantFiles``): ``-after-held`` a full first file in
  ``consumequeue/0/``; ``-before-held-crash`` a shorter one there, a full first ext file and a second one in
  ``consumequeue_ext/0/``.

5.5.1 (``-after-held`` and ``-before-held-crash`` by default; ``PIPELINES_FULL_SUITE=1`` the others).  5.3.3
(``PIPELINES_FULL_SUITE=1``, no files planted): its recovery walks from the first file (no
``commitLogRecoverMaxNum``), so it cuts at the damaged record and the mix never forms.
"""
from __future__ import annotations

import base64

import broker_harness as bh
from broker_concurrent_scenarios import BLANKON
from broker_layout_scenarios import Messages
from broker_topic_empty_mix_scenarios import EXT, FULL, REQUESTS, _messages, mix_scenarios

LINES = ("5.5.1", "5.3.3") if FULL else ("5.5.1",)
PREPARED = 40   # about five 8 KiB files: the last two hold nothing else
CQ = f"consumequeue/0/{0:020d}"
EXT_FIRST = f"consumequeue_ext/0/{0:020d}"
EXT_SIZE = int(EXT["mappedFileSizeConsumeQueueExt"])
EXT_NEXT = f"consumequeue_ext/0/{EXT_SIZE:020d}"


def planted(size: int, seed: int) -> bytes:
    """``size`` non-zero bytes."""
    return bytes((i * 7 + seed) % 251 + 1 for i in range(size))


def restart_scenarios(line: str) -> list[dict]:
    base = {sc["name"].rsplit("-", 1)[1]: sc for sc in mix_scenarios(line)}
    g = Messages(57, ["T0", "T1", "T2"])
    prepared = [g.one(tranType="prepared") for _ in range(PREPARED)]
    out = []
    for kind, ext in (("after", False), ("before", True)):
        config = {**base[kind]["config"], "recheckReputOffsetFromCq": "true", "commitLogRecoverMaxNum": "2",
                  **(EXT if ext else {})}
        sc = {"name": f"{line}-creput-empty-mix-restart-{kind}", "messages": _messages(REQUESTS[kind]) + prepared,
              "config": config, "restartDamage": BLANKON}
        out += [sc, {**sc, "name": f"{sc['name']}-crash", "abort": True}]
    files = {"after": {CQ: planted(120, 1)},
             "before": {CQ: planted(60, 2), EXT_FIRST: planted(EXT_SIZE, 3), EXT_NEXT: planted(50, 4)}}
    for sc in (out[0], out[3]) if line == "5.5.1" else ():
        kind = sc["name"].split("-restart-")[1].split("-")[0]
        out.append({**sc, "name": sc["name"].replace(kind, f"{kind}-held"),
                    "plantFiles": {rel: base64.b64encode(data).decode() for rel, data in files[kind].items()}})
    return bh.bounded(out, ("-after", "-after-crash", "-before", "-before-crash") if line == "5.5.1" else ())


SCENARIOS = {line: restart_scenarios(line) for line in LINES}
