"""``python -m pipelines dump FILE... [--json] [--from N] [--count N] [--config broker.conf]``.

Decodes store files read-only with :mod:`store_format.filedump` and prints them: a readable table per
file, or JSON Lines (``--json``: one object per line, each with a ``type``: ``file`` header, then
``record``/``unit``/``entry``/``slot``/``checkpoint``/``field`` items, ``event`` objects, and a
``summary`` per file).  Output is written as it is decoded, so a 1 GiB segment streams.
"""
from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Iterable
from typing import Any, TextIO

from store_format.filedump import Item, open_dump
from store_format.store import load_config_for

__all__ = ["run_dump_command", "render_item", "write_items"]

log = logging.getLogger(__name__)

_CHAIN_SHOWN = 12  # links of a slot chain printed in the text form


def run_dump_command(files: list[str], *, start: int, count: int | None, config_path: str | None,
                     as_json: bool, strict: bool = False) -> int:
    """Decode each file in turn and print it.

    Args:
        files: store files (local paths or ``hdfs://``/``s3://`` URIs); opened read-only.
        start: first item (record, unit, entry, field) to print, counted from 0.
        count: at most this many items per file (None: all).
        config_path: broker.conf of the store (file sizes, delay levels, broker line); None: defaults.
        as_json: JSON Lines instead of text.
        strict: refuse, instead of a warning, files of a store a broker may be running on
            (:func:`pipelines.brokerlock.warn_if_broker_live`).
    Returns:
        0 when every file was decoded.
    Raises:
        StoreError: a file that does not exist, cannot be read or is not a store file (nothing is
            printed then: all files are checked first), or a bad ``--from``.
    """
    from store_format.errors import UsageError
    if start < 0:
        raise UsageError(f"--from {start}: use 0 or more")
    config = load_config_for(config_path)
    dumps = [open_dump(f, config) for f in files]
    from ..brokerlock import warn_if_broker_live
    for root in dict.fromkeys(r for r in map(store_root_of, files) if r is not None):
        warn_if_broker_live(root, strict=strict,
                            meaning="the files it writes (the newest segment, consume queue and index files, the "
                                    "checkpoint) may change while they are decoded, so their last items may be "
                                    "half-written")
    out = sys.stdout
    try:
        for d in dumps:
            log.debug("dumping %s as %s", d.uri, d.kind)
            write_items(d.items(start=start, count=count), out, as_json)
        out.flush()
    except BrokenPipeError:
        # the reader went away (``| head``): stop quietly, as text tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, out.fileno())
        os.close(devnull)
    return 0


def store_root_of(path: str) -> str | None:
    """The store root a local store file belongs to: the nearest of its parent folders (up to
    ``consumequeue/<topic>/<queue>/``) holding ``commitlog/``, ``lock`` or ``abort``; None if none."""
    if "://" in path:
        return None
    folder = os.path.dirname(os.path.abspath(path))
    for _ in range(4):
        if any(os.path.exists(os.path.join(folder, n)) for n in ("commitlog", "lock", "abort")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return None


def write_items(items: Iterable[Item], out: TextIO, as_json: bool) -> None:
    """Print items as JSON Lines or as text, one at a time."""
    if as_json:
        for item in items:
            out.write(json.dumps(item, ensure_ascii=False, default=str))
            out.write("\n")
        return
    state: dict[str, Any] = {}
    for item in items:
        text = render_item(item, state)
        if text:
            out.write(text)
            out.write("\n")


# ---------------------------------------------------------------------------------------------
# text form


def render_item(item: Item, state: dict[str, Any]) -> str:
    """One item as text; ``state`` carries what a file's header decided (e.g. whether the column
    titles were printed)."""
    t = item["type"]
    if t == "file":
        state.clear()
        state["kind"] = item["kind"]
        return _render_header(item)
    if t == "event":
        return f"  -- {item['event']}" + (f" at position {item['position']}" if "position" in item else "") \
            + (f" (offset {item['offset']})" if "offset" in item else "") + f": {item.get('detail', '')}"
    if t == "summary":
        return _render_summary(item)
    if t == "record":
        return _titles(state, _RECORD_TITLES) + _render_record(item)
    if t == "unit" and state.get("kind") == "dledger_index":
        return _titles(state, _LEDGER_UNIT_TITLES) + (
            f"{item['no']:>8} {item['slot_index']:>12} {item['magic']:>6} {item['pos']:>18} {item['size']:>9} "
            f"{item['index']:>12} {item['term']:>6}" + ("" if item["valid"] else "  invalid: not this entry's unit"))
    if t == "unit":
        return _titles(state, _UNIT_TITLES) + (
            f"{item['index']:>8} {item['queue_offset']:>14} {item['commitlog_offset']:>18} {item['size']:>11} "
            f"{item['tags_code']:>20}" + ("  blank (fillPreBlank)" if item["blank"] else "")
            + ("" if item["valid"] else "  invalid: ConsumeQueue.recover stops here"))
    if t == "entry":
        return _titles(state, _ENTRY_TITLES) + (
            f"{item['entry']:>8} {item['key_hash']:>11} {item['slot']:>9} {item['commitlog_offset']:>18} "
            f"{item['time_diff']:>10} {item['time'] or '-':<24} {item['prev_index']:>8}"
            + ("  slot head" if item["slot_head"] else "") + ("" if item["chain_ok"] else "  BROKEN LINK"))
    if t == "slot":
        chain = item["chain"]
        links = " -> ".join(str(c) for c in chain[:_CHAIN_SHOWN]) + (" -> ..." if len(chain) > _CHAIN_SHOWN else "")
        return _titles(state, _SLOT_TITLES) + (
            f"{item['slot']:>9} {item['entry']:>8} {item['chain_length']:>7}  {links}"
            + ("" if item["chain_ok"] else "  BROKEN CHAIN"))
    if t == "checkpoint":
        lines = [f"  {k:<24} {v}" for k, v in item.items() if k not in ("type", "no", "note")]
        return "\n".join(lines) + f"\n  ({item['note']})"
    if t == "field":
        return f"  {item['key']} = {json.dumps(item['value'], ensure_ascii=False)}"
    return json.dumps(item, ensure_ascii=False, default=str)


_RECORD_TITLES = (f"{'no':>7} {'position':>10} {'offset':>14} {'size':>7} {'magic':<5} {'status':<13} {'crc':<4} "
                  f"{'topic':<24} {'qid':>4} {'queue_off':>10} {'tx':<8} {'store_time':<24} {'body':>7}  reput")
_LEDGER_UNIT_TITLES = (f"{'unit':>8} {'entry_index':>12} {'magic':>6} {'pos':>18} {'size':>9} {'index':>12} "
                       f"{'term':>6}")
_UNIT_TITLES = f"{'unit':>8} {'queue_offset':>14} {'commitlog_offset':>18} {'size':>11} {'tags_code':>20}"
_ENTRY_TITLES = (f"{'entry':>8} {'key_hash':>11} {'slot':>9} {'commitlog_offset':>18} {'time_diff':>10} "
                 f"{'time':<24} {'prev':>8}")
_SLOT_TITLES = f"  non-empty slots:\n{'slot':>9} {'entry':>8} {'length':>7}  chain (newest first, along prevIndex)"


def _titles(state: dict[str, Any], titles: str) -> str:
    if state.get("titles") == titles:
        return ""
    state["titles"] = titles
    return titles + "\n"


def _render_header(h: Item) -> str:
    kind = h["kind"]
    if kind == "commitlog":
        line = (f"== commitlog segment {h['name']}: base offset {h['base_offset']}, {h['file_size']} bytes, "
                f"{'5.x' if h['broker_version'] == '5' else '4.9.x'} broker")
    elif kind == "dledger":
        committed = (f"committed up to offset {h['committed_offset']} (entry {h['committed_index']})"
                     if h["committed_offset"] is not None else h["committed_note"])
        line = (f"== DLedger data file {h['name']}" + (f" of {h['log']}" if h["log"] else "")
                + f": base offset {h['base_offset']}, {h['file_size']} bytes, "
                f"{'5.x' if h['broker_version'] == '5' else '4.9.x'} broker; {committed}")
    elif kind == "dledger_index":
        line = (f"== DLedger index file {h['name']}: first entry index {h['first_entry_index']}, "
                f"{h['file_size']} bytes = {h['units_capacity']} units")
    elif kind == "consume_queue":
        where = f"{h['topic']}/{h['queue_id']} " if h["topic"] is not None else ""
        line = (f"== consume queue {where}file {h['name']}: first queue offset {h['first_queue_offset']}, "
                f"{h['file_size']} bytes = {h['units_capacity']} units")
    elif kind == "index":
        line = (f"== index file {h['name']}: {h['file_size']} bytes, {h['max_hash_slot_num']} slots, "
                f"{h['max_index_num']} entries at most ({h['layout_from']})\n"
                f"   begin {h['begin_time'] or '-'} ({h['begin_timestamp']}), end {h['end_time'] or '-'} "
                f"({h['end_timestamp']}), commitlog offsets {h['begin_phy_offset']} .. {h['end_phy_offset']}, "
                f"hashSlotCount {h['hash_slot_count']}, indexCount {h['index_count']} ({h['entries']} entries)")
    elif kind == "checkpoint":
        line = f"== checkpoint: {h['file_size']} bytes"
    else:
        line = f"== config file {h['name']}: {h['file_size']} bytes, top-level keys {', '.join(h['top_level_keys'])}"
    return f"{line}\n   {h['path']}"


def _render_record(r: Item) -> str:
    crc = "ok" if r["body_crc_ok"] else "BAD"
    topic = r["topic"] if len(r["topic"]) <= 24 else r["topic"][:21] + "..."
    first = (f"{r['no']:>7} {r['position']:>10} {r['offset']:>14} {r['size']:>7} {r['magic']:<5} {r['status']:<13} "
             f"{crc:<4} {topic:<24} {r['queue_id']:>4} {r['queue_offset']:>10} {r['transaction']:<8} "
             f"{r['store_time'] or r['store_timestamp']!s:<24} {r['body_length']:>7}  {r['reput']}")
    second = (f"{'':>9}born {r['born_time'] or r['born_timestamp']} from {r['born_host']}, stored by "
              f"{r['store_host']}; physicalOffset {r['physical_offset']}"
              + ("" if r["physical_offset_ok"] else " (NOT its own offset)")
              + f"; sysFlag 0x{r['sys_flag']:x}; flag {r['flag']}; reconsumeTimes {r['reconsume_times']}; "
              f"preparedTxOffset {r['prepared_transaction_offset']}; bodyCRC {r['body_crc']}")
    if not r["body_crc_ok"]:
        second += f" (body gives {r['body_crc_computed']})"
    if r["status"] != "ok":
        second += f"; totalSize {r['size']} but the fields add up to {r['structural_size']}"
    props = " ".join(f"{k}={v}" for k, v in r["properties"].items())
    text = f"{first}\n{second}\n{'':>9}properties {props or '-'}"
    if "entry_ok" in r:
        text += (f"\n{'':>9}DLedger entry at position {r['entry_position']}: index {r['entry_index']}, term "
                 f"{r['entry_term']}, pos {r['entry_pos']}, size {r['entry_size']}, magic {r['entry_magic']}, body "
                 f"size {r['entry_body_size']}, bodyCrc {r['entry_body_crc']}, chainCrc {r['entry_chain_crc']}, "
                 f"channel {r['entry_channel']}" + ("" if r["entry_ok"] else "  (DISAGREES with its record or "
                                                    "position)"))
    return text


def _render_summary(s: Item) -> str:
    kind = s["kind"]
    shown = f"{s['items_shown']} shown" if "items_shown" in s else ""
    if kind in ("commitlog", "dledger"):
        end = s["end"] or {}
        ledger = (f", {s['not_committed']} past the committed position, {s['entries_bad']} entry headers that "
                  "disagree with their record" if kind == "dledger" else "")
        text = (f"summary: {s['records']} records ({s['dispatched']} dispatched by the reput, {s['size_mismatch']} "
                f"size mismatches, {s['crc_failed']} body CRC failures, {s['physical_offset_wrong']} with a wrong "
                f"physicalOffset, {s['not_read_by_reput']} after an unreadable record{ledger}), {shown}; "
                f"ends: {end.get('event')}" + (f" at position {end['position']}" if "position" in end else ""))
    elif kind == "dledger_index":
        end = s["end"] or {}
        text = (f"summary: {s['units']} units ({s['invalid_units']} invalid), {shown}; "
                f"ends: {end.get('event')}" + (f" at unit {end['unit']}" if "unit" in end else ""))
    elif kind == "consume_queue":
        end = s["end"] or {}
        text = (f"summary: {s['units']} units ({s['blank_units']} blank, {s['invalid_units']} invalid), {shown}; "
                f"ends: {end.get('event')}" + (f" at unit {end['unit']}" if "unit" in end else ""))
    elif kind == "index":
        text = (f"summary: {s['entries']} entries, {s['non_empty_slots']} non-empty slots, {s['chain_errors']} broken "
                f"chains, {s['unreachable_entries']} entries on no chain, {s['slots_out_of_range']} slots pointing "
                f"past indexCount; {s['items_shown']} entries and {s['slots_shown']} slots shown")
    elif kind == "config":
        text = f"summary: {s['fields_read']} fields read, {shown}"
    else:
        return ""
    return text + "\n"
