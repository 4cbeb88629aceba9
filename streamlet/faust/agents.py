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

import contextlib
import inspect
import sys
import weakref
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from streamlet.faust.agent_context import AgentError, record_value, run_inline, task_context
from streamlet.faust.agent_references import check_declared_tables, output_topics
from streamlet.faust.agent_stream import NEXT, AgentStream, NextRecord
from streamlet.faust.channels import Channel
from streamlet.faust.global_tables import GlobalTable
from streamlet.faust.replies import ReplyConsumer, reply_serde, reply_target
from streamlet.faust.tables import Table
from streamlet.faust.topic_ref import Carried, TopicRef, record_timestamp
from streamlet.faust.windowed_tables import WindowWrapper
from streamlet.runtime.task_context import TaskContext
from streamlet.topology import KStream, StreamsBuilder

__all__ = ["Agent", "AgentError", "AgentStream", "Sink", "Table", "TopicRef", "compile_agents"]


class Agent:
    """What `@app.agent(topic)` returns, as in Faust: the agent's function plus `send`, its topic and sinks.

    Sinks receive every value the agent `yield`s (an agent with a `yield` is an async generator; its
    `async for` loop still runs inside the task): a TopicRef, a Channel or another Agent gets
    `send(value=...)`, and a plain callable is called with the value.
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        topic: TopicRef | Channel,
        name: str,
        tables: tuple[Table | WindowWrapper, ...] = (),
        sinks: tuple[Sink, ...] = (),
    ) -> None:
        if not (inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn)):
            raise AgentError(f"agent {name} must be an `async def` function taking the stream")
        if isinstance(topic, Channel) and tables:
            raise AgentError(f"agent {name} reads channel {topic.name}: a channel agent has no tables")
        for sink in sinks:
            if not (isinstance(sink, TopicRef | Agent | Channel) or callable(sink)):
                raise AgentError(f"agent {name}: a sink must be a topic, an agent or a callable, got {sink!r}")
        self.fn = fn
        self.topic = topic
        self.name = name
        self.tables = tuple(t.table if isinstance(t, WindowWrapper) else t for t in tables)
        self.sinks = sinks
        #: the App's reply consumer, started on first use (set when `@app.agent` registers the agent)
        self.replies: Callable[[], Awaitable[ReplyConsumer]] | None = None
        self.rekeys = False  # its stream goes through a repartition topic before its loop (set when compiled)

    async def send(self, *, key: Any = None, value: Any = None, partition: int | None = None) -> None:
        """Send a record to this agent's topic or channel (Faust's `agent.send`): from an agent, or, for a topic,
        from a timer, a page or `app.client()` while the App runs (see `TopicRef.send`)."""
        if isinstance(self.topic, Channel):
            await self.topic.send(key=key, value=value)
            return
        await self.topic.send(key=key, value=value, partition=partition)

    async def ask(
        self,
        value: Any = None,
        *,
        key: Any = None,
        partition: int | None = None,
        timeout: float = 30.0,
        reply_type: Any = None,
    ) -> Any:
        """Send `value` to this agent's topic and return the value the agent yields for it (Faust's `ask`).

        The request carries a reply topic and a correlation id (see `streamlet.faust.replies`); the first reply
        naming it is decoded as JSON (as `reply_type`'s model with a model type). Call it from outside the
        agents, while the App runs: in a worker (an `@app.page`, an `on_leader=False` `@app.timer`) or in
        `async with app.client()`. An agent (or a leader timer) cannot ask: it runs inline in a task, which
        cannot wait for a reply.
        No reply within `timeout` seconds raises `AskTimeoutError`.
        """
        if task_context.get() is not None:
            raise AgentError(
                f"agent {self.name}: ask() cannot be awaited inside an agent or an on_leader timer, which run inline "
                "in a task and cannot wait for a reply; use send() and handle the answer in an agent of its own"
            )
        if isinstance(self.topic, Channel):
            raise AgentError(f"agent {self.name} reads channel {self.topic.name}, in memory: it cannot be asked")
        if self.replies is None:
            raise AgentError(f"agent {self.name} is not declared on an App (`@app.agent`), so it cannot be asked")
        if self.rekeys:
            raise AgentError(
                f"agent {self.name} re-keys its stream (group_by) before its loop, and a request's reply-to "
                "headers do not survive the repartition topic; ask an agent that reads its topic directly"
            )
        replies = await self.replies()
        topic = self.topic
        raw = await replies.request(
            topic.name,
            topic.key_serde.serialize(topic.name, key),
            topic.value_serde.serialize(topic.name, value),
            partition,
            timeout,
            self.name,
        )
        return reply_serde(reply_type).deserialize(replies.topic, raw)

    def __repr__(self) -> str:
        return f"Agent({self.name!r}, topic={self.topic.name!r})"


Sink = TopicRef | Agent | Channel | Callable[[Any], Any]


class _Ended(AgentError):
    """The agent's function returned (or its generator stopped)."""


class _Awaited(AgentError):
    """The agent awaited something other than its next record."""


class _Run:
    """One run of an agent: its stream, and the awaitable that resumes it with the next record."""

    __slots__ = ("stream", "generator", "pending")

    def __init__(self, agent: Agent, stream: Any) -> None:
        self.stream = stream
        made = agent.fn(stream)
        self.generator: Any = made if inspect.isasyncgen(made) else None
        self.pending: Any = _first_step(made) if self.generator is not None else made

    def feed(self, agent: Agent, item: Any) -> list[Any]:
        """Resume the agent with `item` until it waits for the next record; the values it yielded meanwhile."""
        out: list[Any] = []
        while True:
            try:
                waits_for = self.pending.send(item)
            except StopIteration as stop:
                if self.generator is None:
                    raise _Ended(f"agent {agent.name} left its `async for` loop; agents must run forever") from None
                out.append(stop.value)  # the agent yielded a value: resume it to its next `await`
                self.pending = self.generator.asend(None)
                item = None
                continue
            except StopAsyncIteration:
                raise _Ended(f"agent {agent.name} left its `async for` loop; agents must run forever") from None
            if waits_for is NEXT:
                return out
            raise _Awaited(
                f"agent {agent.name} awaited {waits_for!r}: agents run inside their task and may only await "
                "streamlet operations such as `topic.send(...)`"
            )

    def close(self) -> None:
        with contextlib.suppress(GeneratorExit, StopIteration, StopAsyncIteration, RuntimeError):
            self.pending.throw(GeneratorExit)


def _first_step(generator: Any) -> Any:
    """The generator's first `asend`, made without the event loop's async-generator hooks.

    The loop would track the generator (its `firstiter` hook) and `aclose()` it when it shuts down. The driver
    here owns it instead, and it is always suspended inside an `asend` the driver holds: the loop's `aclose()`
    would fail with "asynchronous generator is already running" and log an error at every worker shutdown.
    """
    hooks = sys.get_asyncgen_hooks()
    sys.set_asyncgen_hooks(firstiter=None, finalizer=None)
    try:
        return generator.asend(None)
    finally:
        sys.set_asyncgen_hooks(*hooks)


def agent_output_topics(agents: Iterable[Agent]) -> dict[str, list[str]]:
    """Topic -> the agents that may write it (their code's topic references and their sinks): the client
    checks at start-up that these exist."""
    out: dict[str, list[str]] = {}
    for agent in agents:
        for topic in output_topics(agent.fn, agent.sinks):
            out.setdefault(topic, []).append(f"agent {agent.name}")
    return out


def compile_agents(builder: StreamsBuilder, agents: Iterable[Agent]) -> None:
    """Add every agent's pipeline and processor node to `builder`.

    Agents reading the same topic share one source node (Kafka Streams reads a topic once); their topic
    declarations must then agree on the serdes.
    """
    sources: dict[str, tuple[TopicRef, KStream]] = {}
    for agent in agents:
        topic = agent.topic
        if isinstance(topic, Channel):
            topic.subscribe(_channel_subscriber(agent))
            continue

        def source_of(topic: TopicRef, agent: Agent = agent) -> KStream:
            """The topic's one source node (an agent's input, or a stream it joins)."""
            if topic.name not in sources:
                sources[topic.name] = (topic, builder.stream(topic.name, topic.key_serde, topic.value_serde))
            first, kstream = sources[topic.name]
            if (type(first.key_serde), type(first.value_serde)) != (type(topic.key_serde), type(topic.value_serde)):
                raise AgentError(
                    f"agent {agent.name} reads topic {topic.name} with {topic.key_serde!r}/{topic.value_serde!r}, "
                    f"another agent with {first.key_serde!r}/{first.value_serde!r}: declare the topic once"
                )
            return kstream

        check_declared_tables(agent.name, agent.fn, agent.tables)
        kstream = source_of(topic)
        recorder: list[AgentStream] = []
        # undeclared keys are not known to be bytes (group_by then picks str); undeclared values are bytes
        root = AgentStream(
            kstream,
            recorder,
            topic.key,
            Carried(topic.value_serde, topic.value.type),
            agent.name,
            topic.name,
            source_of,
        )
        _trace(agent, root)
        if not recorder:
            raise AgentError(f"agent {agent.name} must start with `async for ... in stream` before awaiting anything")
        final = recorder[-1]
        assert final._kstream is not None
        agent.rekeys = final.rekeyed
        own = [t for t in agent.tables if not isinstance(t, GlobalTable)]  # global stores are every task's
        stores = []
        for table in own:
            builder.add_store(table.name, table.key_serde, table.value_serde, windows=table.windows)
            stores.append(table.name)
            if isinstance(table, Table) and table.closer is not None:
                builder.add_store(table.closer.store_name, "bytes", "bytes", queryable=False)
                stores.append(table.closer.store_name)
        final._kstream.process(_agent_processor_factory(agent), stores=stores)


def _trace(agent: Agent, stream: Any) -> None:
    """Run the agent up to its first wait for a record, so that its stream records what it does before the loop."""
    run = _Run(agent, stream)
    try:
        yielded = run.feed(agent, None)
    except _Ended:
        raise AgentError(f"agent {agent.name} returned without iterating its stream") from None
    except _Awaited:
        raise AgentError(
            f"agent {agent.name} must start with `async for ... in stream` before awaiting anything"
        ) from None
    finally:
        run.close()
    if yielded:
        raise AgentError(f"agent {agent.name} yielded before iterating its stream")


def _agent_processor_factory(agent: Agent) -> Callable[[TaskContext], Callable[[Any, Any], None]]:
    def factory(ctx: TaskContext) -> Callable[[Any, Any], None]:
        def start() -> _Run:
            run = _Run(agent, AgentStream(None))
            token = task_context.set(ctx)
            try:
                if run.feed(agent, None):
                    raise AgentError(f"agent {agent.name} yielded before iterating its stream")
            except _Awaited:
                raise AgentError(f"agent {agent.name} awaited something before iterating its stream") from None
            finally:
                task_context.reset(token)
            return run

        current = [start()]
        closers = [t.closer for t in agent.tables if isinstance(t, Table) and t.closer is not None]

        def process(key: Any, value: Any) -> None:
            run = current[0]
            token = task_context.set(ctx)
            value_token = record_value.set(value)
            try:
                for closer in closers:  # windows the record's timestamp closes, before the agent writes
                    closer.advance(ctx, record_timestamp(ctx))
                yielded = run.feed(agent, (key, value) if run.stream.with_keys else value)
                if yielded:
                    asker = reply_target(getattr(getattr(ctx, "record_context", None), "headers", ()))
                    for item in yielded:
                        _to_sinks(agent, item)
                        if asker is not None:
                            _reply(ctx, asker, item)
            except Exception:
                # The exception ended the agent's run. Start a fresh one (its tables keep their state, as when
                # Faust restarts a crashed agent) so that a handler that skips the record can go on.
                run.close()
                current[0] = start()
                raise
            finally:
                record_value.reset(value_token)
                task_context.reset(token)

        return process

    return factory


def _to_sinks(agent: Agent, value: Any) -> None:
    for sink in agent.sinks:
        if isinstance(sink, TopicRef | Agent | Channel):
            run_inline(sink.send(value=value), "a sink")
        else:
            run_inline(sink(value), "a sink")


def _reply(ctx: TaskContext, asker: tuple[str, bytes], value: Any) -> None:
    """Send one yielded value to the asker's reply topic, keyed by the request's correlation id."""
    topic, correlation_id = asker
    ctx.send(topic, correlation_id, reply_serde(type(value)).serialize(topic, value), record_timestamp(ctx), 0)


class _ChannelStream:
    """A channel agent's stream while the App is built: records the in-memory operations before its loop."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.steps: list[Callable[[Any], list[Any]]] = []
        self.with_keys = False
        self.iterated = False

    def filter(self, predicate: Callable[[Any], bool]) -> _ChannelStream:
        self.steps.append(lambda v: [v] if predicate(v) else [])
        return self

    def map_values(self, fn: Callable[[Any], Any], value_serde: Any = None) -> _ChannelStream:
        self.steps.append(lambda v: [fn(v)])
        return self

    def flat_map_values(self, fn: Callable[[Any], Iterable[Any]], value_serde: Any = None) -> _ChannelStream:
        self.steps.append(lambda v: list(fn(v)))
        return self

    def items(self) -> _ChannelStream:
        self.with_keys = True
        return self

    def group_by(self, *args: Any, **kwargs: Any) -> _ChannelStream:
        raise AgentError(
            f"agent {self.agent.name}: a channel is in memory and not partitioned, so it has no group_by; "
            "send to a topic and group_by there"
        )

    def __aiter__(self) -> _ChannelStream:
        self.iterated = True
        return self

    def __anext__(self) -> NextRecord:
        return NextRecord()


def _task_of(ctx: Any) -> Any:
    """The task behind a processor's context (one per node), so two agents of a task share one run per agent."""
    return getattr(ctx, "task", ctx)


def _channel_subscriber(agent: Agent) -> Callable[[TaskContext, Any, Any], None]:
    """Record the agent's in-memory steps now; return what runs it, once per sending task, on each value sent."""
    recorded = _ChannelStream(agent)
    _trace(agent, recorded)
    if not recorded.iterated:
        raise AgentError(f"agent {agent.name} must start with `async for ... in stream` before awaiting anything")
    steps, with_keys = tuple(recorded.steps), recorded.with_keys
    runs: dict[int, _Run] = {}  # one run per sending task, by the task object's id while it lives

    def run_for(ctx: TaskContext) -> _Run:
        task = _task_of(ctx)
        run = runs.get(id(task))
        if run is None:
            run = runs[id(task)] = _Run(agent, AgentStream(None))
            run.feed(agent, None)
            weakref.finalize(task, runs.pop, id(task), None)
        return run

    def deliver(ctx: TaskContext, key: Any, value: Any) -> None:
        values = [value]
        for step in steps:
            values = [out for v in values for out in step(v)]
        for item in values:
            run = run_for(ctx)
            try:
                for out in run.feed(agent, (key, item) if with_keys else item):
                    _to_sinks(agent, out)
            except Exception:
                runs.pop(id(_task_of(ctx)), None)  # the next value starts a fresh run, as for a topic agent
                raise

    return deliver
