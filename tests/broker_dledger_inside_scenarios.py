"""The DLedger crash scenarios whose start's reput is set inside an entry (issue 22's inside-entry family): the
``emptied`` stores (the cut takes a queue's only unit, ``processOffset`` inside the last entry), and on them a
prepared message whose body holds, where the reput is set, well-formed records (``-embedded``, ``-batch``, ``-light``,
``-earlier``, ``-own-kept``, ``-own-held``, ``-to-entry`` and its variants).  The settings and the ``small`` store
they start from: :mod:`broker_dledger_scenarios`."""
from __future__ import annotations

import base64

from broker_dledger_scenarios import Messages, small_abort_scenarios

# the body of the emptied scenarios' last message (one byte more or less moves processOffset by one): its entry
# lies wholly past processOffset and the entry before it ends below, so processOffset falls inside its header
EMPTIED_BODY = 1517


def emptied_abort_scenarios(line: str) -> list[dict]:
    """The ``small`` store's messages, then one to a topic of its own (``T9``, queue 0), restarted after a crash
    with ``recheckReputOffsetFromCq=true``: the cut at ``dledgerRecoverAbnormally``'s short ``processOffset``
    takes that queue's one unit (its only file goes) and units of queues that keep others; ``processOffset``
    falls inside the last entry's header.  ``<line>-dledger-abort-emptied`` (5.5.1): ``correctMinOffset`` then
    sets the emptied queue's max to -1, and the reput starts at the other queues' largest offset.
    ``<line>-dledger-abort-emptied-kept`` (5.3.3, whose cut needs the queues on disk: ``keepQueues``): the
    emptied queue's max stays ``processOffset``, where ``doRecheckReputOffsetFromCq`` sets the reput, inside an
    entry.  Both ``reportQueues``."""
    small = small_abort_scenarios(line)[0]
    g = Messages(6, ["T9"])
    last = {**g.one(), "queueId": 0, "body": base64.b64encode(g.rng.randbytes(EMPTIED_BODY)).decode(), "keys": "k9",
            "uniqKey": "7F00000100002A9F000000000999"}
    sc = {**small, "messages": [*small["messages"], last]}
    if line.startswith("5.5"):
        return [{**sc, "name": f"{line}-dledger-abort-emptied"}]
    if line.startswith("5"):
        return [{**sc, "keepQueues": True, "name": f"{line}-dledger-abort-emptied-kept"}]
    return []


def emptied_batch_abort_scenarios(line: str) -> list[dict]:
    """The emptied scenarios with their last message to a BatchCQ topic of its own (``B9``, as long a name as
    ``T9``: the same ``processOffset``): the cut deletes that batch queue's only file and leaves its max at
    ``processOffset - 1`` (``BatchConsumeQueue.truncateDirtyLogicFiles``; its ``correctMinOffset`` does not
    reset it), above the other queues', so ``doRecheckReputOffsetFromCq`` sets the reput there, inside the
    last entry.  ``<line>-dledger-abort-emptied-batch`` (5.5.1) and ``-emptied-batch-kept`` (5.3.3, with the
    queues kept).  Both ``reportQueues``."""
    out = []
    for sc in emptied_abort_scenarios(line):
        last = {**sc["messages"][-1], "topic": "B9"}
        out.append({**sc, "messages": [*sc["messages"][:-1], last], "batchTopics": ["B9"],
                    "name": sc["name"].replace("-emptied", "-emptied-batch")})
    return out


# The emptied-embedded scenarios: a prepared T1 message (no unit, no key) of EMBED_HOST_BODY 'x' bytes before the
# last message, whose body shrinks to 100 bytes, so that dledgerRecoverAbnormally's processOffset,
# EMBED_PROCESS_OFFSET, falls inside that prepared body, which starts at EMBED_HOST_AT (the tests check both)
EMBED_HOST_BODY = 4000
EMBED_HOST_AT = 78841
EMBED_PROCESS_OFFSET = 81443
# the queue offset of the -embedded-own message for T9/0: its unit past the first consume queue file (220 bytes,
# 11 units), two fillPreBlank units before it in the file the broker creates
EMBED_OWN_QUEUE_OFFSET = 13


def emptied_embedded_abort_scenarios(line: str) -> list[dict]:
    """The emptied scenarios with the prepared message above before their last one and, in its body where the
    start's reput is set, a well-formed T5 message (:func:`broker_dledger_2gib.embedded_message`, its physical
    offset field that position): ``DLedgerCommitLog``'s check there parses it, the reput dispatches it (T5/0's unit)
    and jumps past the rest (the 'x' bytes after it fail the next check).  ``<line>-dledger-abort-emptied-batch-
    embedded`` (5.5.1): the batch queue B9 the cut empties leaves its max, and the reput, at ``processOffset - 1``;
    ``<line>-dledger-abort-emptied-kept-embedded`` (5.3.3, the queues kept): T9's at ``processOffset``;
    ``<line>-dledger-abort-emptied-kept-embedded-own`` (5.3.3): the same with the message there for T9/0 itself, the
    queue the cut emptied (queue offset :data:`EMBED_OWN_QUEUE_OFFSET`), and ``-own-to-entry`` (5.3.3:
    :func:`embedded_kept_to_entry_scenario`; ``-own-to-entry-some`` and ``-some-zero``:
    :func:`broker_dledger_inside_533_scenarios.kept_some_scenarios`; records past the walk's end of a queue the cut
    left no file: :func:`broker_dledger_inside_533_past_scenarios.past_533_scenarios`; a queue holding own and light
    units the cut left no file:
    :func:`broker_dledger_inside_mixed_more_scenarios.mixed_more_533_scenarios`; one a file of it left:
    :func:`broker_dledger_inside_mixed_533_scenarios.mixed_533_scenarios`).  On 5.5.1 also the variants
    below, and
    ``-batch-kept``: the -batch store with the queues kept (``keepQueues``: B9/0 on disk before the walk);
    ``-batch-held``: :func:`embedded_batch_held_scenario`;
    ``-earlier-ext``, ``-to-entry-earlier-ext``, ``-to-entry-past-ext``, ``-to-entry-past-two-ext``,
    ``-to-entry-past-cut-ext``, ``-to-entry-emptied-ext``: the -earlier, -to-entry-earlier, -to-entry-past, -past-two,
    -past-cut and -to-entry-emptied stores with ``enableConsumeQueueExt`` (ext files of 10 units); and the stores of
    :func:`broker_dledger_inside_disk_scenarios.disk_scenarios` (the queues on disk before the walk),
    :func:`broker_dledger_inside_past_more_scenarios.past_more_scenarios`,
    :func:`broker_dledger_inside_again_scenarios.again_abort_scenarios`,
    :func:`broker_dledger_inside_disk_batch_scenarios.disk_batch_scenarios`,
    :func:`broker_dledger_inside_past_rest_scenarios.past_rest_scenarios`,
    :func:`broker_dledger_inside_light_scenarios.light_scenarios`,
    :func:`broker_dledger_inside_blank_scenarios.blank_scenarios`,
    :func:`broker_dledger_inside_bcq_disk_scenarios.bcq_disk_scenarios`,
    :func:`broker_dledger_inside_replay_scenarios.replay_scenarios`,
    :func:`broker_dledger_inside_ext_replay_scenarios.ext_replay_scenarios`,
    :func:`broker_dledger_inside_past_far_scenarios.past_far_scenarios`,
    :func:`broker_dledger_inside_only_past_scenarios.only_past_scenarios`,
    :func:`broker_dledger_inside_batch_replay_scenarios.batch_replay_scenarios`,
    :func:`broker_dledger_inside_only_past_held_scenarios.only_past_held_scenarios`,
    :func:`broker_dledger_inside_mixed_replay_scenarios.mixed_replay_scenarios`,
    :func:`broker_dledger_inside_only_past_more_scenarios.only_past_more_scenarios`,
    :func:`broker_dledger_inside_mixed_more_scenarios.mixed_more_scenarios`,
    :func:`broker_dledger_inside_past_ext_scenarios.past_ext_scenarios`,
    :func:`broker_dledger_inside_mixed_earlier_scenarios.mixed_earlier_scenarios`,
    :func:`broker_dledger_inside_mixed_disk_scenarios.mixed_disk_scenarios`,
    :func:`broker_dledger_inside_mixed_emptied_back_scenarios.mixed_emptied_back_scenarios`,
    :func:`broker_dledger_inside_light_disk_scenarios.light_disk_scenarios` and (a reput not set inside
    an entry)
    :func:`broker_dledger_mixed_disk_reput_scenarios.mixed_disk_reput_scenarios`."""
    from broker_dledger_2gib import embedded_message
    scs = emptied_batch_abort_scenarios(line) if line.startswith("5.5") else emptied_abort_scenarios(line)
    out = []
    for sc in scs:
        reput = EMBED_PROCESS_OFFSET - (1 if line.startswith("5.5") else 0)
        msgs = {"": embedded_message(reput)}
        if not line.startswith("5.5"):
            msgs["-own"] = embedded_message(reput, topic=b"T9", queue_offset=EMBED_OWN_QUEUE_OFFSET)
        for suffix, msg in msgs.items():
            body = bytearray(b"x" * EMBED_HOST_BODY)
            body[reput - EMBED_HOST_AT:reput - EMBED_HOST_AT + len(msg)] = msg
            host = {"topic": "T1", "queueId": 0, "body": base64.b64encode(bytes(body)).decode(),
                    "tranType": "prepared", "uniqKey": "7F00000100002A9F000000000998"}
            *rest, last = sc["messages"]
            last = {**last, "body": base64.b64encode(b"y" * 100).decode()}
            out.append({**sc, "messages": [*rest, host, last], "name": f"{sc['name']}-embedded{suffix}"})
    if out and not line.startswith("5.5"):
        from broker_dledger_inside_533_past_scenarios import past_533_scenarios
        from broker_dledger_inside_533_scenarios import kept_some_scenarios
        from broker_dledger_inside_mixed_533_scenarios import mixed_533_scenarios
        from broker_dledger_inside_mixed_more_scenarios import mixed_more_533_scenarios
        from broker_dledger_inside_only_past_held_scenarios import kept_past_only_held_scenario
        from broker_dledger_inside_only_past_more_scenarios import kept_past_only_emptied_scenarios
        out += [embedded_kept_to_entry_scenario(out[0]), *kept_some_scenarios(out[0]), *past_533_scenarios(out[0]),
                kept_past_only_held_scenario(out[0]), *kept_past_only_emptied_scenarios(out[0]),
                *mixed_more_533_scenarios(out[0]), *mixed_533_scenarios(out[0])]
        from broker_dledger_mixed_disk_reput_scenarios import mixed_disk_reput_scenarios
        out += mixed_disk_reput_scenarios(line, out[0])
        from broker_dledger_inside_mixed_emptied_back_scenarios import mixed_emptied_back_scenarios
        out += mixed_emptied_back_scenarios(out[0])
        from broker_dledger_inside_light_disk_scenarios import light_disk_533_scenarios
        out += light_disk_533_scenarios(out[0])
    if line.startswith("5.5"):
        to_entry = embedded_to_entry_scenario(out[0])
        light = embedded_light_scenario(out[0])
        out += [to_entry, light, {**light, "config": {**light["config"], "enableConsumeQueueExt": "true",
                                                      "mappedFileSizeConsumeQueueExt": "204"},
                                  "name": f"{light['name']}-ext"},
                {**to_entry, "config": {**to_entry["config"], "enableConsumeQueueExt": "true",
                                        "mappedFileSizeConsumeQueueExt": "204"}, "name": f"{to_entry['name']}-ext"},
                embedded_earlier_scenario(out[0]), embedded_to_entry_emptied_scenario(out[0]),
                embedded_to_entry_earlier_scenario(out[0]), embedded_batch_scenario(out[0]),
                embedded_to_entry_batch_scenario(out[0]), embedded_to_entry_batch_scenario(out[0], past=True),
                embedded_earlier_batch_scenario(out[0]),
                {**embedded_batch_scenario(out[0]), "keepQueues": True,
                 "name": f"{embedded_batch_scenario(out[0])['name']}-kept"}, embedded_batch_held_scenario(out[0])]
        out += [{**sc, "config": {**sc["config"], "enableConsumeQueueExt": "true",
                                  "mappedFileSizeConsumeQueueExt": "204"}, "name": f"{sc['name']}-ext"}
                for sc in (embedded_earlier_scenario(out[0]), embedded_to_entry_earlier_scenario(out[0]),
                           embedded_to_entry_past_scenario(out[0]), embedded_to_entry_past_two_scenario(out[0]),
                           embedded_to_entry_past_cut_scenario(out[0]), embedded_to_entry_emptied_scenario(out[0]))]
        out += [embedded_to_entry_past_scenario(out[0]), embedded_to_entry_past_two_scenario(out[0]),
                embedded_to_entry_past_cut_scenario(out[0])]
        from broker_dledger_inside_again_scenarios import again_abort_scenarios
        from broker_dledger_inside_batch_replay_scenarios import batch_replay_scenarios
        from broker_dledger_inside_bcq_disk_scenarios import bcq_disk_scenarios
        from broker_dledger_inside_blank_scenarios import blank_scenarios
        from broker_dledger_inside_disk_batch_scenarios import disk_batch_scenarios
        from broker_dledger_inside_disk_scenarios import disk_scenarios
        from broker_dledger_inside_ext_replay_scenarios import ext_replay_scenarios
        from broker_dledger_inside_gate_scenarios import gate_scenarios
        from broker_dledger_inside_light_scenarios import light_scenarios
        from broker_dledger_inside_mixed_disk_scenarios import mixed_disk_scenarios
        from broker_dledger_inside_mixed_earlier_scenarios import mixed_earlier_scenarios
        from broker_dledger_inside_mixed_more_scenarios import mixed_more_scenarios
        from broker_dledger_inside_mixed_replay_scenarios import mixed_replay_scenarios
        from broker_dledger_inside_only_past_held_scenarios import only_past_held_scenarios
        from broker_dledger_inside_only_past_more_scenarios import only_past_more_scenarios
        from broker_dledger_inside_only_past_scenarios import only_past_scenarios
        from broker_dledger_inside_past_ext_scenarios import past_ext_scenarios
        from broker_dledger_inside_past_far_scenarios import past_far_scenarios
        from broker_dledger_inside_past_more_scenarios import past_more_scenarios
        from broker_dledger_inside_past_rest_scenarios import past_rest_scenarios
        from broker_dledger_inside_replay_scenarios import replay_scenarios
        out += disk_scenarios(out[0]) + past_more_scenarios(out[0]) + again_abort_scenarios(out[0]) \
            + disk_batch_scenarios(out[0]) + past_rest_scenarios(out[0]) + light_scenarios(out[0]) \
            + blank_scenarios(out[0]) + bcq_disk_scenarios(out[0]) + past_far_scenarios(out[0]) \
            + only_past_scenarios(out[0]) + replay_scenarios(out[0]) + gate_scenarios(out[0]) \
            + batch_replay_scenarios(out[0]) + ext_replay_scenarios(out[0]) + only_past_held_scenarios(out[0]) \
            + mixed_replay_scenarios(out[0]) + only_past_more_scenarios(out[0]) + mixed_more_scenarios(out[0]) \
            + past_ext_scenarios(out[0]) + mixed_earlier_scenarios(out[0]) + mixed_disk_scenarios(out[0])
        from broker_dledger_mixed_disk_reput_scenarios import mixed_disk_reput_scenarios
        out += mixed_disk_reput_scenarios(line, out[0])
        from broker_dledger_inside_mixed_emptied_back_scenarios import mixed_emptied_back_scenarios
        out += mixed_emptied_back_scenarios(out[0])
        from broker_dledger_inside_light_disk_scenarios import light_disk_scenarios
        out += light_disk_scenarios(out[0])
    return out


# -emptied-batch-embedded-batch: the INNER_BASE and INNER_NUM properties of the two B9/0 messages where the reput is set
BATCH_INNER = ((5, 3), (40, 2))


def embedded_batch_messages() -> tuple[int, bytes, bytes]:
    """Where the reput of the -emptied-batch-embedded store is set (processOffset - 1) and two well-formed B9/0
    messages there, one after the other, each its PHYSICALOFFSET its own position, with the inner batch properties
    of :data:`BATCH_INNER` (queue offsets their INNER_BASE)."""
    from broker_dledger_2gib import embedded_message
    reput = EMBED_PROCESS_OFFSET - 1
    out = []
    for k, (base, num) in enumerate(BATCH_INNER):
        props = f"INNER_NUM\x01{num}\x02INNER_BASE\x01{base}\x02KEYS\x01E{5 + k}\x02".encode()
        out.append(embedded_message(reput + sum(map(len, out)), props=props, topic=b"B9", queue_offset=base))
    return reput, out[0], out[1]


def embedded_batch_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-batch`` (5.5.1), the -emptied-batch-embedded store ``sc`` with,
    where the reput is set (processOffset - 1, the max the cut leaves B9/0, the batch queue it empties), two
    well-formed messages for B9/0 (:func:`embedded_batch_messages`) instead of the T5 one, then 'x' bytes."""
    reput, first, second = embedded_batch_messages()
    *rest, host, last = sc["messages"]
    body = bytearray(base64.b64decode(host["body"]))
    body[reput - EMBED_HOST_AT:reput - EMBED_HOST_AT + len(first) + len(second)] = first + second
    return {**sc, "messages": [*rest, {**host, "body": base64.b64encode(bytes(body)).decode()}, last],
            "name": f"{sc['name']}-batch"}


# -emptied-batch-embedded-light: the puts (of the last data file, below processOffset) that also go to the light
# queue %LMQ%q1, their light queue offsets 0, 1, 2; the properties that adds (56 bytes, cut off their bodies); the
# body of the last T0/0 message, also to %LMQ%q1 (a record of 356 bytes, which moves processOffset on as much)
LIGHT_PUTS = (185, 190, 195)
LIGHT_PROPS = 56
LIGHT_QUEUE_OFFSET = 7
LIGHT_TAIL_BODY = 161
LIGHT_TAIL = 88 + LIGHT_TAIL_BODY + 3 + 2 + 46 + LIGHT_PROPS


def embedded_light_message() -> tuple[int, bytes]:
    """Where the reput of the -light store is set (processOffset - 1) and the T5/0 message there, also for %LMQ%q1
    (light queue offset :data:`LIGHT_QUEUE_OFFSET`)."""
    from broker_dledger_2gib import embedded_message
    props = b"KEYS\x01E5\x02INNER_MULTI_DISPATCH\x01%LMQ%q1\x02INNER_MULTI_QUEUE_OFFSET\x01" + \
        str(LIGHT_QUEUE_OFFSET).encode() + b"\x02"
    reput = EMBED_PROCESS_OFFSET + LIGHT_TAIL - 1
    return reput, embedded_message(reput, props=props)


def embedded_light_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-light`` (5.5.1), from the -emptied-batch-embedded store ``sc``
    with ``enableMultiDispatch``/``enableLmq``: three puts of the last data file, below processOffset, also go to
    %LMQ%q1 (their bodies shorter by the properties that adds: the same layout), a last T0/0 message after B9's,
    also to %LMQ%q1 (both its units cut), and the message where the reput is set (processOffset - 1) is for T5/0
    and %LMQ%q1 too (:func:`embedded_light_message`), then 'x' bytes: the reput dispatches its light unit into
    %LMQ%q1 as the cut left it, then jumps past the rest."""
    reput, msg = embedded_light_message()
    *rest, host, b9 = sc["messages"]
    body = bytearray(b"x" * EMBED_HOST_BODY)
    body[reput - EMBED_HOST_AT:reput - EMBED_HOST_AT + len(msg)] = msg
    light = []
    for i, m in enumerate(rest):
        if i in LIGHT_PUTS:
            m = {**m, "body": base64.b64encode(base64.b64decode(m["body"])[:-LIGHT_PROPS]).decode(),
                 "properties": {"INNER_MULTI_DISPATCH": "%LMQ%q1", "INNER_MULTI_QUEUE_OFFSET": str(len(light))}}
            light.append(i)
        rest[i] = m
    tail = {**b9, "topic": "T0", "queueId": 0, "body": base64.b64encode(b"t" * LIGHT_TAIL_BODY).decode(),
            "keys": "kT", "uniqKey": "7F00000100002A9F000000000997",
            "properties": {"INNER_MULTI_DISPATCH": "%LMQ%q1", "INNER_MULTI_QUEUE_OFFSET": str(len(light))}}
    return {**sc, "config": {**sc["config"], "enableMultiDispatch": "true", "enableLmq": "true"},
            "messages": [*rest, {**host, "body": base64.b64encode(bytes(body)).decode()}, b9, tail],
            "name": f"{sc['name']}-light"}


# -emptied-batch-embedded-to-entry: a T0/0 message after B9's (:data:`TO_ENTRY_TAIL_BODY` bytes of body, 300 bytes
# of record) moves processOffset, and the reput's start, on by its record's length; the host's record tail (after
# its body: the topic's length byte, "T1", its properties' length and string)
TO_ENTRY_TAIL_BODY = 161
TO_ENTRY_HOST_TAIL = b"\x02T1\x00&UNIQ_KEY\x017F00000100002A9F000000000998\x02"
TO_ENTRY_QUEUE_OFFSET = 1000


# -emptied-batch-embedded-earlier: the messages of the first data file that go to T7/0 and T6/0 instead (as long a
# topic as T0 or T1: the same layout), and the queue offsets of the two messages parsed for those queues
EARLIER_RETOPIC = {10: "T7", 11: "T6"}
EARLIER_QUEUE_OFFSETS = (3, 7)


def embedded_earlier_messages() -> tuple[int, bytes]:
    """Where the reput of the -earlier store is set (processOffset - 1, moved on by its last T6/0 message's 300 bytes)
    and the two well-formed messages there, one after the other, for T7/0 and T6/0."""
    from broker_dledger_2gib import embedded_message
    reput = EMBED_PROCESS_OFFSET + 88 + TO_ENTRY_TAIL_BODY + 3 + 2 + 46 - 1
    first = embedded_message(reput, topic=b"T7", queue_offset=EARLIER_QUEUE_OFFSETS[0])
    return reput, first + embedded_message(reput + len(first), topic=b"T6", queue_offset=EARLIER_QUEUE_OFFSETS[1])


def embedded_earlier_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-earlier`` (5.5.1), from the -emptied-batch-embedded store
    ``sc`` with ``messageIndexSafe=true`` and index files of 250 entries (the first full some 125 messages in, in
    the first data file, the second never: the checkpoint's ``indexMsgTimestamp``, which the harness waits for the
    index file's flush thread to set, lies before the last data file's first message, which
    ``isMmapFileMatchedRecover`` then refuses, so the walk starts at the first data file while
    the checkpoint's ``logicsPhysicalOffset`` still reaches processOffset: the queues are cut): two messages of the
    first data file go to T7/0 and T6/0, a last T6/0 message after B9's (cut), and where the reput is set,
    processOffset - 1, well-formed messages for T7/0 (a queue the walk wrote in its earlier data file only) and
    T6/0 (one whose unit below processOffset lies there), then 'x' bytes."""
    reput, run = embedded_earlier_messages()
    *rest, host, b9 = sc["messages"]
    body = bytearray(b"x" * EMBED_HOST_BODY)
    body[reput - EMBED_HOST_AT:reput - EMBED_HOST_AT + len(run)] = run
    rest = [{**m, "topic": EARLIER_RETOPIC[i], "queueId": 0} if i in EARLIER_RETOPIC else m for i, m in enumerate(rest)]
    tail = {**b9, "topic": "T6", "queueId": 0, "body": base64.b64encode(b"t" * TO_ENTRY_TAIL_BODY).decode(),
            "keys": "kT", "uniqKey": "7F00000100002A9F000000000997"}
    return {**sc, "config": {**sc["config"], "messageIndexSafe": "true", "maxIndexNum": "250"},
            "messages": [*rest, {**host, "body": base64.b64encode(bytes(body)).decode()}, b9, tail],
            "name": f"{sc['name']}-earlier"}


def embedded_to_entry_message() -> bytes:
    """The T0/0 message (queue offset :data:`TO_ENTRY_QUEUE_OFFSET`) of the -to-entry store, from the reput's start
    (processOffset - 1) to the host's entry's end: its last bytes are the host record's tail, which its properties
    string ends with ("KEYS\x01E5", then a pair named "T1\x00&UNIQ_KEY" that no reader asks for)."""
    from broker_dledger_2gib import embedded_message
    reput = EMBED_PROCESS_OFFSET + 88 + TO_ENTRY_TAIL_BODY + 3 + 2 + 46 - 1
    host_end = EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    props = b"KEYS\x01E5" + TO_ENTRY_HOST_TAIL
    body = (b"embedded!!" * 200)[:host_end - reput - 88 - 3 - 2 - len(props)]
    msg = embedded_message(reput, body, props, topic=b"T0", queue_offset=TO_ENTRY_QUEUE_OFFSET)
    assert reput + len(msg) == host_end, (reput, len(msg), host_end)
    return msg


def embedded_to_entry_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-to-entry`` (5.5.1), from the -emptied-batch-embedded store
    ``sc``: a T0/0 message after B9's (its unit cut with B9's), and where the reput is set, processOffset - 1, a
    well-formed T0/0 message (:func:`embedded_to_entry_message`) that ends where B9's entry starts, so that the
    reput goes on there and dispatches B9's and the last T0/0 message again, after the parsed one.
    ``-to-entry-ext``: the same with ``enableConsumeQueueExt`` (ext files of 10 units)."""
    msg = embedded_to_entry_message()
    *rest, host, b9 = sc["messages"]
    body = bytearray(b"x" * EMBED_HOST_BODY)
    head = msg[:-len(TO_ENTRY_HOST_TAIL)]
    body[len(body) - len(head):] = head
    tail = {**b9, "topic": "T0", "queueId": 0, "body": base64.b64encode(b"t" * TO_ENTRY_TAIL_BODY).decode(),
            "keys": "kT", "uniqKey": "7F00000100002A9F000000000997"}
    return {**sc, "messages": [*rest, {**host, "body": base64.b64encode(bytes(body)).decode()}, b9, tail],
            "name": f"{sc['name']}-to-entry"}



def embedded_to_entry_past_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-to-entry-past`` (5.5.1): the -to-entry store with a body byte of
    its last message (T0/0, after B9's) flipped: the walk ends there (processOffset that of the -emptied-batch-embedded
    store), so the reput is set at processOffset - 1, where a well-formed T0/0 message (queue offset
    :data:`TO_ENTRY_QUEUE_OFFSET`) ends at B9's entry: the reput goes on there and dispatches B9's and the damaged
    T0/0 message, a record past the walk's end for the queue of the parsed one."""
    from broker_dledger_2gib import embedded_message
    to_entry = embedded_to_entry_scenario(sc)
    reput = EMBED_PROCESS_OFFSET - 1
    host_end = EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    props = b"KEYS\x01E5" + TO_ENTRY_HOST_TAIL
    body = (b"embedded!!" * 200)[:host_end - reput - 88 - 3 - 2 - len(props)]
    msg = embedded_message(reput, body, props, topic=b"T0", queue_offset=TO_ENTRY_QUEUE_OFFSET)
    assert reput + len(msg) == host_end, (reput, len(msg), host_end)
    *rest, host, b9, tail = to_entry["messages"]
    hb = bytearray(b"x" * EMBED_HOST_BODY)
    head = msg[:-len(TO_ENTRY_HOST_TAIL)]
    hb[len(hb) - len(head):] = head
    puts = sum(1 for m in to_entry["messages"] if "topic" in m)
    return {**to_entry, "messages": [*rest, {**host, "body": base64.b64encode(bytes(hb)).decode()}, b9, tail],
            "damageMessage": puts - 1, "name": f"{to_entry['name']}-past"}


def embedded_to_entry_past_two_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-to-entry-past-two`` (5.5.1): the -to-entry-past store with one
    more T0/0 message after the damaged one (keys ``kU``), a second record past the walk's end for the parsed
    message's queue: its queue offset is the write position the parsed unit leaves, so the broker appends it there
    where it drops the damaged one (one kept, one dropped)."""
    past = embedded_to_entry_past_scenario(sc)
    tail = past["messages"][-1]
    more = {**tail, "keys": "kU", "uniqKey": "7F00000100002A9F000000000996"}
    return {**past, "messages": [*past["messages"], more], "name": f"{past['name']}-two"}


def embedded_to_entry_past_cut_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-to-entry-past-cut`` (5.5.1): the -to-entry store (its last T0/0
    message cut, the parsed T0/0 message ending at B9's entry) with two more T0/0 messages after it, the first
    damaged (keys ``kD``, ``kE``): the walk ends at the damaged one, processOffset stays the -to-entry store's, and
    the reput, going on at B9's entry, dispatches the cut T0/0 unit again (dropped: the parsed unit took its queue
    offset), then the two records past the walk's end (their queue offsets the write positions it reaches)."""
    to_entry = embedded_to_entry_scenario(sc)
    tail = to_entry["messages"][-1]
    more = [{**tail, "keys": f"k{k}", "uniqKey": f"7F00000100002A9F00000000099{n}"} for k, n in (("D", 5), ("E", 4))]
    puts = sum(1 for m in to_entry["messages"] if "topic" in m)
    return {**to_entry, "messages": [*to_entry["messages"], *more], "damageMessage": puts,
            "name": f"{to_entry['name']}-past-cut"}


def embedded_to_entry_emptied_scenario(sc: dict, topic: str = "T8", queue_offset: int = EMBED_OWN_QUEUE_OFFSET,
                                       suffix: str = "-emptied") -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-to-entry-emptied`` (5.5.1): the -to-entry store with its last
    message and the one where the reput is set (queue offset :data:`EMBED_OWN_QUEUE_OFFSET`) for T8/0, a topic of its
    own: the cut leaves T8/0 no file (max -1), the parsed unit gets a new file where its queue offset falls, and the
    reput, going on at B9's entry, dispatches the cut T8/0 unit (queue offset 0) again after it (``topic``,
    ``queue_offset``: those of both messages)."""
    from broker_dledger_2gib import embedded_message
    to_entry = embedded_to_entry_scenario(sc)
    reput = EMBED_PROCESS_OFFSET + 88 + TO_ENTRY_TAIL_BODY + 3 + 2 + 46 - 1
    old = embedded_to_entry_message()
    host_end = EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    props = b"KEYS\x01E5" + TO_ENTRY_HOST_TAIL
    body = (b"embedded!!" * 200)[:host_end - reput - 88 - 3 - 2 - len(props)]
    msg = embedded_message(reput, body, props, topic=topic.encode(), queue_offset=queue_offset)
    assert len(msg) == len(old)
    *rest, host, b9, tail = to_entry["messages"]
    hb = bytearray(base64.b64decode(host["body"]))
    head = msg[:-len(TO_ENTRY_HOST_TAIL)]
    hb[len(hb) - len(head):] = head
    return {**to_entry, "messages": [*rest, {**host, "body": base64.b64encode(bytes(hb)).decode()}, b9,
                                     {**tail, "topic": topic}], "name": f"{to_entry['name']}{suffix}"}


def embedded_to_entry_earlier_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-to-entry-earlier`` (5.5.1): the -to-entry-emptied layout over the
    -earlier store's walk (``messageIndexSafe=true``, index files of 250 entries: the walk covers both data files with
    the cut), the first data file's message 11 sent to T6/0, the last message and the one where the reput is set
    (queue offset :data:`TO_ENTRY_QUEUE_OFFSET`) for T6/0 too: its unit below processOffset lies in the earlier data
    file, its cut unit (queue offset 1) is dispatched again after the parsed one."""
    out = embedded_to_entry_emptied_scenario(sc, "T6", TO_ENTRY_QUEUE_OFFSET, "-earlier")
    msgs = [{**m, "topic": "T6", "queueId": 0} if i == 11 else m for i, m in enumerate(out["messages"])]
    return {**out, "config": {**out["config"], "messageIndexSafe": "true", "maxIndexNum": "250"}, "messages": msgs}


def embedded_to_entry_batch_messages(past: bool = False) -> tuple[int, bytes, bytes]:
    """Where the reput of the -to-entry-batch store is set (processOffset - 1, B9/0's max after the cut) and the two
    well-formed B9/0 messages there (:data:`BATCH_INNER`), the second ending where B9's entry starts (its properties
    string ends with the host record's tail, as :func:`embedded_to_entry_message`'s).  ``past``: those of the
    -to-entry-batch-past store, whose processOffset the damaged last message does not move."""
    from broker_dledger_2gib import embedded_message
    reput = EMBED_PROCESS_OFFSET - 1 if past else EMBED_PROCESS_OFFSET + 88 + TO_ENTRY_TAIL_BODY + 3 + 2 + 46 - 1
    host_end = EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    (base0, num0), (base1, num1) = BATCH_INNER
    first = embedded_message(reput, props=f"INNER_NUM\x01{num0}\x02INNER_BASE\x01{base0}\x02KEYS\x01E5\x02".encode(),
                             topic=b"B9", queue_offset=base0)
    props = f"INNER_NUM\x01{num1}\x02INNER_BASE\x01{base1}\x02KEYS\x01E6".encode() + TO_ENTRY_HOST_TAIL
    at = reput + len(first)
    body = (b"embedded!!" * 200)[:host_end - at - 88 - 3 - 2 - len(props)]
    second = embedded_message(at, body, props, topic=b"B9", queue_offset=base1)
    assert at + len(second) == host_end, (at, len(second), host_end)
    return reput, first, second


def embedded_to_entry_batch_scenario(sc: dict, past: bool = False) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-to-entry-batch`` (5.5.1): the -to-entry store with, where the
    reput is set (processOffset - 1), two well-formed B9/0 messages (:func:`embedded_to_entry_batch_messages`), the
    second ending at B9's entry: the reput goes on there and dispatches B9's cut unit (and the last T0/0
    message's) again, after the parsed ones.  ``past`` (``-to-entry-batch-past``): the last message for B9/0 too,
    with a body byte flipped, so that the walk ends there (processOffset that of -emptied-batch-embedded, where
    the B9/0 messages then lie: ``embedded_to_entry_batch_messages(past=True)``); the reput, going on at B9's
    entry, dispatches B9's cut record and then that damaged one, a record past the walk's end (its check reads no
    CRC)."""
    _reput, first, second = embedded_to_entry_batch_messages(past)
    to_entry = embedded_to_entry_scenario(sc)
    *rest, host, b9, tail = to_entry["messages"]
    run = first + second
    head = run[:-len(TO_ENTRY_HOST_TAIL)]
    hb = bytearray(b"x" * EMBED_HOST_BODY)
    hb[len(hb) - len(head):] = head
    out = {**to_entry, "messages": [*rest, {**host, "body": base64.b64encode(bytes(hb)).decode()}, b9,
                                    {**tail, "topic": "B9"} if past else tail], "name": f"{to_entry['name']}-batch"}
    if past:
        out = {**out, "damageMessage": sum(1 for m in out["messages"] if "topic" in m) - 1,
               "name": f"{out['name']}-past"}
    return out


def embedded_kept_to_entry_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-kept-embedded-own-to-entry`` (5.3.3, the queues kept), from the
    -emptied-kept-embedded store ``sc``: where the reput is set (processOffset, the max the 5.3.3 cut leaves T9/0,
    the queue it empties) a well-formed T9/0 message (queue offset :data:`EMBED_OWN_QUEUE_OFFSET`) whose properties
    string swallows the host record's tail (:data:`TO_ENTRY_HOST_TAIL`), so that it ends where the last (T9/0)
    message's entry starts: the reput goes on there and dispatches the cut T9/0 unit again after the parsed one."""
    from broker_dledger_2gib import embedded_message
    reput = EMBED_PROCESS_OFFSET
    host_end = EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    props = b"KEYS\x01E5" + TO_ENTRY_HOST_TAIL
    body = (b"embedded!!" * 200)[:host_end - reput - 88 - 3 - 2 - len(props)]
    msg = embedded_message(reput, body, props, topic=b"T9", queue_offset=EMBED_OWN_QUEUE_OFFSET)
    assert reput + len(msg) == host_end, (reput, len(msg), host_end)
    *rest, host, last = sc["messages"]
    hb = bytearray(b"x" * EMBED_HOST_BODY)
    head = msg[:-len(TO_ENTRY_HOST_TAIL)]
    hb[len(hb) - len(head):] = head
    return {**sc, "messages": [*rest, {**host, "body": base64.b64encode(bytes(hb)).decode()}, last],
            "name": f"{sc['name']}-own-to-entry"}


def embedded_earlier_batch_message() -> tuple[int, bytes]:
    """Where the reput of the -earlier-batch store is set (processOffset - 1, moved on by its last B7/0 message's 300
    bytes) and the well-formed B7/0 message there (``INNER_BASE``/``INNER_NUM`` those of :data:`BATCH_INNER`'s
    second)."""
    from broker_dledger_2gib import embedded_message
    reput = EMBED_PROCESS_OFFSET + 88 + TO_ENTRY_TAIL_BODY + 3 + 2 + 46 - 1
    base, num = BATCH_INNER[1]
    props = f"INNER_NUM\x01{num}\x02INNER_BASE\x01{base}\x02KEYS\x01E5\x02".encode()
    return reput, embedded_message(reput, props=props, topic=b"B7", queue_offset=base)


def embedded_earlier_batch_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-earlier-batch`` (5.5.1): the -earlier walk (``messageIndexSafe``,
    index files of 250 entries: both data files walked, the cut still happening) with a second BatchCQ topic, B7:
    message 10 of the first data file and a last message after B9's (cut) go to B7/0, and where the reput is set
    (processOffset - 1, B9/0's max) a well-formed B7/0 message (:func:`embedded_earlier_batch_message`), then 'x'
    bytes: ``BatchConsumeQueue.truncateDirtyLogicFiles`` leaves B7/0 its unit of the earlier data file (the max its
    start, the write position 46)."""
    reput, msg = embedded_earlier_batch_message()
    *rest, host, b9 = sc["messages"]
    body = bytearray(b"x" * EMBED_HOST_BODY)
    body[reput - EMBED_HOST_AT:reput - EMBED_HOST_AT + len(msg)] = msg
    rest = [{**m, "topic": "B7", "queueId": 0} if i == 10 else m for i, m in enumerate(rest)]
    tail = {**b9, "topic": "B7", "queueId": 0, "body": base64.b64encode(b"t" * TO_ENTRY_TAIL_BODY).decode(),
            "keys": "kT", "uniqKey": "7F00000100002A9F000000000997"}
    return {**sc, "config": {**sc["config"], "messageIndexSafe": "true", "maxIndexNum": "250"},
            "batchTopics": [*sc["batchTopics"], "B7"],
            "messages": [*rest, {**host, "body": base64.b64encode(bytes(body)).decode()}, b9, tail],
            "name": f"{sc['name']}-earlier-batch"}


def embedded_batch_held_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-batch-held`` (5.5.1, the queues kept: ``keepQueues``), from the
    -emptied-batch-embedded store ``sc``: a second BatchCQ topic, B7, gets the last message before the host (below
    processOffset, in the last data file) and a last message after B9's (cut), so that
    ``BatchConsumeQueue.truncateDirtyLogicFiles`` leaves B7/0, on disk before the walk, its file with the first
    unit (the max its start, the write position 46); where the reput is set (processOffset - 1, B9/0's max, moved on
    by the last message's 300 bytes) the well-formed B7/0 message of :func:`embedded_earlier_batch_message`, then 'x'
    bytes."""
    reput, msg = embedded_earlier_batch_message()
    *rest, host, b9 = sc["messages"]
    body = bytearray(b"x" * EMBED_HOST_BODY)
    body[reput - EMBED_HOST_AT:reput - EMBED_HOST_AT + len(msg)] = msg
    rest[-1] = {**rest[-1], "topic": "B7", "queueId": 0}
    tail = {**b9, "topic": "B7", "queueId": 0, "body": base64.b64encode(b"t" * TO_ENTRY_TAIL_BODY).decode(),
            "keys": "kT", "uniqKey": "7F00000100002A9F000000000997"}
    return {**sc, "batchTopics": [*sc["batchTopics"], "B7"], "keepQueues": True,
            "messages": [*rest, {**host, "body": base64.b64encode(bytes(body)).decode()}, b9, tail],
            "name": f"{sc['name']}-batch-held"}
