"""`app.channel()`: an in-memory channel between agents, Faust's `app.channel()` on the inline model.

In Faust a channel is an asyncio queue that a channel agent drains in its own task, and whatever is in the
queue when the worker dies is lost. A streamlet agent runs inline in the task of the record it processes,
so `await channel.send(value=v)` runs every agent reading the channel at once, on `v`, in the sending
agent's task: its sends belong to the record being processed and are committed with it, at-least-once
like the rest. A channel is not a Kafka topic, hence not partitioned: a channel agent's stream may
`filter`, `map_values`, `flat_map_values` and take `items()`, but not `group_by`, and it has no tables
(whose stores belong to one sub-topology, while any task may send to a channel).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamlet.faust.agent_context import current_context
from streamlet.runtime.task_context import TaskContext

__all__ = ["Channel"]

#: `deliver(task_context, key, value)`: one channel agent's entry point, set up when the App is built.
Subscriber = Callable[[TaskContext, Any, Any], None]


class Channel:
    """An in-memory channel; read it with `@app.agent(channel)`, write it with `await channel.send(...)`."""

    def __init__(self, name: str, *, value_type: Any = None) -> None:
        self.name = name
        self.value_type = value_type
        self._subscribers: list[Subscriber] = []

    def subscribe(self, deliver: Subscriber) -> None:
        self._subscribers.append(deliver)

    async def send(self, *, key: Any = None, value: Any = None) -> None:
        """Run every agent reading this channel on `(key, value)`, now, in the current task."""
        if self.value_type is not None and value is not None and not isinstance(value, self.value_type):
            raise TypeError(
                f"channel {self.name} takes {self.value_type.__name__} values, got a {type(value).__name__}"
            )
        ctx = current_context(f"send() to channel {self.name}")
        for deliver in self._subscribers:
            deliver(ctx, key, value)

    def __repr__(self) -> str:
        return f"Channel({self.name!r})"
