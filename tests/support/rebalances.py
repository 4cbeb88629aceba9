"""Rebalances of worker processes seen from outside the workers.

Who owned which task, and when, comes from the group leader's assignment history (`<application_id>-assignments`,
one JSON event per rebalance, with each thread's active tasks as that thread was told them in that round). How
long a task stopped comes from the broker: a topic created with `message.timestamp.type=LogAppendTime` stamps
every record with the time the broker appended it, so the gaps between consecutive records of an output
partition are the gaps in what its one writing task produced (for WordCount, output partition p is written by
count task 1_p only: see `check_task_writes_its_partition`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiokafka.partitioner import murmur2
from aiokafka.structs import TopicPartition

from streamlet.assignment.history import assignment_history_topic
from streamlet.kafka import connect
from tests.support.kafka import KafkaTestCluster

#: Topic config under which record timestamps are the broker's append times (not the producers' clocks).
APPEND_TIME = {"message.timestamp.type": "LogAppendTime"}

Owner = tuple[str, str]  # (process id, thread member id)


@dataclass
class AssignmentHistory:
    """The events of `<application_id>-assignments`, tailed while the test runs (see `tail_history`)."""

    events: list[dict[str, Any]] = field(default_factory=list)

    def since(self, at: float) -> list[dict[str, Any]]:
        """Events of rebalances the leader computed at or after `at` (wall clock, s)."""
        return [e for e in self.events if e["timestamp_ms"] >= at * 1000]

    def settled(self, *, after: float, clients: int, threads: int) -> bool:
        """The last event is after `after` and final: `clients` clients of `threads` threads each, every task
        active on exactly one thread (none withheld for a follow-up round), and no follow-up scheduled."""
        recent = self.since(after)
        return bool(recent) and is_settled(recent[-1], clients, threads)


def layout(event: Mapping[str, Any]) -> str:
    """One line per round for failure messages: generation, trigger, and each thread's active tasks."""
    threads = " | ".join(
        f"{c['process_id'][:8]}/{t['member_id'][-8:]}: {' '.join(t['active'])}"
        for c in event["clients"]
        for t in c["threads"]
    )
    return f"gen {event.get('generation')} {event.get('trigger')} followup={event.get('followup_scheduled')}: {threads}"


async def wait_settled(history: AssignmentHistory, *, after: float, clients: int, threads: int, timeout: float) -> None:
    """Until `history.settled(...)`; on timeout, fail with the rounds seen since `after`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not history.settled(after=after, clients=clients, threads=threads):
        if loop.time() > deadline:
            rounds = "\n".join(layout(e) for e in history.since(after)) or "(none)"
            raise AssertionError(f"the group did not settle on {clients} clients in {timeout} s; rounds:\n{rounds}")
        await asyncio.sleep(0.1)


def is_settled(event: Mapping[str, Any], clients: int, threads: int) -> bool:
    entries = event["clients"]
    if len(entries) != clients or event.get("followup_scheduled"):
        return False
    if any(len(c["threads"]) != threads for c in entries):
        return False
    active = sorted(t for c in entries for thread in c["threads"] for t in thread["active"])
    return active == sorted(event["tasks"])


def owners(event: Mapping[str, Any]) -> dict[str, Owner]:
    """Each active task's thread in this round (a task withheld until its old owner revokes it has none)."""
    return {
        task: (client["process_id"], thread["member_id"])
        for client in event["clients"]
        for thread in client["threads"]
        for task in thread["active"]
    }


@contextlib.asynccontextmanager
async def tail_history(kafka: KafkaTestCluster, application_id: str) -> AsyncIterator[AssignmentHistory]:
    """Create the history topic (as the workers would, so it can be tailed from its start) and tail it."""
    topic = await kafka.create_topic(
        name=assignment_history_topic(application_id), partitions=1, config={"cleanup.policy": "delete"}
    )
    history = AssignmentHistory()
    consumer = connect.consumer(kafka.cluster, enable_auto_commit=False)
    await consumer.start()
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    await consumer.seek_to_beginning(tp)

    async def run() -> None:
        while True:
            batch = await consumer.getmany(tp, timeout_ms=200)
            history.events.extend(json.loads(r.value) for r in batch.get(tp, []))

    task = asyncio.create_task(run(), name="assignment-history-tail")
    try:
        yield history
    finally:
        task.cancel()
        try:
            with contextlib.suppress(asyncio.CancelledError):
                await task  # a tail that failed (an event that is not JSON) fails the test here
        finally:
            await consumer.stop()


@dataclass(frozen=True)
class Step:
    """One scale step: the test acted at `start` (wall clock, s); the step's window runs until `end`, the next
    step's start or the end of the input, so it covers the rebalance and the layout it settled on."""

    label: str
    start: float
    end: float


def staying_tasks(events: Sequence[Mapping[str, Any]], step: Step, tasks: Iterable[str]) -> dict[str, Owner]:
    """Those of `tasks` whose owner is the same in the last round before the step and in every round of it."""
    before = [e for e in events if e["timestamp_ms"] < step.start * 1000]
    during = [e for e in events if step.start * 1000 <= e["timestamp_ms"] < step.end * 1000]
    assert before and during, f"{step.label}: {len(before)} rounds before the step, {len(during)} during it"
    base = owners(before[-1])
    return {t: base[t] for t in tasks if t in base and all(owners(e).get(t) == base[t] for e in during)}


def rounds(events: Sequence[Mapping[str, Any]], step: Step) -> list[str]:
    """The triggers the leader recorded for the step's rounds (join, leave, probing, ...), in order."""
    return [str(e.get("trigger")) for e in events if step.start * 1000 <= e["timestamp_ms"] < step.end * 1000]


def largest_gap(times: Sequence[float], start: float, end: float) -> float:
    """The longest stretch of [start, end] with no record (times in s, any order). A stretch that began before
    `start` counts from its beginning; one still open at `end` counts up to `end`."""
    before = [t for t in times if t < start]
    inside = sorted(t for t in times if start <= t <= end)
    edges = [max(before) if before else start, *inside, end]
    return max(b - a for a, b in zip(edges, edges[1:], strict=False))


def append_times(records: Iterable[Any]) -> dict[int, list[float]]:
    """Broker append times (s) per partition of drained records of an APPEND_TIME topic."""
    out: dict[int, list[float]] = {}
    for record in records:
        out.setdefault(record.partition, []).append(record.timestamp / 1000)
    return out


def check_task_writes_its_partition(repartitioned: Iterable[Any], output: Iterable[Any], partitions: int) -> None:
    """WordCount's count task 1_p reads repartition partition p; its output for a word goes to the output
    partition of that word's key. Both topics have `partitions` partitions and both are placed by Kafka's default
    partitioner, so every word of output partition p came through repartition partition p, i.e. from task 1_p.
    Checked here on the records themselves, with aiokafka's murmur2 (not streamlet's partitioner)."""
    for name, records in (("repartition", repartitioned), ("output", output)):
        misplaced = [(r.key, r.partition) for r in records if (murmur2(r.key) & 0x7FFFFFFF) % partitions != r.partition]
        assert not misplaced, f"{name} records off their key's partition: {misplaced[:5]}"
