"""Faust-style agents, compiled onto the Kafka Streams engine.

An agent is `async def fn(stream)` with an `async for` over the stream. streamlet runs it *inside the
task*: operations called on the stream before the loop (`flat_map_values`, `filter`, `group_by`, ...)
become topology nodes, and the loop body becomes a processor node whose coroutine is driven one record
at a time. The record is therefore processed, its table updates are in the store (and changelog) and
its sends are queued before its offset can be committed: at-least-once like the DSL, with no separate
acking machinery and no event-loop hop per record.

The price of running inline: the body may await only streamlet operations (`topic.send`), which never
suspend. Awaiting anything else (a sleep, a network call) is reported as an error naming the agent.

Serdes follow the data. The stream knows its keys' and values' serde and type from the topic (`key_type=`,
`value_type=`), keeps them through `filter`, and learns new ones from `map_values(value_serde=...)` or a
function's return annotation. A `group_by` writes its repartition topic with the values' serde and a key
serde from the key function's type (a Record field such as `PageView.user`, or an annotation), else the
stream's declared key serde, else str. Values whose type nothing declares (after a lambda) travel as JSON,
Faust's default. A declared serde that cannot carry a declared type is an error when the topology is built.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass
from typing import Any

from streamlet.agent_context import AgentError, current_context, task_context
from streamlet.errors import TopologyError
from streamlet.models import FieldDescriptor
from streamlet.runtime.processor_graph import TaskContext
from streamlet.serdes import BytesSerde, JsonSerde, Serde, SerdeLike, StringSerde, resolve_serde
from streamlet.tables import Table
from streamlet.topology import KStream, StreamsBuilder
from streamlet.typed_serdes import check_serde_fits, element_type, is_model, result_type, serde_for_type, serde_type

__all__ = ["AgentError", "AgentSpec", "AgentStream", "Table", "TopicRef", "compile_agents"]

_NEXT = object()  # what the agent coroutine yields when it waits for the next record


class _NextRecord:
    __slots__ = ()

    def __await__(self) -> Generator[object, Any, Any]:
        item = yield _NEXT
        return item


@dataclass(frozen=True)
class _Carried:
    """What a stream knows about its keys or values: the serde (None: not declared) and the Python type."""

    serde: Serde | None
    type: Any = None


def _declared_serde(spec: SerdeLike, tp: Any, where: str) -> Serde | None:
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
        self.key = _Carried(_declared_serde(key_serde, key_type, f"topic {name} key_serde"), key_type)
        self.value = _Carried(_declared_serde(value_serde, value_type, f"topic {name} value_serde"), value_type)
        self._key_serde: Serde = self.key.serde or BytesSerde()
        self._value_serde: Serde = self.value.serde or BytesSerde()

    @property
    def key_serde(self) -> Serde:
        return self._key_serde

    @property
    def value_serde(self) -> Serde:
        return self._value_serde

    async def send(self, *, key: Any = None, value: Any = None, partition: int | None = None) -> None:
        """Queue a record for this topic (completes at once; the producer sends it before the commit)."""
        ctx = current_context(f"send() to topic {self.name}")
        key_bytes = self._key_serde.serialize(self.name, key)
        value_bytes = self._value_serde.serialize(self.name, value)
        ctx.send(self.name, key_bytes, value_bytes, getattr(ctx, "timestamp", 0), partition)

    def __repr__(self) -> str:
        return f"TopicRef({self.name!r})"


@dataclass(frozen=True)
class AgentSpec:
    fn: Callable[..., Any]
    topic: TopicRef
    name: str
    tables: tuple[Table, ...]


class AgentStream:
    """The stream an agent receives.

    While the topology is compiled, its operations add DSL nodes and track what the stream carries; while a
    task runs, they are no-ops (records reaching the agent have already been through those nodes) and
    iteration yields records.
    """

    def __init__(
        self,
        kstream: KStream | None,
        recorder: list[AgentStream] | None = None,
        key: _Carried = _Carried(None),
        value: _Carried = _Carried(None),
        agent: str = "",
    ) -> None:
        self._kstream = kstream
        self._recorder = recorder
        self._key = key
        self._value = value
        self._agent = agent
        self.with_keys = False

    def _then(self, make: Callable[[KStream], KStream], key: _Carried, value: _Carried) -> AgentStream:
        if self._kstream is None:  # running inside a task
            return self
        nxt = AgentStream(make(self._kstream), self._recorder, key, value, self._agent)
        nxt.with_keys = self.with_keys
        return nxt

    def filter(self, predicate: Callable[[Any], bool]) -> AgentStream:
        return self._then(lambda ks: ks.filter(lambda _k, v: predicate(v)), self._key, self._value)

    def map_values(self, fn: Callable[[Any], Any], value_serde: SerdeLike = None) -> AgentStream:
        """`value -> fn(value)`; the new values' serde is `value_serde`, else their annotated type's, else JSON."""
        if self._kstream is None:
            return self
        value = self._new_values(value_serde, result_type(fn), "map_values")
        return self._then(lambda ks: ks.map_values(fn), self._key, value)

    def flat_map_values(self, fn: Callable[[Any], Iterable[Any]], value_serde: SerdeLike = None) -> AgentStream:
        """One value per item of `fn(value)`; their serde as for `map_values` (`-> list[str]` means str)."""
        if self._kstream is None:
            return self
        value = self._new_values(value_serde, element_type(result_type(fn)), "flat_map_values")
        return self._then(lambda ks: ks.flat_map_values(fn), self._key, value)

    def _new_values(self, spec: SerdeLike, tp: Any, what: str) -> _Carried:
        where = f"agent {self._agent}: {what} value_serde"
        serde = _declared_serde(spec, tp, where)
        if serde is None:
            return _Carried(None)
        from_serde = _serde_type_or(serde, tp)
        return _Carried(serde, from_serde)

    def group_by(
        self, key_fn: Callable[[Any], Any], *, name: str, key_serde: SerdeLike = None, value_serde: SerdeLike = None
    ) -> AgentStream:
        """Re-key by `key_fn(value)` through the repartition topic `<application_id>-<name>-repartition`.

        Serdes follow the data (see the module docstring); give `key_serde`/`value_serde` to override.
        """
        if self._kstream is None:
            return self
        where = f"agent {self._agent}: group_by {name!r}"
        if isinstance(key_fn, FieldDescriptor) and is_model(self._value.type):
            if not issubclass(self._value.type, key_fn.model):
                raise TopologyError(
                    f"{where}: {key_fn.model.__name__}.{key_fn.name} is a field of {key_fn.model.__name__}, "
                    f"but the stream carries {self._value.type.__name__} values"
                )
        key_type = result_type(key_fn)
        keys = _declared_serde(key_serde, key_type, f"{where} key_serde")
        if keys is None:
            keys = self._key.serde if self._key.serde is not None else StringSerde()
        values = _declared_serde(value_serde, self._value.type, f"{where} value_serde")
        if values is None:
            values = self._value.serde if self._value.serde is not None else JsonSerde()
        return self._then(
            lambda ks: ks.select_key(lambda _k, v: key_fn(v)).repartition(name, key_serde=keys, value_serde=values),
            _Carried(keys, key_type),
            _Carried(values, self._value.type),
        )

    def items(self) -> AgentStream:
        """Iterate `(key, value)` pairs instead of values."""
        if self._kstream is None:
            self.with_keys = True
            return self
        nxt = AgentStream(self._kstream, self._recorder, self._key, self._value, self._agent)
        nxt.with_keys = True
        return nxt

    def __aiter__(self) -> AgentStream:
        if self._recorder is not None:
            self._recorder.append(self)
        return self

    def __anext__(self) -> _NextRecord:
        return _NextRecord()


def _serde_type_or(serde: Serde, tp: Any) -> Any:
    return tp if tp is not None else serde_type(serde)


def compile_agents(builder: StreamsBuilder, agents: Iterable[AgentSpec]) -> None:
    """Add every agent's pipeline and processor node to `builder`."""
    for agent in agents:
        if not inspect.iscoroutinefunction(agent.fn):
            raise AgentError(f"agent {agent.name} must be an `async def` function taking the stream")
        topic = agent.topic
        recorder: list[AgentStream] = []
        kstream = builder.stream(topic.name, topic.key_serde, topic.value_serde)
        # undeclared keys are not known to be bytes (group_by then picks str); undeclared values are bytes
        root = AgentStream(kstream, recorder, topic.key, _Carried(topic.value_serde, topic.value.type), agent.name)
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
            token = task_context.set(ctx)
            try:
                if coro.send(None) is not _NEXT:
                    raise AgentError(f"agent {agent.name} awaited something before iterating its stream")
            finally:
                task_context.reset(token)
            return stream, coro

        current = [start()]

        def process(key: Any, value: Any) -> None:
            stream, coro = current[0]
            token = task_context.set(ctx)
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
                task_context.reset(token)
            if yielded is not _NEXT:
                raise AgentError(
                    f"agent {agent.name} awaited {yielded!r}: agents run inside their task and may only await "
                    "streamlet operations such as `topic.send(...)`"
                )

        return process

    return factory
