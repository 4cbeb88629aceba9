"""A WordCount-shaped task manager on fake Kafka clients and real RocksDB, for runtime unit tests."""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from aiokafka.structs import TopicPartition

from streamlet.assignment.protocol import AssignmentInfo
from streamlet.config import StreamsConfig
from streamlet.runtime.changelog_reader import ChangelogReader
from streamlet.runtime.handlers import ThreadHandlers
from streamlet.runtime.record_collector import RecordCollector
from streamlet.runtime.restore_listener import CompositeRestoreListener, StateRestoreListener
from streamlet.runtime.stream_time_watermark import StreamTimeWatermark
from streamlet.runtime.task_creator import TaskCreator, ThreadResources
from streamlet.runtime.task_manager import TaskManager
from streamlet.runtime.topology_metadata import TopologyMetadata
from streamlet.state.record_cache import RecordCache
from streamlet.state.state_directory import StateDirectory
from streamlet.task_id import TaskId
from streamlet.topology import StreamsBuilder, Topology
from tests.unit.runtime._fakes import FakeConsumer, FakeKafka, FakeProducer

APP = "app"
INPUT = "in"
OUTPUT = "out"
CHANGELOG = f"{APP}-counts-changelog"
PARTITIONS = 2
T0 = TaskId(0, 0)
IN0 = TopicPartition(INPUT, 0)
CHANGELOG0 = TopicPartition(CHANGELOG, 0)


def counting_topology() -> Topology:
    """in --(count per key)--> out, one sub-topology with the logged store `counts`."""
    builder = StreamsBuilder()
    (
        builder.stream(INPUT, key_serde="str", value_serde="str")
        .group_by_key(key_serde="str", value_serde="str")
        .count("counts")
        .to_stream()
        .to(OUTPUT, key_serde="str", value_serde="int64")
    )
    return builder.build()


def int64(value: int) -> bytes:
    return struct.pack(">q", value)


def config(state_dir: Path, **overrides: object) -> StreamsConfig:
    return StreamsConfig(application_id=APP, state_dir=str(state_dir), bootstrap_servers="fake:9092", **overrides)


def new_kafka() -> FakeKafka:
    return FakeKafka({INPUT: PARTITIONS, OUTPUT: PARTITIONS, CHANGELOG: PARTITIONS})


def metadata(topology: Topology | None = None, sources: Mapping[str, int] | None = None) -> TopologyMetadata:
    meta = TopologyMetadata(counting_topology() if topology is None else topology, APP)
    meta.task_partitions(dict(sources) if sources is not None else {INPUT: PARTITIONS})
    return meta


class Harness:
    """One thread's task manager with its own consumers and producer over `kafka`."""

    def __init__(
        self,
        kafka: FakeKafka,
        state_dir: Path,
        *,
        name: str = "thread-1",
        cache_bytes: int = 1 << 20,
        chunk: int = 1000,
        guarantee: str = "at_least_once",
        topology: Topology | None = None,
        listener: StateRestoreListener | None = None,
        sources: Mapping[str, int] | None = None,
        watermark: StreamTimeWatermark | None = None,
        **overrides: Any,
    ) -> None:
        self.kafka = kafka
        self.config = config(state_dir, restore_chunk_records=chunk, processing_guarantee=guarantee, **overrides)
        self.metadata = metadata(topology, sources)
        self.state_directory = StateDirectory(state_dir, APP)
        self.consumer = FakeConsumer(kafka, f"{name}-consumer")
        self.restore_consumer = FakeConsumer(kafka, f"{name}-restore-consumer")
        exactly_once = self.config.exactly_once
        self.producer = FakeProducer(kafka, f"{APP}-{name}" if exactly_once else None)
        self.collector = RecordCollector(
            self.producer,  # type: ignore[arg-type]
            self.metadata.changelog_topics(),
            transactional=exactly_once,
        )
        self.resources = resources = ThreadResources(
            RecordCache(cache_bytes),
            self.collector,
            ThreadHandlers(
                self.collector,
                processing=self.config.processing_exception_handler,
                production=self.config.production_exception_handler,
            ),
        )
        admin = FakeConsumer(kafka, f"{name}-admin", read_uncommitted_ends=True)
        self.reader = ChangelogReader(
            self.restore_consumer,
            CompositeRestoreListener(*([listener] if listener is not None else [])),
            chunk,
            log_end_offsets=admin.end_offsets,
            committed_offsets=self._committed_offsets,
        )
        creator = TaskCreator(self.metadata, self.state_directory, self.config)
        self.task_manager = TaskManager(
            name,
            self.consumer,
            creator,
            resources,
            self.state_directory,
            self.reader,
            exactly_once=exactly_once,
            group_id=APP,
            buffered_records_per_partition=self.config.buffered_records_per_partition,
            event_time_slice_ms=self.config.event_time_slice_ms,
            merged_subtopologies=self.metadata.repartitioning_subtopologies(),
            watermark=watermark,
        )

    async def _committed_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        return {tp: self.kafka.committed.get(tp, 0) for tp in partitions}

    def assign(self, *active: TaskId, standby: tuple[TaskId, ...] = ()) -> None:
        """What the rebalance callbacks do: the consumer's new partitions, then the task assignment."""
        self.consumer.assign([tp for t in active for tp in self.metadata.partitions_of(t)])
        self.task_manager.handle_assignment(AssignmentInfo(active_tasks=tuple(active), standby_tasks=standby))

    async def poll_and_process(self, max_records: int = 1000) -> int:
        await self.task_manager.initialize_task_times()  # as the stream thread's loop does before it polls
        fetch = self.task_manager.fetch_partitions()  # as the loop polls: not the partitions whose queue is full
        batch = {} if fetch == [] else await self.consumer.getmany(*(fetch or ()), max_records=max_records)
        self.task_manager.process(batch)
        await self.collector.drain()
        return sum(len(r) for r in batch.values())

    def close(self) -> None:
        self.state_directory.close()


def latest(kafka: FakeKafka, topic: str) -> dict[str, int]:
    """The last value per key over all partitions of a topic of int64 counts."""
    out: dict[str, int] = {}
    for tp, log in kafka.logs.items():
        if tp.topic == topic:
            for key, value, _ in log:
                assert key is not None and value is not None
                out[key.decode()] = struct.unpack(">q", value)[0]
    return out
