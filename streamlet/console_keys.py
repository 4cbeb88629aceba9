"""Keys as `streamlet consume` prints them, windowed ones included.

A windowed aggregate's output topic (`count().to_stream().to(...)` after `windowed_by`) has `Windowed` keys:
the key's bytes followed by the window's start (time windows), or by its end and start (session windows).
Read as plain strings they print as the key plus eight or sixteen binary bytes. As Kafka's console consumer
does with its windowed deserializers, the command decodes them when told how they were written, and prints
`key@[start,end)` in epoch milliseconds.
"""

from __future__ import annotations

import re
from typing import Any

from streamlet.errors import StreamletError
from streamlet.serdes import Serde, serde_from_name
from streamlet.topology.session_windows import SessionWindowedSerde
from streamlet.topology.windows import TimeWindowedSerde, Windowed

KEY_SERDE_HELP = (
    "str, bytes, int64, int32 or json; windowed:INNER for a time-windowed key (with --window-size: the bytes "
    "carry only the window start), session:INNER for a session-windowed key; windowed keys print as "
    "key@[start,end) in epoch ms"
)
_DURATION = re.compile(r"^(\d+)(ms|s|m|h|d)?$")
_UNIT_MS = {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_duration_ms(text: str) -> int:
    """`60000`, `60000ms`, `60s`, `1m`, `1h` or `1d` -> milliseconds."""
    match = _DURATION.match(text.strip())
    if match is None or int(match.group(1)) <= 0:
        raise StreamletError(f"--window-size {text!r}: expected a positive duration such as 60000, 60s, 5m or 1h")
    return int(match.group(1)) * _UNIT_MS[match.group(2) or "ms"]


def _inner(name: str, spec: str) -> Serde:
    try:
        return serde_from_name(name)
    except ValueError as exc:
        raise StreamletError(f"--key-serde {spec!r}: {exc}") from None


def console_key_serde(spec: str, window_size: str | None) -> Serde:
    """The key serde `--key-serde spec [--window-size size]` names."""
    kind, sep, inner = spec.partition(":")
    if sep and kind == "windowed":
        if window_size is None:
            raise StreamletError(
                f"--key-serde {spec}: give --window-size (e.g. 60s): a time-windowed key holds only the window "
                "start, so the end needs the size the application's TimeWindows use"
            )
        return TimeWindowedSerde(_inner(inner, spec), parse_duration_ms(window_size))
    if sep and kind == "session":
        if window_size is not None:
            raise StreamletError(f"--key-serde {spec}: a session-windowed key carries its end; drop --window-size")
        return SessionWindowedSerde(_inner(inner, spec))
    if window_size is not None:
        raise StreamletError(f"--window-size goes with --key-serde windowed:INNER, not {spec!r}")
    return _inner(spec, spec)


def format_key(key: Any) -> str:
    """A key as printed: `key@[start,end)` for a windowed one, else `str(key)`."""
    if isinstance(key, Windowed):
        return f"{key.key}@[{key.window.start},{key.window.end})"
    return str(key)
