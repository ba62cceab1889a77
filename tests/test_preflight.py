"""Validation before work: command line options and broker.conf lines end in one line and exit 2
before any Spark session starts; unknown keys warn with "did you mean"; index file names survive
store timestamps a date cannot hold; the output's free space is checked before writing."""
from __future__ import annotations

import datetime as _dt
import json
import logging
import os
import random
import shutil
import subprocess
import textwrap
from collections import namedtuple
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from pipelines import cli
from pipelines.preflight import InsufficientSpaceError, estimate_output, preflight
from store_format.config import BrokerConfig, load_broker_config
from store_format.errors import StoreError, StoreLayoutError, UnsupportedConfigError
from store_format.indexfile import index_file_names, index_file_names_checked
from store_format.javaproperties import parse_java_properties, read_properties
from store_format.reput import rebuild_in_memory
from store_format.sample import generate_sample_store
from store_format.setting_names import KNOWN_SETTINGS, STORE_SETTINGS
from store_format.store import open_store
from store_format.writer import CommitLogWriter

SMALL_CONF = "mappedFileSizeCommitLog=1048576\nmappedFileSizeConsumeQueue=6000\nmaxHashSlotNum=500\nmaxIndexNum=2000\n"


@pytest.fixture(scope="module")
def small_store(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("store")
    generate_sample_store(str(root), load_broker_config(SMALL_CONF), messages=400, seed=3)
    (root / "broker.conf").write_text(SMALL_CONF)
    return root


@pytest.fixture
def no_spark(monkeypatch):
    """Fail the test if anything starts a Spark session (also from the background thread that starts
    it while the store is planned)."""
    started: list[bool] = []

    def refuse(*args, **kwargs):
        started.append(True)
        raise AssertionError("a Spark session was started")
    import pipelines.session
    monkeypatch.setattr(pipelines.session, "build_spark_session", refuse)
    yield
    assert not started, "a Spark session was started"


def _cli(argv: list[str], capsys) -> tuple[int, str, str]:
    try:
        code = cli.main(argv)
    except SystemExit as e:   # argparse errors exit from parse_args
        code = e.code if isinstance(e.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def _conf(tmp_path: Path, text: str) -> str:
    path = tmp_path / "broker.conf"
    path.write_text(text)
    return str(path)


# ---------------------------------------------------------------------------------------------
# one line, exit 2, no Spark


@pytest.mark.parametrize("extra, conf, words", [
    (["--split-size", "100"], SMALL_CONF, ["--split-size", "at least 4k"]),
    (["--split-size", "0"], SMALL_CONF, ["--split-size", "at least 4k"]),
    (["--tz", "Bogus/Zone"], SMALL_CONF, ["Bogus/Zone", "IANA"]),
    ([], SMALL_CONF + "maxHashSlotNum=2147483647\n", ["line 5", "maxHashSlotNum up to", "2,147,483,647"]),
    ([], "mappedFileSizeCommitLog=1048576\nmaxIndexNum=2147483647\n", ["line 2", "maxIndexNum up to"]),
    ([], SMALL_CONF.replace("maxIndexNum=2000", "maxIndexNum=abc"), ["line 4", "maxIndexNum='abc'", "digits only"]),
    ([], SMALL_CONF.replace("maxIndexNum=2000", "maxIndexNum=2000 "), ["line 4", "blanks", "maxIndexNum=2000"]),
    ([], SMALL_CONF + "mappedFileSizeConsumeQueue=0\n", ["line 5", "positive"]),
    ([], "[broker]\n" + SMALL_CONF, ["line 1", "not a property"]),
    ([], SMALL_CONF + "brokerName=\\u12zz\n", ["line 5", "unicode escape"]),
])
def test_bad_input_is_one_line_and_exit_2_before_spark(small_store, tmp_path, capsys, no_spark, extra, conf, words):
    argv = ["rebuild", "--store", str(small_store), "--out", str(tmp_path / "out"),
            "--config", _conf(tmp_path, conf), "--no-tables"] + extra
    code, out, err = _cli(argv, capsys)
    assert code == 2
    assert out == ""
    # log lines (warnings such as a key set twice) may come before it; the error itself is one line
    lines = [line for line in err.strip().splitlines() if not line.startswith(("[store_format", "[pipelines"))]
    assert len(lines) == 1 and lines[0].startswith("error:"), err
    for w in words:
        assert w in lines[0], (w, lines[0])
    assert not (tmp_path / "out").exists()


def test_a_misspelt_store_setting_warns_with_did_you_mean(small_store, tmp_path, capsys, caplog, no_spark):
    conf = _conf(tmp_path, "mappedFileSizeCommitLog=1048576\nmapedFileSizeConsumeQueue=20000\nmaxHashSlotNum=500\n"
                           "maxIndexNum=2000\n")
    with caplog.at_level(logging.WARNING):
        code, _, _ = _cli(["rebuild", "--store", str(small_store), "--out", str(tmp_path / "out"), "--config", conf,
                           "--engine", "local"], capsys)
    assert code == 0
    warnings = [r.getMessage() for r in caplog.records if r.name == "store_format.config"]
    assert any("line 2: mapedFileSizeConsumeQueue is no broker or store setting" in w
               and "did you mean mappedFileSizeConsumeQueue?" in w and "6000000" in w for w in warnings), warnings
    # the broker ignores the misspelt key: its default 6,000,000-byte files are what it wrote
    sizes = {p.stat().st_size for p in (tmp_path / "out" / "consumequeue").rglob("0000*")}
    assert sizes == {6_000_000}


# ---------------------------------------------------------------------------------------------
# broker.conf lines


def test_unknown_keys_warn_known_keys_of_both_broker_lines_do_not(caplog):
    text = textwrap.dedent("""\
        brokerClusterName=DefaultCluster
        brokerName=broker-a
        listenPort=10911
        enableLmq=false
        storeType=default
        authenticationEnabled=false
        MaxIndexNum=5000
        totallyUnknownSetting=1
        """)
    with caplog.at_level(logging.WARNING, logger="store_format.config"):
        config = load_broker_config(text)
    assert config == BrokerConfig()
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 2, said
    assert "line 7: MaxIndexNum is no broker or store setting" in said[0] and "did you mean maxIndexNum?" in said[0]
    assert "line 8: totallyUnknownSetting" in said[1] and "did you mean" not in said[1]


def test_known_settings_come_from_both_broker_lines():
    for name in ("mappedFileSizeConsumeQueue", "maxHashSlotNum", "maxIndexNum", "messageIndexEnable",
                 "destroyMapedFileIntervalForcibly", "enableLmq", "storeType", "fileReservedTime"):
        assert name in STORE_SETTINGS, name
    for name in ("brokerName", "brokerClusterName", "namesrvAddr", "listenPort", "brokerIP1", "brokerVersion",
                 "rmqAddressServerDomain"):
        assert name in KNOWN_SETTINGS, name
    assert "mapedFileSizeConsumeQueue" not in KNOWN_SETTINGS


@pytest.mark.parametrize("text, words", [
    ("maxIndexNum=99999999999", ["beyond a Java int", "2147483647"]),
    ("maxIndexNum=+", ["not a whole number"]),
    ("maxHashSlotNum=1_000", ["not a whole number"]),
    ("=20000", ["line 1", "no key"]),
    ("a\\\n  b\n--maxIndexNum=5", ["line 3", "not a property"]),
    ("mappedFileSizeConsumeQueue=2147483647", ["at most 2147483640"]),
    ("brokerId=9223372036854775808", ["beyond a Java long"]),
])
def test_values_a_broker_cannot_take_are_errors_naming_the_line(text, words):
    with pytest.raises(UnsupportedConfigError) as e:
        load_broker_config(text)
    for w in words:
        assert w in str(e.value), (w, str(e.value))
    assert "\n" not in str(e.value)


def test_values_read_as_the_broker_reads_them(caplog):
    with caplog.at_level(logging.WARNING, logger="store_format.config"):
        c = load_broker_config("maxIndexNum=+20000\nbrokerId=-1\nmessageIndexEnable=true \nmaxIndexNum=3000\n")
    assert c.maxIndexNum == 3000 and c.brokerId == -1
    assert not c.messageIndexEnable   # Boolean.parseBoolean("true ") is false
    said = " ".join(r.getMessage() for r in caplog.records)
    assert "messageIndexEnable='true ' is read as false" in said
    assert "maxIndexNum is set again (line 1)" in said


def test_line_numbers_follow_continuations_and_comments():
    entries = read_properties("# c\n\n  a = 1\nb:\\\n   2\r\n! x\r\nc 3\\\n")
    assert [(e.line, e.key, e.value) for e in entries] == [(3, "a", "1"), (4, "b", "2"), (7, "c", "3")]


def _java_ok() -> bool:
    return shutil.which("java") is not None


@pytest.mark.skipif(not _java_ok(), reason="needs java")
def test_properties_parsing_matches_java_util_properties(tmp_path):
    """Random texts over the characters that matter, parsed by java.util.Properties.load(Reader)."""
    prog = tmp_path / "Props.java"
    prog.write_text(textwrap.dedent("""\
        import java.io.*; import java.nio.charset.StandardCharsets; import java.nio.file.*; import java.util.*;
        public class Props {
            public static void main(String[] args) throws Exception {
                StringBuilder out = new StringBuilder();
                for (String f : args) {
                    Properties p = new Properties();
                    try (Reader r = Files.newBufferedReader(Paths.get(f), StandardCharsets.UTF_8)) {
                        p.load(r);
                        TreeMap<String, String> m = new TreeMap<>();
                        for (String k : p.stringPropertyNames()) m.put(k, p.getProperty(k));
                        out.append("OK");
                        for (Map.Entry<String, String> e : m.entrySet())
                            out.append('\\t').append(hex(e.getKey())).append('=').append(hex(e.getValue()));
                    } catch (IllegalArgumentException e) { out.append("ERR"); }
                    out.append('\\n');
                }
                System.out.print(out);
            }
            static String hex(String s) {
                StringBuilder b = new StringBuilder();
                for (char c : s.toCharArray()) b.append(String.format("%04x", (int) c));
                return b.toString();
            }
        }
        """))
    rng = random.Random(7)
    alphabet = ["a", "k", "=", ":", " ", "\t", "\f", "\\", "\n", "\r", "\r\n", "#", "!", "u", "0", "f", "é",
                "\\u0041", "\\u00"]
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(600)]
    files = []
    for i, t in enumerate(texts):
        path = tmp_path / f"{i}.properties"
        path.write_bytes(t.encode("utf-8"))
        files.append(str(path))
    res = subprocess.run(["java", str(prog)] + files, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr

    def hx(s: str) -> str:
        return "".join(f"{ord(c):04x}" for c in s)

    for text, java in zip(texts, res.stdout.splitlines()):
        try:
            props = parse_java_properties(text)
            mine = "OK" + "".join(f"\t{hx(k)}={hx(v)}" for k, v in sorted(props.items()))
        except StoreError:
            mine = "ERR"
        assert mine == java, repr(text)


# ---------------------------------------------------------------------------------------------
# index file names from any store timestamp


def _is_name(name: str, tz=_dt.timezone.utc) -> bool:
    return len(name) == 17 and name.isdigit() and bool(_dt.datetime.strptime(name[:14], "%Y%m%d%H%M%S"))


@pytest.mark.parametrize("tz", [_dt.timezone.utc, ZoneInfo("Asia/Shanghai"), ZoneInfo("America/New_York")])
def test_index_names_for_timestamps_past_year_9999_and_negative(tz):
    far = 2**62
    ts = [-5, 1_700_000_000_000, far, far, 2**63 - 1, 1_700_000_000_500]
    names, clamped = index_file_names_checked(ts, tz)
    assert clamped == [0, 2, 3, 4]
    assert all(_is_name(n) for n in names), names
    assert names == sorted(names) and len(set(names)) == len(names)
    assert names[2].startswith("9999123") and names[-1].startswith("9999123")
    assert index_file_names(ts, tz) == names
    assert index_file_names_checked([-(2**63)], tz)[1] == [0]


def test_index_names_unchanged_for_ordinary_times():
    ts = [1_704_067_200_000, 1_704_067_200_000, 1_704_067_200_999, 1_704_153_600_123]
    assert index_file_names(ts) == ["20240101000000000", "20240101000000001", "20240101000000999",
                                    "20240102000000123"]
    assert index_file_names_checked(ts)[1] == []
    # daylight saving fall-back: local times repeat, names must still increase
    ny = ZoneInfo("America/New_York")
    fall = [1_699_162_200_000, 1_699_164_000_000]   # 01:30 EDT, then 01:00 EST on 2023-11-05
    names = index_file_names(fall, ny)
    assert names[0] == "20231105013000000" and names[0] < names[1]


def test_a_record_stored_past_year_9999_does_not_stop_the_rebuild(tmp_path):
    config = load_broker_config("mappedFileSizeCommitLog=65536\nmaxHashSlotNum=7\nmaxIndexNum=4\n")
    with CommitLogWriter(tmp_path / "store", config) as w:
        for i, ts in enumerate([1_704_067_200_000, 1_704_067_201_000, 1_704_067_202_000, 2**62, 2**62 + 5, -1000,
                                1_704_067_203_000]):
            w.append("TopicA", i % 2, b"body", {"KEYS": f"k{i}", "UNIQ_KEY": f"u{i}"}, store_timestamp=ts)
    store = open_store(str(tmp_path / "store"), config)
    ref = rebuild_in_memory(store, config)
    names = [n for n, _ in ref.index]
    assert len(names) >= 4 and names == sorted(names) and len(set(names)) == len(names)
    assert all(_is_name(n) for n in names)
    from pipelines.rebuild import run_rebuild
    run_rebuild(str(tmp_path / "store"), str(tmp_path / "out"), config, engine="local")
    written = sorted(p.name for p in (tmp_path / "out" / "index").iterdir())
    assert written == names
    for name, data in ref.index:
        assert (tmp_path / "out" / "index" / name).read_bytes() == data


# ---------------------------------------------------------------------------------------------
# free space and the output location


Usage = namedtuple("Usage", "total used free")


def test_space_that_cannot_hold_the_certain_minimum_is_refused(small_store, tmp_path, monkeypatch):
    config = load_broker_config(SMALL_CONF + "maxHashSlotNum=5000000\n")   # 20 MB index files
    store = open_store(str(small_store), config)
    need = estimate_output(store, config)
    assert need.minimum >= 20_000_000
    monkeypatch.setattr(shutil, "disk_usage", lambda path: Usage(10**9, 10**9 - 5_000_000, 5_000_000))
    with pytest.raises(InsufficientSpaceError) as e:
        preflight(store, config, str(tmp_path / "out"))
    msg = str(e.value)
    assert f"at least {need.minimum:,} bytes" in msg and "5,000,000 bytes are free" in msg and "\n" not in msg
    assert not (tmp_path / "out").exists()


def test_an_estimate_above_free_space_warns(small_store, tmp_path, monkeypatch, caplog):
    config = load_broker_config(SMALL_CONF)
    store = open_store(str(small_store), config)
    need = estimate_output(store, config)
    assert need.estimate is not None and need.minimum < need.estimate
    free = (need.minimum + need.estimate) // 2
    monkeypatch.setattr(shutil, "disk_usage", lambda path: Usage(10**9, 10**9 - free, free))
    with caplog.at_level(logging.INFO, logger="pipelines.preflight"):
        preflight(store, config, str(tmp_path / "out"))
    assert "will probably need about" in caplog.text
    monkeypatch.undo()
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="pipelines.preflight"):
        preflight(store, config, str(tmp_path / "out"))
    assert "will probably need" not in caplog.text


@pytest.mark.parametrize("case", ["basic-4.9.8", "index-rollover-4.9.8", "lmq-4.9.8", "corrupt-4.9.8",
                                  "rebased-4.9.8", "longtopic-5.3.3"])
def test_the_minimum_never_exceeds_what_the_broker_wrote(golden_dir, case):
    conf = (golden_dir / case / "broker.conf").read_text()
    config = load_broker_config(conf)
    store = open_store(str(golden_dir / case / "store"), config)
    manifest = json.loads((golden_dir / case / "manifest.json").read_text())
    written = (sum(v["size"] for v in manifest["consumequeue"].values())
               + sum(x["size"] for x in manifest["index"]))
    need = estimate_output(store, config)
    assert 0 < need.minimum <= written
    assert need.estimate is not None and need.estimate >= need.minimum


def test_an_output_that_is_a_file_or_inside_commitlog_is_refused(small_store, tmp_path):
    config = load_broker_config(SMALL_CONF)
    store = open_store(str(small_store), config)
    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(StoreLayoutError, match="is a file"):
        preflight(store, config, str(a_file))
    with pytest.raises(StoreLayoutError, match="is a file"):
        preflight(store, config, str(a_file / "below"))
    with pytest.raises(StoreLayoutError, match="inside the store's commitlog"):
        preflight(store, config, str(small_store / "commitlog" / "x"))
    preflight(store, config, str(small_store))   # the store root itself: allowed (with --overwrite)


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_an_output_that_cannot_be_written_is_refused(small_store, tmp_path):
    config = load_broker_config(SMALL_CONF)
    store = open_store(str(small_store), config)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(StoreLayoutError, match="not writable"):
            preflight(store, config, str(locked / "out"))
    finally:
        locked.chmod(0o700)
