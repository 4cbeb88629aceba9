"""Join windows of KStream-KStream joins (Kafka Streams' `JoinWindows`) and their options (`StreamJoined`).

Two records of the same key join when their timestamps are close: a record of this stream at `t` joins the
other stream's records in `[t - before_ms, t + after_ms]` (and so, seen from the other stream, a record at `t`
joins this stream's records in `[t - after_ms, t + before_ms]`). `of_time_difference_*(d)` sets both to `d`;
`before()`/`after()` make the window asymmetric (one of them may even be negative, as long as the window is
not). Each side keeps its records in a window store for `size_ms + grace_ms` (`size_ms = before + after`), and a
left/outer join emits an unmatched record with a null partner only once stream time passes the end of its
window plus the grace period (Kafka Streams 3.1+, KIP-633: no spurious early null results).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from streamlet.errors import TopologyError
from streamlet.serdes import Serde, SerdeLike, resolve_serde


def _millis(value: object, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TopologyError(f"{what} must be an integer number of milliseconds, got {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class JoinWindows:
    """How far apart in time two records may be to join; build with `of_time_difference_with_no_grace` or
    `of_time_difference_and_grace`, then `before()` / `after()`."""

    before_ms: int
    after_ms: int
    grace_ms: int

    def __post_init__(self) -> None:
        _millis(self.before_ms, "before_ms")
        _millis(self.after_ms, "after_ms")
        _millis(self.grace_ms, "grace_ms")
        if self.before_ms + self.after_ms < 0:
            raise TopologyError("Window interval (ie, beforeMs+afterMs) must not be negative.")
        if self.grace_ms < 0:
            raise TopologyError("Grace period must not be negative.")

    @staticmethod
    def of_time_difference_with_no_grace(time_difference_ms: int) -> JoinWindows:
        """Records at most `time_difference_ms` apart join; a late record is not waited for."""
        return JoinWindows.of_time_difference_and_grace(time_difference_ms, 0)

    @staticmethod
    def of_time_difference_and_grace(time_difference_ms: int, grace_ms: int) -> JoinWindows:
        """Records at most `time_difference_ms` apart join, and out-of-order records are still joined (and
        unmatched ones held back) for `grace_ms` after a window ends."""
        difference = _millis(time_difference_ms, "time_difference_ms")
        if difference < 0:
            raise TopologyError(f"time_difference_ms must be non-negative, got {difference} ms")
        if _millis(grace_ms, "grace_ms") < 0:
            raise TopologyError(f"grace_ms must be non-negative, got {grace_ms} ms")
        return JoinWindows(difference, difference, grace_ms)

    def before(self, time_difference_ms: int) -> JoinWindows:
        """This stream's record at `t` joins other records from `t - time_difference_ms` on."""
        return replace(self, before_ms=_millis(time_difference_ms, "time_difference_ms"))

    def after(self, time_difference_ms: int) -> JoinWindows:
        """This stream's record at `t` joins other records up to `t + time_difference_ms`."""
        return replace(self, after_ms=_millis(time_difference_ms, "time_difference_ms"))

    @property
    def size_ms(self) -> int:
        return self.before_ms + self.after_ms

    @property
    def retention_ms(self) -> int:
        """How long each side's window store keeps a record behind its stream time (Kafka: size + grace)."""
        return self.size_ms + self.grace_ms

    def __str__(self) -> str:
        return f"JoinWindows{{beforeMs={self.before_ms}, afterMs={self.after_ms}, graceMs={self.grace_ms}}}"


@dataclass(frozen=True, slots=True)
class StreamJoined:
    """Options of a stream-stream join (Kafka's `StreamJoined`): the serdes of the join stores and of any
    repartition topic (default: each stream's own), a `name` for the join's processors (and repartition
    topics), and a `store_name` base for its stores."""

    key_serde: Serde | None = None
    value_serde: Serde | None = None
    other_value_serde: Serde | None = None
    name: str | None = None
    store_name: str | None = None

    @staticmethod
    def with_(
        key_serde: SerdeLike = None, value_serde: SerdeLike = None, other_value_serde: SerdeLike = None
    ) -> StreamJoined:
        """The serdes of the key, of this stream's values and of the other stream's values."""
        return StreamJoined(_resolve(key_serde), _resolve(value_serde), _resolve(other_value_serde))

    @staticmethod
    def as_(store_name: str) -> StreamJoined:
        return StreamJoined(store_name=store_name)

    def with_name(self, name: str) -> StreamJoined:
        return replace(self, name=name)

    def with_store_name(self, store_name: str) -> StreamJoined:
        return replace(self, store_name=store_name)

    def with_key_serde(self, serde: SerdeLike) -> StreamJoined:
        return replace(self, key_serde=_resolve(serde))

    def with_value_serde(self, serde: SerdeLike) -> StreamJoined:
        return replace(self, value_serde=_resolve(serde))

    def with_other_value_serde(self, serde: SerdeLike) -> StreamJoined:
        return replace(self, other_value_serde=_resolve(serde))


def _resolve(serde: SerdeLike) -> Serde | None:
    try:
        return resolve_serde(serde)
    except (TypeError, ValueError) as exc:
        raise TopologyError(f"StreamJoined: {exc}") from exc
