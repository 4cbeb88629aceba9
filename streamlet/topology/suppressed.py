"""`KTable.suppress()` settings (Kafka Streams' `Suppressed` and `Suppressed.BufferConfig`).

A suppression holds back a table's updates in a buffer keyed by the record key, so that only the latest
update per key goes downstream once it is old enough in *stream time*:

* `Suppressed.until_window_closes(BufferConfig.unbounded())` on a windowed table (emit-final): a window's
  result leaves the buffer once stream time reaches the window's end plus its grace period, the first time
  no more records can change it. Its buffer must be strict (never emit early), since an early emission
  would not be final.
* `Suppressed.until_time_limit(ms, config)`: a key's update leaves the buffer once stream time is `ms`
  past the timestamp of the key's first buffered update (a rate limit).

A bounded buffer (`max_records(n)` / `max_bytes(n)`) that overflows emits its oldest entries early
(`emit_early_when_full()`, the default of the bounded factories) or fails the application
(`shut_down_when_full()`, the default of `unbounded()`). Sizes are counted as Kafka counts them, so a
`max_bytes` bound cuts where Kafka Streams' would.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from streamlet.errors import TopologyError

__all__ = ["BufferConfig", "Suppressed"]

#: Java's Long.MAX_VALUE: what "no bound" is in Kafka's buffer configs.
UNBOUNDED = (1 << 63) - 1


def _limit(value: object, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise TopologyError(f"{what} must be a non-negative integer, got {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class BufferConfig:
    """How large a suppression buffer may grow and what happens when it is full."""

    record_limit: int = UNBOUNDED
    byte_limit: int = UNBOUNDED
    when_full: str = "shut_down"  # or "emit": Kafka's BufferFullStrategy
    logging_enabled: bool = True  # the buffer has a changelog
    log_config: tuple[tuple[str, str], ...] = ()  # its changelog's topic configs (`with_logging_enabled`)

    @classmethod
    def unbounded(cls) -> BufferConfig:
        """No bound (Kafka's `unbounded()`, a strict config): keep everything until it is due."""
        return cls()

    @classmethod
    def max_records(cls, limit: int) -> BufferConfig:
        """At most `limit` keys; past that the oldest are emitted early."""
        return cls(_limit(limit, "max_records"), UNBOUNDED, "emit")

    @classmethod
    def max_bytes(cls, limit: int) -> BufferConfig:
        """At most `limit` bytes (Kafka's size estimate); past that the oldest are emitted early."""
        return cls(UNBOUNDED, _limit(limit, "max_bytes"), "emit")

    def with_max_records(self, limit: int) -> BufferConfig:
        return replace(self, record_limit=_limit(limit, "max_records"))

    def with_max_bytes(self, limit: int) -> BufferConfig:
        return replace(self, byte_limit=_limit(limit, "max_bytes"))

    def emit_early_when_full(self) -> BufferConfig:
        """When full, emit the oldest entries before they are due (Kafka's EagerBufferConfig)."""
        return replace(self, when_full="emit")

    def shut_down_when_full(self) -> BufferConfig:
        """When full, fail the application rather than emit anything early (Kafka's StrictBufferConfig)."""
        return replace(self, when_full="shut_down")

    def with_logging_disabled(self) -> BufferConfig:
        """No changelog for the buffer (Kafka's `BufferConfig#withLoggingDisabled`): nothing is written for it,
        and what it holds is lost when its task closes or moves, so a window buffered then is never emitted.
        Less traffic for that risk; `describe()` does not change."""
        return replace(self, logging_enabled=False, log_config=())

    def with_logging_enabled(self, config: Mapping[str, str]) -> BufferConfig:
        """A changelog for the buffer created with these topic configs (Kafka's `BufferConfig#withLoggingEnabled`).

        As Kafka's `UnwindowedUnversionedChangelogTopicConfig` applies them: over its defaults for a store
        changelog (`cleanup.policy=compact`, `message.timestamp.type=CreateTime`), so a key given here wins,
        `cleanup.policy` too. They replace any configs given before. Only a topic this creates gets them: an
        existing changelog keeps its configs, as in Kafka. `describe()` does not change."""
        if not isinstance(config, Mapping):
            raise TopologyError(f"with_logging_enabled() takes a mapping of topic configs, got {config!r}")
        for key, value in config.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise TopologyError(
                    f"with_logging_enabled(): topic configs are strings (as Kafka's Map<String, String>), "
                    f"got {key!r}: {value!r}"
                )
        return replace(self, logging_enabled=True, log_config=tuple(sorted(config.items())))


@dataclass(frozen=True, slots=True)
class Suppressed:
    """What `KTable.suppress()` holds back; build with `until_window_closes` or `until_time_limit`.

    `window_close` marks emit-final: the buffer time of an update is its window's end, the wait is the
    window's grace period (known only when the suppression is added to a windowed table), and deletes are
    not emitted (nothing was emitted for the window before, so there is nothing to delete).
    """

    buffer_config: BufferConfig
    time_to_wait_ms: int | None  # None until suppress() fills in the windowed table's grace (emit-final)
    name: str | None = None
    window_close: bool = False

    @classmethod
    def until_window_closes(cls, buffer_config: BufferConfig) -> Suppressed:
        """Emit only the final result of each window, once stream time passes its end plus grace."""
        if not isinstance(buffer_config, BufferConfig):
            raise TopologyError(f"until_window_closes() takes a BufferConfig, got {buffer_config!r}")
        if buffer_config.when_full != "shut_down":
            raise TopologyError(
                "until_window_closes() needs a strict buffer config (BufferConfig.unbounded(), or a bounded one "
                "with .shut_down_when_full()): emitting early would not give final results"
            )
        return cls(buffer_config, None, window_close=True)

    @classmethod
    def until_time_limit(cls, time_to_wait_ms: int, buffer_config: BufferConfig) -> Suppressed:
        """Emit a key's latest update once stream time is `time_to_wait_ms` past its first buffered update."""
        if not isinstance(buffer_config, BufferConfig):
            raise TopologyError(f"until_time_limit() takes a BufferConfig, got {buffer_config!r}")
        return cls(buffer_config, _limit(time_to_wait_ms, "time_to_wait_ms"))

    def with_name(self, name: str) -> Suppressed:
        """Name the processor; its buffer is the store `<name>-store` (changelog `<app>-<name>-store-changelog`)."""
        return replace(self, name=name)
