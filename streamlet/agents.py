"""Faust-style agents, compiled onto the Kafka Streams engine.

An agent is `async def fn(stream)` with an `async for` over the stream. streamlet runs it *inside the
task*: operations called on the stream before the loop (`flat_map_values`, `filter`, `group_by`, ...)
become topology nodes (see `agent_stream`), and the loop body becomes a processor node whose coroutine is
driven one record at a time. The record is therefore processed, its table updates are in the store (and
changelog) and its sends are queued before its offset can be committed: at-least-once like the DSL, with
no separate acking machinery and no event-loop hop per record.

The price of running inline: the body may await only streamlet operations (`topic.send`), which never
suspend. Awaiting anything else (a sleep, a network call) is reported as an error naming the agent.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from streamlet.agent_context import AgentError, task_context
from streamlet.agent_stream import NEXT, AgentStream
from streamlet.runtime.processor_graph import TaskContext
from streamlet.tables import Table
from streamlet.topic_ref import Carried, TopicRef
from streamlet.topology import StreamsBuilder

__all__ = ["AgentError", "AgentSpec", "AgentStream", "Table", "TopicRef", "compile_agents"]


@dataclass(frozen=True)
class AgentSpec:
    fn: Callable[..., Any]
    topic: TopicRef
    name: str
    tables: tuple[Table, ...]


def compile_agents(builder: StreamsBuilder, agents: Iterable[AgentSpec]) -> None:
    """Add every agent's pipeline and processor node to `builder`."""
    for agent in agents:
        if not inspect.iscoroutinefunction(agent.fn):
            raise AgentError(f"agent {agent.name} must be an `async def` function taking the stream")
        topic = agent.topic
        recorder: list[AgentStream] = []
        kstream = builder.stream(topic.name, topic.key_serde, topic.value_serde)
        # undeclared keys are not known to be bytes (group_by then picks str); undeclared values are bytes
        root = AgentStream(kstream, recorder, topic.key, Carried(topic.value_serde, topic.value.type), agent.name)
        coro = agent.fn(root)
        try:
            yielded = coro.send(None)
        except StopIteration:
            raise AgentError(f"agent {agent.name} returned without iterating its stream") from None
        finally:
            coro.close()
        if yielded is not NEXT or not recorder:
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
                if coro.send(None) is not NEXT:
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
            if yielded is not NEXT:
                raise AgentError(
                    f"agent {agent.name} awaited {yielded!r}: agents run inside their task and may only await "
                    "streamlet operations such as `topic.send(...)`"
                )

        return process

    return factory
