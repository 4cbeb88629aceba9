"""The leader's assignment history on the real broker: the events in `<app>-assignments` say what threads got.

Two WordCount clients (2 threads each, seed 000's process ids) join; every rebalance the leader computes must
appear as one versioned event, and the last event's active/standby tasks per client must be exactly what
that client's threads logged as their assignment.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re

import pytest

from examples.wordcount.dsl import build_topology
from streamlet.assignment.history import HISTORY_VERSION, assignment_history_topic
from streamlet.config import StreamsConfig
from streamlet.runtime.kafka_streams import KafkaStreams
from tests.support.kafka import KafkaTestCluster, unique_name
from tests.support.wordcount import write_process_id

pytestmark = pytest.mark.integration

A = "4b61083e-57d0-457d-951f-d06556c148ca"
B = "7156cef1-307e-49c0-a5bb-0f11d26a4933"
_ASSIGNED = re.compile(
    r"stream-thread \[.*?-([0-9a-f-]{36})-StreamThread-\d+\] assigned active \[(.*?)\] standby \[(.*?)\]"
)


class ThreadLog(logging.Handler):
    """The latest assignment each thread logged, keyed by thread name."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.latest: dict[str, tuple[str, list[str], list[str]]] = {}

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        match = _ASSIGNED.search(message)
        if match:
            split = lambda s: [t.strip("' ") for t in s.split(",") if t.strip("' ")]  # noqa: E731
            thread = message.split("]")[0]
            self.latest[thread] = (match.group(1), split(match.group(2)), split(match.group(3)))

    def by_client(self) -> dict[str, dict[str, list[str]]]:
        out: dict[str, dict[str, list[str]]] = {}
        for pid, active, standby in self.latest.values():
            entry = out.setdefault(pid, {"active": [], "standby": []})
            entry["active"] = sorted(entry["active"] + active)
            entry["standby"] = sorted(entry["standby"] + standby)
        return out


async def test_two_clients_produce_events_matching_the_threads_assignments(kafka: KafkaTestCluster, tmp_path) -> None:
    source = await kafka.create_topic("streams-plaintext-input", partitions=6)
    sink = await kafka.create_topic("streams-wordcount-output", partitions=6)
    app_id = unique_name("history-wordcount")
    for suffix in ("counts-store-repartition", "counts-store-changelog", "assignments"):
        kafka.track(f"{app_id}-{suffix}")
    topology = build_topology(source, sink)
    handler = ThreadLog()
    logger = logging.getLogger("streamlet.thread")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    clients: list[KafkaStreams] = []
    try:
        for pid in (A, B):
            state_dir = tmp_path / pid[:8]
            write_process_id(state_dir, app_id, pid)
            config = StreamsConfig(
                application_id=app_id,
                bootstrap_servers=kafka.bootstrap_servers,
                state_dir=str(state_dir),
                num_stream_threads=2,
                commit_interval_ms=500,
            )
            clients.append(KafkaStreams(topology, config))
            await clients[-1].start()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 60
        events: list[dict] = []
        while loop.time() < deadline:
            await asyncio.sleep(0.5)
            threads = handler.by_client()
            if len(handler.latest) < 4 or set(threads) != {A, B}:
                continue
            records = await kafka.drain(assignment_history_topic(app_id), 1)
            events = [json.loads(r.value) for r in records]
            if events and len(events[-1]["clients"]) == 2:
                last = {c["process_id"]: c for c in events[-1]["clients"]}
                if all(last[p]["active"] == threads[p]["active"] for p in (A, B)):
                    break
        assert events, "no assignment event in the history topic"
        assert all(e["version"] == HISTORY_VERSION and e["application_id"] == app_id for e in events)
        assert all(isinstance(e["generation"], int) for e in events)
        generations = [e["generation"] for e in events]
        assert generations == sorted(generations), generations
        last = {c["process_id"]: c for c in events[-1]["clients"]}
        threads = handler.by_client()
        assert set(last) == {A, B}
        for pid in (A, B):
            assert last[pid]["active"] == threads[pid]["active"], (pid, last[pid], threads[pid])
            assert sorted(last[pid]["standby"] + last[pid]["warmup"]) == threads[pid]["standby"]
            assert last[pid]["capacity"] == 2 and len(last[pid]["threads"]) == 2
            assert sorted(t for th in last[pid]["threads"] for t in th["active"]) == last[pid]["active"]
        assert sorted(t for c in last.values() for t in c["active"]) == sorted(events[-1]["tasks"])
        assert events[0]["trigger"] == "join" and events[-1]["assignor"] == "high_availability"
    finally:
        logger.removeHandler(handler)
        for client in clients:
            await client.close()


async def test_assignment_history_off_creates_no_topic(kafka: KafkaTestCluster, tmp_path) -> None:
    source = await kafka.create_topic("streams-plaintext-input", partitions=2)
    sink = await kafka.create_topic("streams-wordcount-output", partitions=2)
    app_id = unique_name("no-history")
    for suffix in ("counts-store-repartition", "counts-store-changelog"):
        kafka.track(f"{app_id}-{suffix}")
    config = StreamsConfig(
        application_id=app_id,
        bootstrap_servers=kafka.bootstrap_servers,
        state_dir=str(tmp_path),
        assignment_history=False,
    )
    client = KafkaStreams(build_topology(source, sink), config)
    handler = ThreadLog()
    logger = logging.getLogger("streamlet.thread")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        await client.start()
        deadline = asyncio.get_running_loop().time() + 60
        while not handler.latest and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.2)
        assert handler.latest, "the client got no assignment"
        assert client.assignment_history is None
        assert assignment_history_topic(app_id) not in set(await kafka.admin.list_topics())
    finally:
        logger.removeHandler(handler)
        await client.close()
