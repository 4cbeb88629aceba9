"""`app.topic(...)`: a topic an agent reads, or sends to, with its serdes and (optionally) its types.

`key_type`/`value_type` (a `streamlet.Record`, a pydantic model, str, int, bytes, ...) choose the serde when
none is given, and are checked against the one given, when the App is declared rather than at the first
record.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from streamlet.errors import TopologyError
from streamlet.faust.agent_context import current_context, task_context
from streamlet.runtime.task_context import TaskContext
from streamlet.serdes import BytesSerde, Serde, SerdeLike, resolve_serde
from streamlet.typed_serdes import check_serde_fits, serde_for_type

__all__ = ["Carried", "TopicRef", "declared_serde"]


@dataclass(frozen=True)
class Carried:
    """What a stream knows about its keys or values: the serde (None: not declared) and the Python type."""

    serde: Serde | None
    type: Any = None


def declared_serde(spec: SerdeLike, tp: Any, where: str) -> Serde | None:
    """The serde given as `spec`, checked against the declared type; else the type's serde; else None."""
    try:
        serde = resolve_serde(spec)
    except (TypeError, ValueError) as exc:
        raise TopologyError(f"{where}: {exc}") from exc
    if serde is not None:
        check_serde_fits(serde, tp, where)
        return serde
    return None if tp is None else serde_for_type(tp)


class TopicRef:
    """A topic declared with `app.topic(...)`: an agent's input, or an output to `await send()` to.

    `key_type`/`value_type` (a `streamlet.Record`, a pydantic model, str, int, bytes, ...) choose the serde
    when none is given, and are checked against the one given.
    """

    def __init__(
        self,
        name: str,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
        *,
        key_type: Any = None,
        value_type: Any = None,
    ) -> None:
        self.name = name
        self.key = Carried(declared_serde(key_serde, key_type, f"topic {name} key_serde"), key_type)
        self.value = Carried(declared_serde(value_serde, value_type, f"topic {name} value_serde"), value_type)
        self._key_serde: Serde = self.key.serde or BytesSerde()
        self._value_serde: Serde = self.value.serde or BytesSerde()
        #: `send(topic, key, value, partition)` outside agents: the App's (set by `app.topic` / `@app.agent`)
        self.outside_tasks: Callable[[str, bytes | None, bytes | None, int | None], Awaitable[None]] | None = None

    @property
    def key_serde(self) -> Serde:
        return self._key_serde

    @property
    def value_serde(self) -> Serde:
        return self._value_serde

    async def send(self, *, key: Any = None, value: Any = None, partition: int | None = None) -> None:
        """In an agent: queue a record for this topic (completes at once; sent before the task's commit).

        Outside every agent (a timer, a page, `app.client()`) of a topic declared with `app.topic`: sent at once
        through the App's producer (`streamlet.faust.app_client`).
        """
        ctx = task_context.get()
        key_bytes = self._key_serde.serialize(self.name, key)
        value_bytes = self._value_serde.serialize(self.name, value)
        if ctx is None and self.outside_tasks is not None:
            await self.outside_tasks(self.name, key_bytes, value_bytes, partition)
            return
        ctx = current_context(f"send() to topic {self.name}")
        ctx.send(self.name, key_bytes, value_bytes, record_timestamp(ctx), partition)

    def __repr__(self) -> str:
        return f"TopicRef({self.name!r})"


def record_timestamp(ctx: TaskContext) -> int:
    """The timestamp of the record being processed, which records an agent sends carry (as a Kafka Streams sink).

    The wall clock only when the context does not say; never 0, which the broker's time-based retention
    would take for 1970 and delete.
    """
    timestamp = getattr(ctx, "timestamp", None)  # a StreamTask's, or the TopologyTestDriver's task's
    if timestamp is None:
        timestamp = getattr(getattr(ctx, "record_context", None), "timestamp", -1)
    return timestamp if isinstance(timestamp, int) and timestamp >= 0 else int(time.time() * 1000)
