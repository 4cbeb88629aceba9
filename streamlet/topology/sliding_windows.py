"""Sliding windows (Kafka Streams' `SlidingWindows`): windows of a fixed size that move with the records.

Every window `[start, start + time_difference]` (both ends inclusive) that holds a distinct set of records
of a key exists, and no other: each record creates its left window `[t - d, t]` and, when later records of
the key are within `d`, its right window `[t + 1, t + 1 + d]`. Windows close once stream time passes their
end by `grace_ms`; the window store keeps them for `2 * d + grace` (its retention), which lets a record find
the windows it has to create its own from.
"""

from __future__ import annotations

from dataclasses import dataclass

from streamlet.topology.windows import _check


@dataclass(frozen=True, slots=True)
class SlidingWindows:
    """Build with `of_time_difference_with_no_grace` / `of_time_difference_and_grace`."""

    time_difference_ms: int
    grace_ms: int

    @classmethod
    def of_time_difference_with_no_grace(cls, time_difference_ms: int) -> SlidingWindows:
        """Windows of `time_difference_ms` that drop a record arriving after its windows closed."""
        return cls.of_time_difference_and_grace(time_difference_ms, 0)

    @classmethod
    def of_time_difference_and_grace(cls, time_difference_ms: int, grace_ms: int) -> SlidingWindows:
        """Windows of `time_difference_ms` accepting out-of-order records for `grace_ms` after they end.

        A difference of 0 is refused here: Kafka Streams accepts it when building, then fails on the first
        record ("Window endMs must be greater than window startMs").
        """
        difference = _check(time_difference_ms, "Window time difference (time_difference_ms)", 1)
        return cls(difference, _check(grace_ms, "Grace period (grace_ms)", 0))

    @property
    def size_ms(self) -> int:
        """The window store's window size: a window's end is its start plus this (Kafka's `windowSize`)."""
        return self.time_difference_ms

    @property
    def retention_ms(self) -> int:
        """How long the window store keeps a window behind stream time (Kafka's default: 2 * d + grace)."""
        return 2 * self.time_difference_ms + self.grace_ms
