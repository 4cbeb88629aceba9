"""Faust-style agents and tables compiled onto the topology, run on a fake task context (no broker)."""

from __future__ import annotations

import asyncio
import collections
import struct

import pytest

from streamlet import App
from streamlet.faust.agents import AgentError
from streamlet.runtime.topic_names import TopicNames
from streamlet.task_id import TaskId
from tests.unit.runtime._support import FakeContext, graph_of


def _split(line: str) -> list[str]:
    return line.split()


def _wordcount_app() -> App:
    app = App("agents-test")
    lines = app.topic("lines", key_serde="str", value_serde="str")
    out = app.topic("out", key_serde="str", value_serde="int64")
    counts = app.Table("counts", key_serde="str", value_serde="int64", default=int)

    @app.agent(lines, tables=[counts])
    async def count(stream):
        async for word in stream.flat_map_values(_split).group_by(lambda w: w, name="counts"):
            counts[word] += 1
            await out.send(key=word, value=counts[word])

    return app


def test_agent_compiles_to_a_repartitioned_stateful_subtopology() -> None:
    topology = _wordcount_app().topology()
    assert [s.id for s in topology.subtopologies] == [0, 1]
    names = TopicNames(topology, "agents-test")
    assert names.repartition_topics() == ["agents-test-counts-repartition"]
    assert names.changelog_topics() == {"counts": "agents-test-counts-changelog"}
    assert topology.stateful_subtopologies() == frozenset({1})


def test_agent_body_runs_per_record_with_table_and_send() -> None:
    topology = _wordcount_app().topology()
    words = "the cat and the hat and the bat".split()
    ctx = FakeContext(TaskId(1, 0), application_id="agents-test")
    graph = graph_of(topology, TaskId(1, 0), ctx)
    for offset, word in enumerate(words):
        graph.process("agents-test-counts-repartition", 0, offset, 1000 + offset, word.encode(), word.encode())

    expected = collections.Counter(words)
    stored = {k.decode(): struct.unpack(">q", v)[0] for k, v in ctx.stores["counts"].data.items()}
    assert stored == dict(expected)
    running: collections.Counter[str] = collections.Counter()
    for sent, word in zip(ctx.sent, words, strict=True):
        running[word] += 1
        assert (sent.topic, sent.key, struct.unpack(">q", sent.value)[0]) == ("out", word.encode(), running[word])


async def test_awaiting_real_io_in_an_agent_is_an_error() -> None:
    app = App("agents-test")

    @app.agent(app.topic("lines", value_serde="str"))
    async def sleepy(stream):
        async for _ in stream:
            await asyncio.sleep(0.01)

    graph = graph_of(app.topology(), TaskId(0, 0), FakeContext(TaskId(0, 0)))
    with pytest.raises(AgentError, match="sleepy awaited"):
        graph.process("lines", 0, 0, 0, None, b"x")


def test_agent_must_be_async_and_iterate() -> None:
    app = App("agents-test")

    @app.agent(app.topic("lines"))
    async def no_loop(stream):
        return None

    with pytest.raises(AgentError, match="without iterating"):
        app.topology()

    app2 = App("agents-test")
    with pytest.raises(AgentError, match="async def"):  # at once, where the agent is declared

        @app2.agent(app2.topic("lines"))
        def not_async(stream):
            return None


def test_table_outside_an_agent_is_an_error() -> None:
    table = App("agents-test").Table("t")
    with pytest.raises(AgentError, match="inside an agent"):
        table["x"]


def test_unknown_app_config_is_a_clear_error() -> None:
    from streamlet.errors import ConfigError

    with pytest.raises(ConfigError, match="did you mean 'num_stream_threads'"):
        App("x", num_stream_thread=2)


def test_app_cleanup_wipes_task_dirs_but_keeps_the_process_id(tmp_path) -> None:
    app = _wordcount_app()
    app_dir = tmp_path / "agents-test"
    (app_dir / "1_0" / "rocksdb" / "counts").mkdir(parents=True)
    (app_dir / "1_0" / "rocksdb" / "counts" / "data").write_text("x")
    (app_dir / "kafka-streams-process-metadata").write_text('{"processId":"7156cef1-307e-49c0-a5bb-0f11d26a4933"}')
    app.cleanup(state_dir=str(tmp_path))
    assert not (app_dir / "1_0").exists()
    assert "7156cef1" in (app_dir / "kafka-streams-process-metadata").read_text()


def test_map_values_serde_writes_the_repartition_topic() -> None:
    app = App("agents-test")

    @app.agent(app.topic("lines", value_serde="str"))
    async def lengths(stream):
        async for _ in stream.map_values(lambda line: {"n": len(line)}, value_serde="json").group_by(
            lambda v: str(v["n"]), name="lens"
        ):
            pass

    ctx = FakeContext(TaskId(0, 0), application_id="agents-test")
    graph_of(app.topology(), TaskId(0, 0), ctx).process("lines", 0, 0, 0, None, b"abc")
    assert [(s.topic, s.key, s.value) for s in ctx.sent] == [("agents-test-lens-repartition", b"3", b'{"n":3}')]
