"""Faust's `on_window_close` for windowed tables: each window's final value, once, when the window closes.

    app.Table("clicks", default=int, on_window_close=write_final).tumbling(60, expires=timedelta(seconds=70))

**When a window closes.** When the stream time of the table's agent (the largest record timestamp it has
processed in that partition) reaches the window's end plus its grace period, where grace = `expires` - size
(a window store keeps windows `size + grace` long: Kafka's rule, so `expires` is the retention). That is the
moment Kafka Streams' `suppress(until_window_closes)` emits a window, and the first moment no record can
change it: a later write to a closed window (a late record) is dropped, as Kafka's windowed aggregations drop
it. The closing runs when a record moves stream time past the window, *before* the agent sees that record, so
the window is still in the store (its writes could otherwise expire it). No record, no closing: stream time
only moves with records, as in Kafka Streams. Windows close in order of their end (window start, then key
bytes), and the callback gets Faust's arguments: `((key, (start, end)), value)`, times in seconds with
Faust's `end = start + size - 0.1`. It runs inside the task, like the agent body: `await topic.send(...)` in
it is committed with the task, and it may await nothing else.

**Once, across crashes.** Each partition keeps one number in the changelogged store `<table>-closed-windows`:
the stream time of its last closing (M). A record at T closes the windows starting in
`(M - size - grace, T - size - grace]` (none most of the time: only when T crosses a window's close time),
then M becomes T. The callback's sends and that write are part of the same task commit, so under
`exactly_once_v2` they are in one transaction with the input offsets: after a crash the task restores M as of
its last commit and processes the records after it again, so closings of an aborted transaction happen again
and committed ones never. Under `at_least_once` a crash may close a window again, as Kafka's suppress may
emit again.
Why this rather than Kafka's suppression buffer (a changelogged copy of every open window's latest value):
the window store already holds and changelogs the values, and which windows are closed is a function of
stream time alone, so one long per partition is all the extra state there is. M is written only when
windows close; between closings no window's state depends on the exact stream time, since window starts
are aligned to the step and none lies between M's and T's close points.

Differences from Faust, which closes windows by the wall clock (every `table_cleanup_interval`) once it is
`expires` past their end, and deletes them: here stream time decides, `expires` counts from the window
start, and a closed window stays readable until it expires from the store.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from streamlet.faust.agent_context import run_inline
from streamlet.runtime.task_context import TaskContext
from streamlet.state import window_key_schema
from streamlet.topology.windows import TimeWindow, TimeWindows

__all__ = ["WindowCloseCallback", "WindowCloser", "closed_windows_store"]

#: `on_window_close((key, (start_s, end_s)), value)`, sync or `async def`
WindowCloseCallback = Callable[[Any, Any], Any]

_TIME = struct.Struct(">q")
_MARKER = b"stream-time"


def closed_windows_store(table_name: str) -> str:
    """The store holding, per partition, the stream time up to which `table_name`'s windows are closed."""
    return f"{table_name}-closed-windows"


class WindowCloser:
    """Closes one windowed table's windows as its agent's stream time moves (see the module docstring)."""

    def __init__(self, table: Any, windows: TimeWindows, callback: WindowCloseCallback) -> None:
        self.table = table
        self.windows = windows
        self.callback = callback
        self.store_name = closed_windows_store(table.name)

    def _closed_through(self, stream_time: int | None) -> int | None:
        """The latest window start closed at `stream_time` (None: none is)."""
        if stream_time is None:
            return None
        windows = self.windows
        return (stream_time - windows.size_ms - windows.grace_ms) // windows.advance_ms * windows.advance_ms

    def _marker(self, ctx: TaskContext) -> int | None:
        raw = ctx.get_state_store(self.store_name).get(_MARKER)
        return None if raw is None else int(_TIME.unpack(raw)[0])

    def is_closed(self, ctx: TaskContext, window_start: int) -> bool:
        """True if the window has closed: a write to it now is late, and dropped."""
        closed = self._closed_through(self._marker(ctx))
        return closed is not None and window_start <= closed

    def drop_late(self, ctx: TaskContext, window: TimeWindow) -> None:
        """Count and log a write to a closed window (a late record) as a dropped record of the agent's node,
        as Kafka's windowed aggregations count theirs (see `streamlet.runtime.dropped_records`)."""
        dropped = getattr(ctx, "dropped", None)
        if dropped is None:  # not in a task's processor (nothing to count in)
            return
        stream_time = int(getattr(ctx, "stream_time", -1))
        node = getattr(ctx, "node", self.table.name)
        dropped.late(node, ctx, window.start, window.end, stream_time - self.windows.grace_ms, stream_time)

    def advance(self, ctx: TaskContext, timestamp: int) -> None:
        """Stream time moves to `timestamp` (if later): close the windows that closes, in order."""
        marker = self._marker(ctx)
        if marker is not None and timestamp <= marker:
            return
        before, now = self._closed_through(marker), self._closed_through(timestamp)
        assert now is not None
        if before is not None and now <= before:
            return  # stream time moved, but past no window's close time: nothing to write
        table, lowest = self.table, None if before is None else before + 1
        due = []
        store: Any = ctx.get_state_store(table.name)  # a window store: it iterates (the KeyValueStore protocol)
        for store_key, raw_value in store.all():
            start = window_key_schema.window_start_of(store_key)
            if (lowest is None or start >= lowest) and start <= now:
                due.append((start, window_key_schema.key_of(store_key), raw_value))
        size_s, what = self.windows.size_ms / 1000, f"table {table.name}: on_window_close"
        for start, raw_key, raw_value in sorted(due):
            key = table.key_serde.deserialize(table.name, raw_key)
            start_s = start / 1000
            window_key = (key, (start_s, start_s + size_s - 0.1))  # Faust's WindowRange
            run_inline(self.callback(window_key, table.value_serde.deserialize(table.name, raw_value)), what)
        ctx.get_state_store(self.store_name).put(_MARKER, _TIME.pack(timestamp))
