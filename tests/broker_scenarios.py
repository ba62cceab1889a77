"""Scenarios for the broker harness, drawn by hypothesis: store settings and messages that exercise
the reput's rules (see :mod:`broker_harness` for the JSON the Java writer reads).

Drawn deterministically (``derandomize``) unless ``CONFORMANCE_SEED`` is set; the names carry the
line and the seed so that a failure can be drawn again.
"""
from __future__ import annotations

import base64
import random

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

# keys that stress the index: hash collisions ("Aa"/"BB" share String.hashCode), non-ASCII, long
KEYS = ["a", "Aa", "BB", "order-7", "键", "ключ", "🔑k", "k" * 1000, "x" * 200]
TAGS = ["TagA", "TagB", "标签", "*", "a||b"]
IPV6_HOSTS = ["[::1]:40001", "[fe80::1:2]:10911", "[2001:db8::7]:4000"]


def _topics(line: str) -> list[str]:
    topics = ["T0", "T1", "%RETRY%cg1", "%DLQ%cg1"]
    if not line.startswith("4"):
        # V2 records: topics longer than 127 characters (2-byte topic length)
        topics += [("LongTopic-" + "x" * 255)[:n] for n in (127, 128, 200, 255)]
    return topics


def _body(rng: random.Random, size: int) -> str:
    return base64.b64encode(rng.randbytes(size)).decode()


@st.composite
def _message(draw, line: str, n: int, rng: random.Random) -> dict:
    topic = draw(st.sampled_from(_topics(line)))
    kind = draw(st.sampled_from(["plain"] * 6 + ["delay", "tran", "batch", "lmq", "ipv6"]))
    msg: dict = {"topic": topic, "queueId": draw(st.integers(0, 3))}

    def fill(m: dict, i: int) -> dict:
        keys = draw(st.lists(st.sampled_from(KEYS), max_size=3))
        if keys:
            m["keys"] = draw(st.sampled_from([" ", "  "])).join(keys)
            if draw(st.booleans()) and draw(st.booleans()):
                m["keys"] = " " + m["keys"]
        if draw(st.booleans()):
            m["tags"] = draw(st.sampled_from(TAGS))
        if draw(st.integers(0, 9)) < 9:  # a producer gives every message one; a few here have none
            m["uniqKey"] = f"7F00000100002A9F0000{n:06X}{i:06X}"
        m["body"] = _body(rng, draw(st.sampled_from([0, 1, 17, 300, 1200])))
        return m

    if kind == "batch":
        msg["batch"] = [fill({}, i) for i in range(draw(st.integers(2, 5)))]
        return msg
    fill(msg, 0)
    if kind == "delay":
        msg["delayLevel"] = draw(st.integers(1, 20))  # above the last level: the broker takes the last
    elif kind == "tran":
        msg["tranType"] = draw(st.sampled_from(["prepared", "commit", "rollback"]))
        msg["delayLevel"] = draw(st.sampled_from([0, 0, 3]))
    elif kind == "lmq":
        queues = draw(st.lists(st.sampled_from(["%LMQ%q1", "%LMQ%q2", "%LMQ%q3"]), min_size=1, max_size=3,
                               unique=True))
        msg["properties"] = {"INNER_MULTI_DISPATCH": ",".join(queues)}
    elif kind == "ipv6":
        msg["bornHost"] = draw(st.sampled_from(IPV6_HOSTS))
        if draw(st.booleans()):
            msg["storeHost"] = draw(st.sampled_from(IPV6_HOSTS))
    return msg


@st.composite
def scenario(draw, line: str) -> dict:
    """Settings and 15-100 messages for one store of broker line ``line``."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    config = {
        "mappedFileSizeCommitLog": str(draw(st.sampled_from([12288, 32768, 65536]))),
        # 210 is no multiple of the 20-byte unit: the broker rounds it up
        "mappedFileSizeConsumeQueue": str(draw(st.sampled_from([120, 210, 600, 6000]))),
        "maxHashSlotNum": str(draw(st.sampled_from([7, 101, 500]))),
        "maxIndexNum": str(draw(st.sampled_from([400, 1000]))),
        "brokerRole": draw(st.sampled_from(["ASYNC_MASTER", "SYNC_MASTER", "SLAVE"])),
    }
    if draw(st.booleans()):
        config["enableMultiDispatch"] = config["enableLmq"] = "true"
    delay = draw(st.sampled_from([None, "1s 5s 10s 30s 1m", "2s 1h 2d"]))
    if delay:
        config["messageDelayLevel"] = delay
    count = draw(st.integers(15, 100))
    return {"config": config, "messages": [draw(_message(line, i, rng)) for i in range(count)]}


def draw_scenarios(line: str, count: int, seed: int | None = None) -> list[dict]:
    """``count`` scenarios for ``line``: the same ones on every run unless ``seed`` is given."""
    found: list[dict] = []

    @settings(max_examples=count, derandomize=seed is None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck), deadline=None)
    @given(scenario(line))
    def collect(sc: dict) -> None:
        found.append(sc)

    if seed is not None:
        collect = hypothesis_seed(seed)(collect)
    collect()
    tag = "d" if seed is None else f"s{seed}"
    return [{**sc, "name": f"{line}-{tag}-{i}"} for i, sc in enumerate(found[:count])]


def query_pairs(sc: dict) -> list[tuple[str, str]]:
    """Every (topic, key) a scenario's messages are indexed under, with the topic a delayed message
    is stored in, and each unique key."""
    pairs: set[tuple[str, str]] = set()
    for m in sc["messages"]:
        if "topic" not in m:
            continue
        topics = {m["topic"], "SCHEDULE_TOPIC_XXXX"} if m.get("delayLevel") else {m["topic"]}
        topics |= set(m.get("properties", {}).get("INNER_MULTI_DISPATCH", "").split(",")) - {""}
        for part in m.get("batch", [m]):
            for key in (part.get("keys") or "").split(" "):
                if key:
                    pairs |= {(t, key) for t in topics}
            if "uniqKey" in part:
                pairs |= {(t, part["uniqKey"]) for t in topics}
    return sorted(pairs)
