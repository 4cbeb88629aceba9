"""Time windows (Kafka Streams' `TimeWindows`, `TimeWindow`, `Windowed`, `TimeWindowedSerde`).

A `TimeWindows` spec cuts time into windows of `size_ms`, starting every `advance_ms` (tumbling when the two
are equal, hopping otherwise), aligned to the epoch: a record at `t` falls in every window
`[start, start + size)` with `start` a multiple of `advance_ms` and `start <= t < start + size`. A window
accepts records until stream time passes its end by `grace_ms`; later ones are dropped as late. The window
store keeps a window for `size_ms + grace_ms` (its retention) behind stream time.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Protocol

from streamlet.errors import TopologyError
from streamlet.serdes import Serde

_START = struct.Struct(">q")


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """`[start, end)` in milliseconds."""

    start: int
    end: int


class Window(Protocol):
    """A window's bounds in milliseconds: a `TimeWindow`, or a `streamlet.topology.session_windows.SessionWindow`."""

    @property
    def start(self) -> int: ...

    @property
    def end(self) -> int: ...


@dataclass(frozen=True, slots=True)
class Windowed:
    """The key of a windowed aggregate: the record key and its window."""

    key: Any
    window: Window


def _check(value: object, what: str, minimum: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TopologyError(f"{what} must be an integer number of milliseconds, got {value!r}")
    if value < minimum:
        bound = "positive" if minimum == 1 else "non-negative"
        raise TopologyError(f"{what} must be {bound}, got {value} ms")
    return value


@dataclass(frozen=True, slots=True)
class TimeWindows:
    """Fixed-size windows; build with `of_size_with_no_grace` / `of_size_and_grace`, then `advance_by`."""

    size_ms: int
    advance_ms: int
    grace_ms: int

    @classmethod
    def of_size_with_no_grace(cls, size_ms: int) -> TimeWindows:
        """Tumbling windows that drop any record arriving after its window ended (in stream time)."""
        return cls.of_size_and_grace(size_ms, 0)

    @classmethod
    def of_size_and_grace(cls, size_ms: int, grace_ms: int) -> TimeWindows:
        """Tumbling windows accepting out-of-order records until stream time passes their end by `grace_ms`."""
        size = _check(size_ms, "Window size (size_ms)", 1)
        return cls(size, size, _check(grace_ms, "Grace period (grace_ms)", 0))

    def advance_by(self, advance_ms: int) -> TimeWindows:
        """Hopping windows: a new window every `advance_ms` (0 < advance <= size)."""
        advance = _check(advance_ms, "Window advance interval (advance_ms)", 1)
        if advance > self.size_ms:
            raise TopologyError(
                f"Window advance interval should be more than zero and less than or equal to window size "
                f"(size_ms={self.size_ms}), got {advance} ms"
            )
        return TimeWindows(self.size_ms, advance, self.grace_ms)

    def windows_for(self, timestamp: int) -> list[TimeWindow]:
        """The windows a record at `timestamp` belongs to, oldest first (Kafka's `windowsFor`)."""
        size, advance = self.size_ms, self.advance_ms
        start = (max(0, timestamp - size + advance) // advance) * advance
        windows = []
        while start <= timestamp:
            windows.append(TimeWindow(start, start + size))
            start += advance
        return windows

    @property
    def retention_ms(self) -> int:
        """How long the window store keeps a window behind stream time (Kafka's default: size + grace)."""
        return self.size_ms + self.grace_ms


class TimeWindowedSerde:
    """`Windowed` keys as the inner key's bytes + the 8-byte big-endian window start (Kafka's
    `TimeWindowedSerializer`); the end is the start plus the window size, which the bytes do not carry."""

    __slots__ = ("inner", "window_size_ms")

    def __init__(self, inner: Serde, window_size_ms: int) -> None:
        self.inner = inner
        self.window_size_ms = window_size_ms

    def serialize(self, topic: str, obj: Any) -> bytes | None:
        if obj is None:
            return None
        if not isinstance(obj, Windowed):
            raise TypeError(f"TimeWindowedSerde serializes Windowed keys, got {type(obj).__name__}")
        key = self.inner.serialize(topic, obj.key) or b""
        return key + _START.pack(obj.window.start)

    def deserialize(self, topic: str, data: bytes | None) -> Windowed | None:
        if data is None:
            return None
        (start,) = _START.unpack_from(data, len(data) - 8)
        return Windowed(self.inner.deserialize(topic, data[:-8]), TimeWindow(start, start + self.window_size_ms))

    def __repr__(self) -> str:
        return f"TimeWindowedSerde({self.inner!r}, {self.window_size_ms})"
