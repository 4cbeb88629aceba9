"""Faust's windowed tables: `app.Table(...).tumbling(size, expires=...)` / `.hopping(size, step, expires=...)`.

`table[key]` is a `WindowSet`: `table[key] += 1` updates every window the record falls in (one when tumbling,
`size / step` when hopping), and `.current()`, `.now()`, `.delta(d)`, `.value()` read one window, as in Faust,
and `.at(t)` the window of event time `t` (streamlet's: what a web page, which has no record, reads by):

* `current()`: the latest window holding the current record's timestamp;
* `delta(d)`: the latest window holding the record's timestamp minus `d` seconds (the window `d` ago);
* `now()`: the earliest window holding the end of the newest window this partition has (Faust's partition
  "now": the newest window written in the partition, so `now()` of a tumbling table is its newest window);
* `value()`: the latest window holding the wrapper's relative time: the record's timestamp by default or after
  `relative_to_stream()`, the partition's "now" after `relative_to_now()`, a field of the record's value after
  `relative_to_field(Model.field)`, a fixed time after `relative_to(t)`. Writes use the same relative time.

Times are Faust's: seconds (int, float or `timedelta`), and a field or fixed time may be a `datetime`.
Windows are Kafka Streams' (aligned to the epoch, `[start, start + size)`, in milliseconds inside).

Storage is streamlet's segmented window store (`streamlet.state.window_store`), under Kafka's windowed keys
(key bytes + window start + seqnum) with a windowed changelog, so windows restore and have standbys like any
store. A window is kept for `expires` (default: one day, Kafka's default window retention) behind the newest
window of its partition, then dropped with its segment; reading an expired window gives the default. A
missing window reads as the table's `default()`, or raises KeyError without one, as Faust's tables do.
A table with `on_window_close` gets each window's final value once, when stream time closes it
(`streamlet.faust.window_close`); writes to a closed window are then dropped.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import Any, Protocol

from streamlet.errors import TopologyError
from streamlet.faust.agent_context import current_context, record_value, table_store
from streamlet.faust.topic_ref import record_timestamp
from streamlet.faust.window_close import WindowCloser
from streamlet.runtime.task_context import TaskContext
from streamlet.serdes import Serde
from streamlet.state import window_key_schema
from streamlet.task_id import TaskId
from streamlet.topology.windows import TimeWindow, TimeWindows

__all__ = ["DEFAULT_EXPIRES", "Seconds", "WindowSet", "WindowWrapper", "WindowedView", "to_ms", "window_spec"]

Seconds = int | float | timedelta
#: Kafka Streams' default window retention (one day), used when `expires` is not given.
DEFAULT_EXPIRES = timedelta(days=1)
#: `relative(ctx, wrapper)`: the time, in ms, that `value()` and writes pick windows by.
Relative = Callable[[TaskContext, "WindowWrapper"], int]


class WindowedTable(Protocol):
    """What a windowed table needs of `streamlet.faust.tables.Table`."""

    name: str
    key_serde: Serde
    value_serde: Serde
    default: Callable[[], Any] | None
    windows: TimeWindows | None
    latest_window: dict[TaskId, int]
    closer: WindowCloser | None


def to_ms(value: Seconds | datetime, what: str) -> int:
    """Faust's seconds (or a timedelta, or a datetime for a point in time) as integer milliseconds."""
    if isinstance(value, datetime):
        return round(value.timestamp() * 1000)
    if isinstance(value, timedelta):
        return round(value.total_seconds() * 1000)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return round(value * 1000)
    raise TopologyError(f"{what} must be seconds (int, float or timedelta), got {value!r}")


def window_spec(name: str, size: Seconds, step: Seconds, expires: Seconds | None) -> TimeWindows:
    """The window store's spec: windows of `size` every `step`, kept `expires` (at least one window) long."""
    size_ms, step_ms = to_ms(size, f"table {name}: size"), to_ms(step, f"table {name}: step")
    if size_ms <= 0 or step_ms <= 0:
        raise TopologyError(f"table {name}: window size and step must be positive, got {size!r} and {step!r}")
    if step_ms > size_ms:
        raise TopologyError(f"table {name}: a hopping window's step ({step!r}) cannot exceed its size ({size!r})")
    expires_ms = to_ms(DEFAULT_EXPIRES if expires is None else expires, f"table {name}: expires")
    if expires_ms < size_ms:
        raise TopologyError(f"table {name}: expires ({expires!r}) must be at least the window size ({size!r})")
    return TimeWindows(size_ms, step_ms, expires_ms - size_ms)  # retention = size + grace = expires


def _stream_time(ctx: TaskContext, wrapper: WindowWrapper) -> int:
    return record_timestamp(ctx)


def _partition_now(ctx: TaskContext, wrapper: WindowWrapper) -> int:
    """The last millisecond of the newest window this partition has (written here, or restored)."""
    table = wrapper.table
    windows = table.windows
    assert windows is not None
    newest = max(table.latest_window.get(ctx.task_id, -1), _observed_window_start(table_store(ctx, table.name)))
    if newest < 0:  # nothing written yet: the current record's newest window
        return record_timestamp(ctx)
    return newest + windows.size_ms - 1


def _observed_window_start(store: Any) -> int:
    """The newest window start the window store under the caching and logging layers has seen (-1: none)."""
    while store is not None:
        observed = getattr(store, "observed_stream_time", None)
        if isinstance(observed, int):
            return observed
        store = getattr(store, "inner", None)
    return -1


class WindowWrapper:
    """A windowed table (Faust's `WindowWrapper`); `wrapper[key]` is the key's `WindowSet`."""

    def __init__(self, table: WindowedTable, relative: Relative = _stream_time) -> None:
        if table.windows is None:
            raise TopologyError(f"table {table.name} is not windowed")
        self.table = table
        self.windows: TimeWindows = table.windows
        self._relative = relative

    @property
    def name(self) -> str:
        return self.table.name

    # ---- what `value()` and writes are relative to (Faust's names) ------------------------------------------

    def relative_to_stream(self) -> WindowWrapper:
        """Windows of the current record's timestamp (the default)."""
        return WindowWrapper(self.table, _stream_time)

    def relative_to_now(self) -> WindowWrapper:
        """Windows of the partition's "now": the end of its newest window (see the module docstring)."""
        return WindowWrapper(self.table, _partition_now)

    def relative_to_field(self, field: Callable[[Any], Any]) -> WindowWrapper:
        """Windows of a field of the record's value (`PageView.time`): seconds or a datetime."""
        where = f"table {self.name}: relative_to_field"

        def relative(ctx: TaskContext, wrapper: WindowWrapper) -> int:
            return to_ms(field(record_value.get()), f"{where} value")

        return WindowWrapper(self.table, relative)

    def relative_to(self, timestamp: Seconds | datetime) -> WindowWrapper:
        """Windows of a fixed time (seconds since the epoch, or a datetime)."""
        fixed = to_ms(timestamp, f"table {self.name}: relative_to")
        return WindowWrapper(self.table, lambda ctx, wrapper: fixed)

    def relative_time(self, ctx: TaskContext) -> int:
        return self._relative(ctx, self)

    # ---- access --------------------------------------------------------------------------------------------

    def __getitem__(self, key: Any) -> WindowSet:
        return WindowSet(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        """`table[key] = v` sets every window of the relative time; `table[key] += v` lands here with its WindowSet."""
        if isinstance(value, WindowSet):
            return  # the in-place operator already wrote its windows
        ctx = self._context()
        store, raw_key = table_store(ctx, self.name), self._key(key)
        for window in self.windows.windows_for(self.relative_time(ctx)):
            self._put(ctx, store, raw_key, window, value)

    def __delitem__(self, key: Any) -> None:
        """Delete the key's windows of the relative time (tombstones in the changelog)."""
        ctx = self._context()
        store, raw_key = table_store(ctx, self.name), self._key(key)
        for window in self.windows.windows_for(self.relative_time(ctx)):
            store.delete(window_key_schema.to_store_key(raw_key, window.start))

    def _context(self) -> TaskContext:
        return current_context(f"table {self.name}")

    def _key(self, key: Any) -> bytes:
        data = self.table.key_serde.serialize(self.name, key)
        if data is None:
            raise KeyError(f"table {self.name}: None is not a valid key")
        return data

    def _get(self, store: Any, raw_key: bytes, window: TimeWindow | None, key: Any) -> Any:
        raw = None if window is None else store.get(window_key_schema.to_store_key(raw_key, window.start))
        if raw is not None:
            return self.table.value_serde.deserialize(self.name, raw)
        if self.table.default is not None:
            return self.table.default()
        raise KeyError(key if window is None else (key, (window.start, window.end)))

    def _put(self, ctx: TaskContext, store: Any, raw_key: bytes, window: TimeWindow, value: Any) -> None:
        closer = self.table.closer
        if closer is not None and closer.is_closed(ctx, window.start):
            closer.drop_late(ctx, window)  # a late write: its final value is out (window_close.py)
            return
        store.put(
            window_key_schema.to_store_key(raw_key, window.start), self.table.value_serde.serialize(self.name, value)
        )
        latest = self.table.latest_window
        if window.start > latest.get(ctx.task_id, -1):
            latest[ctx.task_id] = window.start

    def _read(self, key: Any, timestamp: Callable[[TaskContext], int], pick: Callable[[list[TimeWindow]], Any]) -> Any:
        ctx = self._context()
        windows = self.windows.windows_for(timestamp(ctx))
        return self._get(table_store(ctx, self.name), self._key(key), pick(windows) if windows else None, key)

    # ---- every key of the partitions this worker runs (Faust's windowed keys/items/values views) --------------

    def keys(self) -> WindowedView:
        """The keys of this worker's partitions (`for key in table.keys()`, or `.now()`, `.current()`, ...)."""
        return WindowedView(self, lambda key, value: key)

    def items(self) -> WindowedView:
        """`(key, value)` of each key in one window each: the wrapper's relative time when iterated, or
        `.now()`, `.current()`, `.delta(d)` as a `WindowSet` reads them; keys without it are skipped (or
        give the default, as in Faust, when the table has one)."""
        return WindowedView(self, lambda key, value: (key, value))

    def values(self) -> WindowedView:
        return WindowedView(self, lambda key, value: value)

    def _items(
        self, time_of: Callable[[TaskContext, Any], int], pick: Callable[[list[TimeWindow]], Any]
    ) -> Iterator[tuple[Any, Any]]:
        """Per local store (partition), each distinct key and its value in the window `pick` chooses among
        those holding `time_of(ctx, store)`."""
        ctx = self._context()
        local = getattr(ctx, "local_stores", None)
        stores: list[Any] = [table_store(ctx, self.name)] if local is None else local(self.name)
        key_de = self.table.key_serde.deserialize
        for store in stores:
            windows = self.windows.windows_for(time_of(ctx, store))
            window = pick(windows) if windows else None
            for raw_key in dict.fromkeys(window_key_schema.key_of(k) for k, _ in store.all()):
                key = key_de(self.name, raw_key)
                try:
                    yield key, self._get(store, raw_key, window, key)
                except KeyError:
                    continue

    def __repr__(self) -> str:
        return f"WindowWrapper({self.name!r}, {self.windows})"


class WindowedView:
    """Keys, items or values of a windowed table over this worker's partitions (Faust's `WindowedItemsView`
    and its siblings): iterate for the wrapper's relative time, or pick the window with `now()`,
    `current()` or `delta(d)`. In a web page there is no record: its time is the wall clock."""

    __slots__ = ("wrapper", "_shape")

    def __init__(self, wrapper: WindowWrapper, shape: Callable[[Any, Any], Any]) -> None:
        self.wrapper = wrapper
        self._shape = shape

    def __iter__(self) -> Iterator[Any]:
        wrapper = self.wrapper
        return self._shaped(wrapper._items(lambda ctx, store: wrapper.relative_time(ctx), _latest))

    def now(self) -> Iterator[Any]:
        """In each partition's newest window (the end of the newest window its store has seen)."""
        return self._shaped(self.wrapper._items(_store_now(self.wrapper), _earliest))

    def current(self) -> Iterator[Any]:
        """In the latest window of the current record's timestamp."""
        return self._shaped(self.wrapper._items(lambda ctx, store: record_timestamp(ctx), _latest))

    def delta(self, d: Seconds) -> Iterator[Any]:
        """In the latest window of the current record's timestamp minus `d` seconds."""
        ms = to_ms(d, f"table {self.wrapper.name}: delta")
        return self._shaped(self.wrapper._items(lambda ctx, store: record_timestamp(ctx) - ms, _latest))

    def at(self, time: float | datetime) -> Iterator[Any]:
        """In the latest window holding event time `time` (seconds since the epoch, or a datetime)."""
        ms = to_ms(time, f"table {self.wrapper.name}: at")
        return self._shaped(self.wrapper._items(lambda ctx, store: ms, _latest))

    def _shaped(self, items: Iterator[tuple[Any, Any]]) -> Iterator[Any]:
        shape = self._shape
        return (shape(key, value) for key, value in items)

    def __repr__(self) -> str:
        return f"WindowedView({self.wrapper.name!r})"


def _store_now(wrapper: WindowWrapper) -> Callable[[TaskContext, Any], int]:
    """A partition's "now" from its own store (as `WindowSet.now()`), the wall clock where none is known."""
    size = wrapper.windows.size_ms

    def now(ctx: TaskContext, store: Any) -> int:
        newest = _observed_window_start(store)
        return record_timestamp(ctx) if newest < 0 else newest + size - 1

    return now


def _latest(windows: list[TimeWindow]) -> TimeWindow:
    return windows[-1]


def _earliest(windows: list[TimeWindow]) -> TimeWindow:
    return windows[0]


class WindowSet:
    """One key's windows of a windowed table (Faust's `WindowSet`)."""

    __slots__ = ("wrapper", "key")

    def __init__(self, wrapper: WindowWrapper, key: Any) -> None:
        self.wrapper = wrapper
        self.key = key

    def apply(self, op: Callable[[Any, Any], Any], value: Any) -> WindowSet:
        """`window = op(window, value)` in every window of the wrapper's relative time."""
        wrapper = self.wrapper
        ctx = wrapper._context()
        store, raw_key = table_store(ctx, wrapper.name), wrapper._key(self.key)
        for window in wrapper.windows.windows_for(wrapper.relative_time(ctx)):
            wrapper._put(ctx, store, raw_key, window, op(wrapper._get(store, raw_key, window, self.key), value))
        return self

    def value(self) -> Any:
        """The latest window of the wrapper's relative time (`relative_to_*`)."""
        return self.wrapper._read(self.key, self.wrapper.relative_time, _latest)

    def current(self) -> Any:
        """The latest window of the current record's timestamp."""
        return self.wrapper._read(self.key, record_timestamp, _latest)

    def now(self) -> Any:
        """The earliest window holding the partition's "now" (the end of its newest window)."""
        wrapper = self.wrapper
        return wrapper._read(self.key, lambda ctx: _partition_now(ctx, wrapper), _earliest)

    def delta(self, d: Seconds) -> Any:
        """The latest window of the current record's timestamp minus `d` seconds."""
        ms = to_ms(d, f"table {self.wrapper.name}: delta")
        return self.wrapper._read(self.key, lambda ctx: record_timestamp(ctx) - ms, _latest)

    def at(self, time: float | datetime) -> Any:
        """The latest window holding event time `time` (seconds since the epoch, or a datetime).

        In a web page there is no record, so `current()` and `value()` read the wall clock's window; this
        reads the window of any event time, e.g. one a request names, as long as the table still keeps it."""
        ms = to_ms(time, f"table {self.wrapper.name}: at")
        return self.wrapper._read(self.key, lambda ctx: ms, _latest)

    def __iadd__(self, other: Any) -> WindowSet:
        return self.apply(operator.add, other)

    def __isub__(self, other: Any) -> WindowSet:
        return self.apply(operator.sub, other)

    def __imul__(self, other: Any) -> WindowSet:
        return self.apply(operator.mul, other)

    def __itruediv__(self, other: Any) -> WindowSet:
        return self.apply(operator.truediv, other)

    def __ifloordiv__(self, other: Any) -> WindowSet:
        return self.apply(operator.floordiv, other)

    def __imod__(self, other: Any) -> WindowSet:
        return self.apply(operator.mod, other)

    def __ipow__(self, other: Any) -> WindowSet:
        return self.apply(operator.pow, other)

    def __ilshift__(self, other: Any) -> WindowSet:
        return self.apply(operator.lshift, other)

    def __irshift__(self, other: Any) -> WindowSet:
        return self.apply(operator.rshift, other)

    def __iand__(self, other: Any) -> WindowSet:
        return self.apply(operator.and_, other)

    def __ixor__(self, other: Any) -> WindowSet:
        return self.apply(operator.xor, other)

    def __ior__(self, other: Any) -> WindowSet:
        return self.apply(operator.or_, other)

    def __repr__(self) -> str:
        return f"WindowSet({self.wrapper.name!r}, {self.key!r})"
