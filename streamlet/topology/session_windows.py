"""Session windows (Kafka Streams' `SessionWindows`, `SessionWindow`, `SessionWindowedSerde`).

A session is a run of records of one key with no gap longer than `inactivity_gap_ms` between them: a record
at `t` opens the session `[t, t]`, or joins (and merges) every session of its key that ends no earlier than
`t - gap` and starts no later than `t + gap`. Sessions have no fixed size, so they are not aligned to the
epoch, and both ends are inclusive. A session accepts records until stream time passes its end by
`gap + grace`; the session store keeps sessions that long (its retention) behind stream time.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from streamlet.serdes import Serde
from streamlet.topology.windows import Windowed, _check

_END_START = struct.Struct(">qq")


@dataclass(frozen=True, slots=True)
class SessionWindow:
    """`[start, end]` in milliseconds, both inclusive (a single record's session is `[t, t]`)."""

    start: int
    end: int


@dataclass(frozen=True, slots=True)
class SessionWindows:
    """Build with `of_inactivity_gap_with_no_grace` / `of_inactivity_gap_and_grace`."""

    inactivity_gap_ms: int
    grace_ms: int

    @classmethod
    def of_inactivity_gap_with_no_grace(cls, inactivity_gap_ms: int) -> SessionWindows:
        """Sessions that drop a record arriving once stream time passed its session's end by the gap."""
        return cls.of_inactivity_gap_and_grace(inactivity_gap_ms, 0)

    @classmethod
    def of_inactivity_gap_and_grace(cls, inactivity_gap_ms: int, grace_ms: int) -> SessionWindows:
        """Sessions accepting out-of-order records until stream time passes their end by gap + grace."""
        gap = _check(inactivity_gap_ms, "Session inactivity gap (inactivity_gap_ms)", 1)
        return cls(gap, _check(grace_ms, "Grace period (grace_ms)", 0))

    @property
    def retention_ms(self) -> int:
        """How long the session store keeps a session behind stream time (Kafka's default: gap + grace)."""
        return self.inactivity_gap_ms + self.grace_ms


class SessionWindowedSerde:
    """`Windowed` session keys as the inner key's bytes + 8-byte big-endian end + 8-byte start (Kafka's
    `SessionWindowedSerializer`, which writes `SessionKeySchema` keys): both ends travel, sessions vary in size."""

    __slots__ = ("inner",)

    def __init__(self, inner: Serde) -> None:
        self.inner = inner

    def serialize(self, topic: str, obj: Any) -> bytes | None:
        if obj is None:
            return None
        if not isinstance(obj, Windowed):
            raise TypeError(f"SessionWindowedSerde serializes Windowed keys, got {type(obj).__name__}")
        key = self.inner.serialize(topic, obj.key) or b""
        return key + _END_START.pack(obj.window.end, obj.window.start)

    def deserialize(self, topic: str, data: bytes | None) -> Windowed | None:
        if data is None:
            return None
        end, start = _END_START.unpack_from(data, len(data) - _END_START.size)
        return Windowed(self.inner.deserialize(topic, data[: -_END_START.size]), SessionWindow(start, end))

    def __repr__(self) -> str:
        return f"SessionWindowedSerde({self.inner!r})"
