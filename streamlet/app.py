"""App: the user-facing entry point, Faust's shape on Kafka Streams' engine.

An App holds the configuration, a `StreamsBuilder` for the DSL (`app.stream(...)`), and Faust-style
declarations (`app.topic`, `app.Table`, `@app.agent`); all of them compile into one `Topology` that a
`KafkaStreams` client runs. `streamlet worker module:app` runs it as a worker process.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import signal
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from datetime import timedelta, tzinfo
from types import MappingProxyType
from typing import Any, NoReturn

from streamlet import app_commands
from streamlet.config import StreamsConfig
from streamlet.errors import ConfigError
from streamlet.faust import agents, global_tables, timers
from streamlet.faust.app_client import AppClient
from streamlet.faust.channels import Channel
from streamlet.faust.replies import ReplyConsumer
from streamlet.faust.windowed_tables import WindowWrapper
from streamlet.kafka.acls import Acl
from streamlet.kafka.topics import TopicSpec
from streamlet.progress_bar import terminal_progress_bar
from streamlet.runtime.kafka_streams import KafkaStreams
from streamlet.runtime.restore_listener import StateRestoreListener
from streamlet.serdes import Serde
from streamlet.status import read_group_events
from streamlet.topology import KStream, KTable, StreamsBuilder, Topology
from streamlet.web import Page, WebServer

log = logging.getLogger("streamlet.app")


class App:
    """A streamlet application: `App("streams-wordcount", num_stream_threads=2)`.

    Keyword arguments are StreamsConfig fields (Kafka Streams' names in snake_case); unknown ones are an
    error at once, with a suggestion.
    """

    def __init__(self, application_id: str, **config: Any) -> None:
        StreamsConfig.from_mapping({"application_id": application_id, **config})  # validate early
        self.application_id = application_id
        self._config = dict(config)
        self.builder = StreamsBuilder()
        self._agents: list[agents.Agent] = []
        self._channels = 0
        self._tables: dict[str, agents.Table] = {}
        self._pages: list[Page] = []
        self._topology: Topology | None = None
        self._optimization: str | None = None  # what the topology was built with (None: given, not built)
        self._client: AppClient | None = None  # while a worker or `client()` runs: sends outside tasks, asks
        self._timers: list[timers.Timer] = []
        self._timer_service: timers.TimerService | None = None  # while a worker runs
        self._stop_requested: asyncio.Event | None = None  # set by SIGINT/SIGTERM or stop_worker()

    @classmethod
    def from_topology(cls, application_id: str, topology: Topology, **config: Any) -> App:
        """Run a Topology built elsewhere (a bare `StreamsBuilder`) as an App, e.g. from `streamlet worker`.

        The App starts frozen: its topology is given, so declaring streams, tables or agents on it is an error.
        """
        app = cls(application_id, **config)
        app._topology = topology
        return app

    # ---- configuration ------------------------------------------------------------------------------------

    @property
    def settings(self) -> Mapping[str, Any]:
        """The keyword config given to `App(...)`: one level of the worker's configuration precedence."""
        return MappingProxyType(self._config)

    def config(self, **overrides: Any) -> StreamsConfig:
        """The effective config: the App's settings, then `overrides` (e.g. from the command line)."""
        values = {"application_id": self.application_id, **self._config}
        values.update({k: v for k, v in overrides.items() if v is not None})
        return StreamsConfig.from_mapping(values)

    # ---- DSL ----------------------------------------------------------------------------------------------

    def stream(
        self, topics: str | Iterable[str], key_serde: Serde | str | None = None, value_serde: Serde | str | None = None
    ) -> KStream:
        """`builder.stream(...)`: start a DSL pipeline."""
        self._check_open()
        return self.builder.stream(topics, key_serde, value_serde)

    def table(
        self,
        topic: str,
        key_serde: Serde | str | None = None,
        value_serde: Serde | str | None = None,
        store_name: str | None = None,
    ) -> KTable:
        """`builder.table(...)`: a KTable of `topic`, to join streams with (see `StreamsBuilder.table`)."""
        self._check_open()
        return self.builder.table(topic, key_serde, value_serde, store_name)

    # ---- Faust-style declarations ----------------------------------------------------------------------------

    def topic(
        self,
        name: str,
        *,
        key_serde: Serde | str | None = None,
        value_serde: Serde | str | None = None,
        key_type: Any = None,
        value_type: Any = None,
    ) -> agents.TopicRef:
        """A topic to read with an agent or to `await topic.send(...)` to from one.

        `value_type=PageView` (a `streamlet.Record` or pydantic model, or str/int/bytes) picks the serde when
        none is given; a serde given with a type must carry it (checked here).
        """
        ref = agents.TopicRef(name, key_serde, value_serde, key_type=key_type, value_type=value_type)
        ref.outside_tasks = self._send_outside_tasks
        return ref

    def Table(  # noqa: N802
        self,
        name: str,
        *,
        key_serde: Serde | str | None = None,
        value_serde: Serde | str | None = None,
        default: Callable[[], Any] | None = None,
        key_type: Any = None,
        value_type: Any = None,
        on_window_close: Callable[[Any, Any], Any] | None = None,
    ) -> agents.Table:
        """A table backed by a RocksDB store `name` with changelog `<application_id>-<name>-changelog`.

        Serdes: as given, else from `key_type`/`value_type`, else str keys and JSON values. Capitalised like
        Faust's `app.Table`; inside this class body the name is the method, so the class is always spelled
        `agents.Table` here. `on_window_close(key, value)` gets each window's final value once, when stream time
        closes it (a windowed table's; see `streamlet.faust.window_close`).
        """
        self._check_open()
        if name in self._tables:
            raise ValueError(f"table {name!r} is declared twice")
        table = agents.Table(
            name,
            key_serde,
            value_serde,
            default,
            key_type=key_type,
            value_type=value_type,
            on_window_close=on_window_close,
        )
        self._tables[name] = table
        return table

    def GlobalTable(  # noqa: N802
        self,
        name: str,
        *,
        key_serde: Serde | str | None = None,
        value_serde: Serde | str | None = None,
        default: Callable[[], Any] | None = None,
        key_type: Any = None,
        value_type: Any = None,
        partitions: int = 1,
    ) -> global_tables.GlobalTable:
        """Faust's `app.GlobalTable`: every worker holds the whole table, readable from any agent (no need to
        list it in `tables=`), stored in the compacted topic `<application_id>-<name>-changelog` (created with
        `partitions` if missing). Writes go to that topic and to this worker's copy (see
        `streamlet.faust.global_tables`)."""
        self._check_open()
        if name in self._tables:
            raise ValueError(f"table {name!r} is declared twice")
        if not isinstance(partitions, int) or isinstance(partitions, bool) or partitions < 1:
            raise ValueError(f"global table {name}: partitions must be a positive int, got {partitions!r}")
        table = global_tables.GlobalTable(
            name,
            global_tables.changelog_topic(self.application_id, name),
            key_serde,
            value_serde,
            default,
            partitions=partitions,
            key_type=key_type,
            value_type=value_type,
        )
        self._tables[name] = table
        return table

    def channel(self, name: str | None = None, *, value_type: Any = None) -> Channel:
        """An in-memory channel between agents (Faust's `app.channel()`); see `streamlet.faust.channels`."""
        self._channels += 1
        return Channel(name or f"channel-{self._channels}", value_type=value_type)

    def agent(
        self,
        topic: agents.TopicRef | Channel | str | None = None,
        *,
        name: str | None = None,
        tables: Iterable[agents.Table | WindowWrapper] = (),
        sink: Iterable[agents.Sink] = (),
    ) -> Callable[[Callable[..., Any]], agents.Agent]:
        """Decorate `async def fn(stream)`; `async for value in stream` runs once per record, inside the task.

        Operations called on `stream` before the loop (`flat_map_values`, `group_by`, `filter`, ...) become
        topology nodes, so a `group_by` is a repartition topic exactly as in the DSL. `tables` are the
        tables the agent reads and writes: their stores belong to the agent's sub-topology. Values the agent
        `yield`s go to each `sink` (topics, agents, channels, callables), as in Faust. Several agents may read
        one topic. As in Faust, `topic` may be a name, or left out for `<application_id>-<agent name>`; such a
        topic has str keys and JSON values (Faust's defaults) and, like every source topic, must exist.
        Returns the `Agent` (Faust's agent object: `await agent.send(value=...)` from another agent).
        """
        self._check_open()

        def register(fn: Callable[..., Any]) -> agents.Agent:
            agent_name = name or fn.__name__
            source = topic if topic is not None else f"{self.application_id}-{agent_name}"
            if isinstance(source, str):
                source = agents.TopicRef(source, "str", "json")
            agent = agents.Agent(fn, source, agent_name, tuple(tables), tuple(sink))
            agent.replies = self._reply_consumer
            if isinstance(source, agents.TopicRef):
                source.outside_tasks = self._send_outside_tasks
            self._agents.append(agent)
            return agent

        return register

    def timer(
        self, interval: float | timedelta, *, on_leader: bool = True, name: str | None = None
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorate `async def fn()` (or `fn(app)`): run it every `interval` seconds while a worker runs (Faust's).

        With `on_leader=True` (the default) one worker of the application runs it at each tick, the owner of task
        0_0; with False, every worker does. See `streamlet.faust.timers`.
        """

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            self._timers.append(timers.interval_timer(fn, interval, on_leader=on_leader, name=name or fn.__name__))
            return fn

        return register

    def crontab(
        self, cron_format: str, *, timezone: tzinfo | str | None = None, on_leader: bool = True
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorate `async def fn()` (or `fn(app)`): run it at the times a 5-field cron expression matches, in
        `timezone` (default UTC), while a worker runs (Faust's `app.crontab`); `on_leader` as for `timer`."""

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            self._timers.append(
                timers.crontab_timer(fn, cron_format, timezone=timezone, on_leader=on_leader, name=fn.__name__)
            )
            return fn

        return register

    def page(self, path: str, *, method: str = "GET") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorate `async def handler(web, request, **match_info)`: a page of the worker's web server (Faust's).

        Served when the worker runs with a web port (`--web-port`, or `web_port=`). `path` uses aiohttp's
        syntax (`/count/{word}`); the handler returns `web.json(...)`/`web.text(...)`, an aiohttp response, or
        a JSON-able value. Tables are readable in it: a key owned by another worker forwards the request
        there; during a rebalance or restoration the request answers 503 (retriable).
        """

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            self._pages.append(Page(path, fn, method.upper()))
            return fn

        return register

    # ---- building and running ----------------------------------------------------------------------------

    def topology(self, topology_optimization: str | None = None) -> Topology:
        """Compile the DSL and the agents (once; the App is frozen afterwards), optimized as
        `topology_optimization` (default: the App's setting) says; asking for another one afterwards is an error."""
        optimization = self.config().topology_optimization if topology_optimization is None else topology_optimization
        if self._topology is not None and self._optimization is not None and optimization != self._optimization:
            raise ConfigError(
                f"topology_optimization={optimization!r}, but the App's topology was already built with "
                f"{self._optimization!r}; set it on the App (App(..., topology_optimization=...))"
            )
        if self._topology is None:
            for table in self._tables.values():
                table.check()
                if isinstance(table, global_tables.GlobalTable):
                    table.ktable = self.builder.global_table(
                        table.topic, table.key_serde, table.value_serde, store_name=table.name
                    )
            agents.compile_agents(self.builder, self._agents)
            self._topology = self.builder.build(optimization)
            self._optimization = optimization
        return self._topology

    def streams(self, *, restore_listener: StateRestoreListener | None = None, **overrides: Any) -> KafkaStreams:
        owned = [
            TopicSpec(t.topic, t.partitions, {"cleanup.policy": "compact"})
            for t in self._tables.values()
            if isinstance(t, global_tables.GlobalTable)
        ]
        config = self.config(**overrides)
        return KafkaStreams(
            self.topology(config.topology_optimization),
            config,
            restore_listener=restore_listener,
            owned_topics=owned,
            output_topics=agents.agent_output_topics(self._agents),
        )

    def cleanup(self, **overrides: Any) -> None:
        """Delete this application's local state (Kafka Streams' `KafkaStreams#cleanUp`), keeping the process id.

        Call it while no worker of this App runs on the state directory; the next start restores every
        store from its changelog.
        """
        self.streams(**overrides).cleanup()

    def required_acls(self, principal: str, **overrides: Any) -> list[Acl]:
        """The minimal ACLs `principal` needs to run this App on a cluster that enforces ACLs (`streamlet acls`)."""
        return self.streams(**overrides).required_acls(principal)

    @contextlib.asynccontextmanager
    async def client(self, **overrides: Any) -> AsyncIterator[App]:
        """The App as a client of its workers, running no tasks: `agent.ask(...)` and `topic.send(...)` work inside.

        `async with app.client(bootstrap_servers=...):` — what it started (a producer, the reply consumer) is
        stopped on exit.
        """
        self.topology()  # compiled: which agents can be asked
        self._client = AppClient(self.config(**overrides))
        try:
            yield self
        finally:
            await self._stop_services()

    def _running_client(self, what: str) -> AppClient:
        if self._client is None:
            raise agents.AgentError(
                f"{what} outside an agent needs a running App: call it in a worker (an @app.page, an @app.timer) "
                "or inside `async with app.client():`"
            )
        return self._client

    async def _reply_consumer(self) -> ReplyConsumer:
        """The App's reply consumer, started on first use (an `ask()`) while a worker or `client()` runs."""
        return await self._running_client("ask()").replies()

    async def _send_outside_tasks(
        self, topic: str, key: bytes | None, value: bytes | None, partition: int | None
    ) -> None:
        """`topic.send()` from a timer, a page or `app.client()`: sent at once (see `streamlet.faust.app_client`)."""
        await self._running_client(f"send() to topic {topic}").send(topic, key, value, partition)

    async def _stop_services(self) -> None:
        """Stop what the App owns besides its KafkaStreams client: its timers, then its producer and replies."""
        if self._timer_service is not None:
            await self._timer_service.stop()
            self._timer_service = None
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    async def run_worker(self, *, worker_timers: bool = True, **overrides: Any) -> None:
        """Run until SIGINT/SIGTERM (clean shutdown: commit, flush, checkpoint) or a thread fails.

        `worker_timers=False` leaves the timers that run on every worker (`on_leader=False`) to another process of
        the same worker (the first process of a `process_per_thread` worker), so they still run once per worker.
        """
        streams = self.streams(**overrides)
        config = streams.config
        self._client = AppClient(config)
        web_server = None
        if config.web_port:  # up before the client starts: it answers 503 until the first assignment
            web_server = WebServer(
                streams,
                host=config.web_host,
                port=config.web_port,
                pages=self._pages,
                group_events=functools.partial(read_group_events, config.cluster, config.application_id),
                security=config.web_security,
            )
            await web_server.start()
        stop = self._stop_requested = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, stop.set)
        try:
            async with terminal_progress_bar(streams.restore_progress):  # only on a terminal
                await streams.start()
                own = [t for t in self._timers if worker_timers or t.on_leader]
                if own:
                    self._timer_service = timers.TimerService(own, self, streams)
                    self._timer_service.start()
                stopper = asyncio.create_task(stop.wait())
                failure = asyncio.create_task(streams.wait())
                done, _ = await asyncio.wait({stopper, failure}, return_when=asyncio.FIRST_COMPLETED)
                for task in (stopper, failure):
                    if task not in done:
                        task.cancel()
                        with contextlib.suppress(asyncio.CancelledError):
                            await task
                if failure in done:
                    failure.result()  # re-raise a thread failure
        finally:
            await self._stop_services()
            await streams.close()
            if web_server is not None:
                await web_server.stop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                with contextlib.suppress(NotImplementedError, RuntimeError):
                    loop.remove_signal_handler(sig)

    def stop_worker(self) -> None:
        """Ask the worker `run_worker()` runs to stop cleanly, as SIGTERM does (it returns once stopped)."""
        if self._stop_requested is not None:
            self._stop_requested.set()

    def main(self, argv: Sequence[str] | None = None) -> NoReturn:
        """Run this App's command line and exit: `python myapp.py worker -l info`, as Faust's `app.main()`.

        The commands are `streamlet worker`/`cleanup`/`topology describe` without the MODULE:APP argument,
        with the same flags and configuration precedence.
        """
        raise SystemExit(app_commands.app_main(self, argv))

    def _check_open(self) -> None:
        if self._topology is not None:
            raise RuntimeError("the App's topology is already built; declare streams, tables and agents first")
