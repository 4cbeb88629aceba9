"""Faust-style agents and tables, compiled onto the Kafka Streams engine.

An agent is `async def fn(stream)` with an `async for` over the stream. streamlet runs it *inside the
task*: operations called on the stream before the loop (`flat_map_values`, `filter`, `group_by`, ...)
become topology nodes, and the loop body becomes a processor node whose coroutine is driven one record
at a time. The record is therefore processed, its table updates are in the store (and changelog) and
its sends are queued before its offset can be committed: at-least-once like the DSL, with no separate
acking machinery and no event-loop hop per record.

The price of running inline: the body may await only streamlet operations (`topic.send`), which never
suspend. Awaiting anything else (a sleep, a network call) is reported as an error naming the agent.
"""

from __future__ import annotations

import contextvars
import inspect
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass
from typing import Any

from streamlet.errors import TopologyError
from streamlet.runtime.processor_graph import TaskContext
from streamlet.serdes import Serde, SerdeLike, resolve_serde
from streamlet.topology import KStream, StreamsBuilder

_current_context: contextvars.ContextVar[TaskContext | None] = contextvars.ContextVar("streamlet_task", default=None)
_NEXT = object()  # what the agent coroutine yields when it waits for the next record


class AgentError(TopologyError):
    """An agent did something it cannot do when running inside a task."""


class _NextRecord:
    __slots__ = ()

    def __await__(self) -> Generator[object, Any, Any]:
        item = yield _NEXT
        return item


def _context(what: str) -> TaskContext:
    ctx = _current_context.get()
    if ctx is None:
        raise AgentError(f"{what} can only be used inside an agent while it processes a record")
    return ctx


class TopicRef:
    """A topic declared with `app.topic(...)`: an agent's input, or an output to `await send()` to."""

    def __init__(self, name: str, key_serde: SerdeLike, value_serde: SerdeLike) -> None:
        self.name = name
        self.key_serde_spec = key_serde
        self.value_serde_spec = value_serde
        self._key_serde = resolve_serde(key_serde) or resolve_serde("bytes")
        self._value_serde = resolve_serde(value_serde) or resolve_serde("bytes")

    async def send(self, *, key: Any = None, value: Any = None, partition: int | None = None) -> None:
        """Queue a record for this topic (completes at once; the producer sends it before the commit)."""
        ctx = _context(f"send() to topic {self.name}")
        key_bytes = self._key_serde.serialize(self.name, key)  # type: ignore[union-attr]
        value_bytes = self._value_serde.serialize(self.name, value)  # type: ignore[union-attr]
        # the record's timestamp, as a sink would write it (contexts without one, e.g. test fakes, give 0)
        ctx.send(self.name, key_bytes, value_bytes, getattr(ctx, "timestamp", 0), partition)

    def __repr__(self) -> str:
        return f"TopicRef({self.name!r})"


class Table:
    """A dict-like view of the current task's store `name` (RocksDB, changelogged, partitioned like the stream)."""

    def __init__(
        self, name: str, key_serde: SerdeLike, value_serde: SerdeLike, default: Callable[[], Any] | None
    ) -> None:
        self.name = name
        self.key_serde: Serde = resolve_serde(key_serde)  # type: ignore[assignment]
        self.value_serde: Serde = resolve_serde(value_serde)  # type: ignore[assignment]
        self.default = default

    def _store(self) -> Any:
        return _context(f"table {self.name}").get_state_store(self.name)

    def _key(self, key: Any) -> bytes:
        data = self.key_serde.serialize(self.name, key)
        if data is None:
            raise KeyError(f"table {self.name}: None is not a valid key")
        return data

    def __getitem__(self, key: Any) -> Any:
        raw = self._store().get(self._key(key))
        if raw is None:
            if self.default is not None:
                return self.default()
            raise KeyError(key)
        return self.value_serde.deserialize(self.name, raw)

    def get(self, key: Any, default: Any = None) -> Any:
        raw = self._store().get(self._key(key))
        return default if raw is None else self.value_serde.deserialize(self.name, raw)

    def __contains__(self, key: Any) -> bool:
        return self._store().get(self._key(key)) is not None

    def __setitem__(self, key: Any, value: Any) -> None:
        self._store().put(self._key(key), self.value_serde.serialize(self.name, value))

    def __delitem__(self, key: Any) -> None:
        self._store().delete(self._key(key))

    def __repr__(self) -> str:
        return f"Table({self.name!r})"


@dataclass(frozen=True)
class AgentSpec:
    fn: Callable[..., Any]
    topic: TopicRef
    name: str
    tables: tuple[Table, ...]


class AgentStream:
    """The stream an agent receives.

    While the topology is compiled, its operations add DSL nodes; while a task runs, they are no-ops
    (records reaching the agent have already been through those nodes) and iteration yields records.

    The stream remembers the serde of its values when it is known (the topic's, kept by `filter`, or the
    one given to `map_values`): a later `group_by` writes the repartition topic with it, as the DSL does.
    """

    def __init__(
        self, kstream: KStream | None, recorder: list[AgentStream] | None = None, value_serde: SerdeLike = None
    ) -> None:
        self._kstream = kstream
        self._recorder = recorder
        self._value_serde = value_serde
        self.with_keys = False

    def _then(self, make: Callable[[KStream], KStream], value_serde: SerdeLike) -> AgentStream:
        if self._kstream is None:  # running inside a task
            return self
        nxt = AgentStream(make(self._kstream), self._recorder, value_serde)
        nxt.with_keys = self.with_keys
        return nxt

    def filter(self, predicate: Callable[[Any], bool]) -> AgentStream:
        return self._then(lambda ks: ks.filter(lambda _k, v: predicate(v)), self._value_serde)

    def map_values(self, fn: Callable[[Any], Any], value_serde: SerdeLike = None) -> AgentStream:
        """`value -> fn(value)`; `value_serde` is the new values' serde, for a later `group_by`."""
        return self._then(lambda ks: ks.map_values(fn), value_serde)

    def flat_map_values(self, fn: Callable[[Any], Iterable[Any]]) -> AgentStream:
        return self._then(lambda ks: ks.flat_map_values(fn), None)

    def group_by(
        self, key_fn: Callable[[Any], Any], *, name: str, key_serde: SerdeLike = "str", value_serde: SerdeLike = None
    ) -> AgentStream:
        """Re-key by `key_fn(value)` through the repartition topic `<application_id>-<name>-repartition`.

        `value_serde` defaults to the stream's value serde, or "str" when the stream does not know it.
        """
        if value_serde is None:
            value_serde = "str" if self._value_serde is None else self._value_serde
        return self._then(
            lambda ks: ks.select_key(lambda _k, v: key_fn(v)).repartition(
                name, key_serde=key_serde, value_serde=value_serde
            ),
            value_serde,
        )

    def items(self) -> AgentStream:
        """Iterate `(key, value)` pairs instead of values."""
        if self._kstream is None:
            self.with_keys = True
            return self
        nxt = AgentStream(self._kstream, self._recorder, self._value_serde)
        nxt.with_keys = True
        return nxt

    def __aiter__(self) -> AgentStream:
        if self._recorder is not None:
            self._recorder.append(self)
        return self

    def __anext__(self) -> _NextRecord:
        return _NextRecord()


def compile_agents(builder: StreamsBuilder, agents: Iterable[AgentSpec]) -> None:
    """Add every agent's pipeline and processor node to `builder`."""
    for agent in agents:
        if not inspect.iscoroutinefunction(agent.fn):
            raise AgentError(f"agent {agent.name} must be an `async def` function taking the stream")
        topic = agent.topic
        recorder: list[AgentStream] = []
        root = AgentStream(
            builder.stream(topic.name, topic.key_serde_spec, topic.value_serde_spec), recorder, topic.value_serde_spec
        )
        coro = agent.fn(root)
        try:
            yielded = coro.send(None)
        except StopIteration:
            raise AgentError(f"agent {agent.name} returned without iterating its stream") from None
        finally:
            coro.close()
        if yielded is not _NEXT or not recorder:
            raise AgentError(f"agent {agent.name} must start with `async for ... in stream` before awaiting anything")
        final = recorder[-1]
        assert final._kstream is not None
        for table in agent.tables:
            builder.add_store(table.name, table.key_serde, table.value_serde)
        final._kstream.process(_agent_processor_factory(agent), stores=[t.name for t in agent.tables])


def _agent_processor_factory(agent: AgentSpec) -> Callable[[TaskContext], Callable[[Any, Any], None]]:
    def factory(ctx: TaskContext) -> Callable[[Any, Any], None]:
        def start() -> tuple[AgentStream, Any]:
            stream = AgentStream(None)
            coro = agent.fn(stream)
            token = _current_context.set(ctx)
            try:
                if coro.send(None) is not _NEXT:
                    raise AgentError(f"agent {agent.name} awaited something before iterating its stream")
            finally:
                _current_context.reset(token)
            return stream, coro

        current = [start()]

        def process(key: Any, value: Any) -> None:
            stream, coro = current[0]
            token = _current_context.set(ctx)
            try:
                yielded = coro.send((key, value) if stream.with_keys else value)
            except StopIteration:
                raise AgentError(f"agent {agent.name} left its `async for` loop; agents must run forever") from None
            except Exception:
                # The exception ended the agent's coroutine. Start a fresh one (its tables keep their state, as
                # when Faust restarts a crashed agent) so that a handler that skips the record can go on.
                current[0] = start()
                raise
            finally:
                _current_context.reset(token)
            if yielded is not _NEXT:
                raise AgentError(
                    f"agent {agent.name} awaited {yielded!r}: agents run inside their task and may only await "
                    "streamlet operations such as `topic.send(...)`"
                )

        return process

    return factory
