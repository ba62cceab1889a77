"""Broker config JSON files (``config/*.json``: ``consumerOffset.json``, ``delayOffset.json``,
``topics.json``, ...), as fastjson writes them, one ``field`` item per leaf."""
from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ..errors import StoreLayoutError
from .items import KIND_CONFIG, Item, Selection

__all__ = ["parse_broker_json", "iter_config_json"]


def _quote_bare_keys(text: str) -> str:
    """fastjson writes integer map keys without quotes (``{0:12,1:3}``): quote keys that are not
    strings, outside string literals and only in key position."""
    out: list[str] = []
    stack: list[str] = []
    expect_key = False
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
            expect_key = False
            continue
        if c in "{[":
            stack.append(c)
            expect_key = c == "{"
        elif c in "}]":
            if stack:
                stack.pop()
            expect_key = False
        elif c == ",":
            expect_key = bool(stack) and stack[-1] == "{"
        elif expect_key and not c.isspace():
            j = text.find(":", i)
            if j < 0:
                break
            out.append(json.dumps(text[i:j].strip()))
            i = j
            expect_key = False
            continue
        out.append(c)
        i += 1
    return "".join(out)


def parse_broker_json(text: str) -> Any:
    """A broker config file (``consumerOffset.json``, ``delayOffset.json``, ``topics.json``, ...) as Python
    values; accepts fastjson's unquoted integer keys.

    Raises:
        StoreLayoutError: not JSON even with the keys quoted.
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    try:
        return json.loads(_quote_bare_keys(text))
    except json.JSONDecodeError as e:
        raise StoreLayoutError(f"not a JSON document: {e}") from None


def _flatten(value: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
    if isinstance(value, dict) and value:
        for k, v in value.items():
            yield from _flatten(v, path + [str(k)])
    elif isinstance(value, list) and value:
        for i, v in enumerate(value):
            yield from _flatten(v, path + [str(i)])
    else:
        yield path, value


def iter_config_json(data: bytes, *, path: str = "config.json", start: int = 0, count: int | None = None
                     ) -> Iterator[Item]:
    """One ``field`` item per leaf of a broker config JSON file, with its key path."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise StoreLayoutError(f"{path}: not UTF-8 text ({e})") from None
    try:
        doc = parse_broker_json(text)
    except StoreLayoutError as e:
        raise StoreLayoutError(f"{path}: {e}") from None
    name = path.rstrip("/").rsplit("/", 1)[-1]
    top = sorted(doc) if isinstance(doc, dict) else []
    yield {"type": "file", "kind": KIND_CONFIG, "path": path, "name": name, "file_size": len(data),
           "top_level_keys": top, "data_version": doc.get("dataVersion") if isinstance(doc, dict) else None}
    sel = Selection(start, count)
    fields = 0
    for key_path, value in _flatten(doc, []):
        fields += 1
        if sel.take_one():
            yield {"type": "field", "no": fields - 1, "key": ".".join(key_path), "path": key_path,
                   "value": value}
        if sel.done:
            break
    yield {"type": "summary", "kind": KIND_CONFIG, "name": name, "fields_read": fields, **sel.summary()}
