"""Seed 000's experiment on the real broker: a third client joins a stateful WordCount.

Two clients with the seed's process ids (2 stream threads each) run WordCount over 6 partitions with
`acceptable_recovery_lag=0` and a short probing interval; text is produced; then the client
`bbb83e43-...` joins. Kafka Streams' HighAvailabilityTaskAssignor must keep stateful tasks on caught-up
clients, give the newcomer at most `max_warmup_replicas` warmups, move tasks in follow-up (probing)
rebalances once warmups catch up, and converge to the round-robin assignment with no further follow-up.
The leader's log lines (Kafka Streams' format) are parsed to check each round.
"""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass

import pytest

from examples.wordcount.dsl import build_topology
from streamlet.config import StreamsConfig
from streamlet.processor.kafka_streams import KafkaStreams
from tests.support.kafka import KafkaTestCluster, unique_name
from tests.support.wordcount import SEED_LINE, expected_counts, real_text_lines, wait_for_counts, write_process_id

pytestmark = pytest.mark.integration

A = "4b61083e-57d0-457d-951f-d06556c148ca"
B = "7156cef1-307e-49c0-a5bb-0f11d26a4933"
C = "bbb83e43-b1af-4b2d-a60a-94a7091684d0"
STATEFUL = {f"1_{p}" for p in range(6)}

# Where seed 000's Kafka Streams run converged (its last log line), i.e. round-robin over clients in
# java.util.UUID order (bbb83e43 < 4b61083e < 7156cef1, since bbb8... has a negative most significant half).
SEED_CONVERGED = {
    C: {"active": ["0_0", "0_3", "1_0", "1_3"], "standby": []},
    A: {"active": ["0_1", "0_4", "1_1", "1_4"], "standby": []},
    B: {"active": ["0_2", "0_5", "1_2", "1_5"], "standby": []},
}

_CLIENT_LINE = re.compile(r"^([0-9a-f-]{36})=\[activeTasks: \(\[(.*?)\]\) standbyTasks: \(\[(.*?)\]\)\]")


@dataclass
class Round:
    clients: dict[str, dict[str, list[str]]]
    followup: bool | None = None


class AssignmentLog(logging.Handler):
    """Collects the leader's assignment log lines, as an experimenter would grep them."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.rounds: list[Round] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "Assigned tasks" in message:
            clients = {}
            for line in message.splitlines()[1:]:
                match = _CLIENT_LINE.match(line)
                if match:
                    split = lambda s: [t for t in s.split(", ") if t]  # noqa: E731
                    clients[match.group(1)] = {"active": split(match.group(2)), "standby": split(match.group(3))}
            self.rounds.append(Round(clients))
        elif "Requesting followup rebalance" in message and self.rounds:
            self.rounds[-1].followup = True
        elif "Finished stable assignment" in message and self.rounds:
            self.rounds[-1].followup = False


def _client(kafka: KafkaTestCluster, topology, app_id: str, state_dir, process_id: str,
            task_assignor: str = "high_availability") -> KafkaStreams:  # fmt: skip
    write_process_id(state_dir, app_id, process_id)
    config = StreamsConfig(
        application_id=app_id, bootstrap_servers=kafka.bootstrap_servers, state_dir=str(state_dir),
        num_stream_threads=2, acceptable_recovery_lag=0, probing_rebalance_interval_ms=5_000,
        max_warmup_replicas=2, commit_interval_ms=500, task_assignor=task_assignor,
    )  # fmt: skip
    return KafkaStreams(topology, config)


async def test_third_client_joins_like_seed_000(kafka: KafkaTestCluster, tmp_path) -> None:
    source = await kafka.create_topic("streams-plaintext-input", partitions=6)
    sink = await kafka.create_topic("streams-wordcount-output", partitions=6)
    app_id = unique_name("streams-wordcount")
    for suffix in ("counts-store-repartition", "counts-store-changelog"):
        kafka.track(f"{app_id}-{suffix}")
    topology = build_topology(source, sink)
    log = AssignmentLog()
    logging.getLogger("streamlet.assignment").addHandler(log)
    logging.getLogger("streamlet.assignment").setLevel(logging.INFO)
    clients: list[KafkaStreams] = []
    try:
        for pid in (A, B):
            clients.append(_client(kafka, topology, app_id, tmp_path / pid[:8], pid))
            await clients[-1].start()
        first = real_text_lines(400) + [SEED_LINE]
        await kafka.produce(source, [(None, line.encode()) for line in first])
        assert await wait_for_counts(kafka, sink, expected_counts(first)) == expected_counts(first)

        # the two-client layout the seed starts from: round robin over 4b61083e < 7156cef1
        two = log.rounds[-1].clients
        assert sorted(t for t in two[A]["active"] if t.startswith("1_")) == ["1_0", "1_2", "1_4"]
        assert sorted(t for t in two[B]["active"] if t.startswith("1_")) == ["1_1", "1_3", "1_5"]
        rounds_before = len(log.rounds)

        clients.append(_client(kafka, topology, app_id, tmp_path / C[:8], C))
        await clients[-1].start()
        second = real_text_lines(800)[400:]
        await kafka.produce(source, [(None, line.encode()) for line in second])

        # wait for the converged, stable round (at most a few probing intervals)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 90
        while loop.time() < deadline:
            latest = log.rounds[-1]
            if len(latest.clients) == 3 and latest.followup is False:
                break
            await asyncio.sleep(0.5)
        three = [r for r in log.rounds[rounds_before:] if len(r.clients) == 3]
        assert three, f"no assignment with three clients; rounds: {log.rounds}"

        joined = three[0]
        stateful_on_c = [t for t in joined.clients[C]["active"] if t in STATEFUL]
        assert stateful_on_c == [], f"the new client got stateful tasks before catching up: {joined.clients}"
        warmups = sum(len(c["standby"]) for c in joined.clients.values())
        assert 0 < warmups <= 2, joined.clients  # standbys are all warmups (num_standby_replicas=0)
        assert joined.followup is True
        for round_ in three[:-1]:
            assert round_.followup is True  # every intermediate round asks for another probe
        assert three[-1].followup is False, f"did not converge: {three[-1]}"
        assert three[-1].clients == SEED_CONVERGED
        assert len(three) >= 2  # at least one probing rebalance moved tasks

        everything = first + second
        expected = expected_counts(everything)
        assert await wait_for_counts(kafka, sink, expected) == expected
    finally:
        logging.getLogger("streamlet.assignment").removeHandler(log)
        for client in clients:
            await client.close()


async def test_third_client_joins_with_the_balanced_assignor(kafka: KafkaTestCluster, tmp_path) -> None:
    """The same experiment with streamlet's `balanced` assignor: no reshuffle among the old clients, no client
    above 3 stateful tasks at any point, and a stable 2/2/2 split of the stateful tasks at the end."""
    source = await kafka.create_topic("streams-plaintext-input", partitions=6)
    sink = await kafka.create_topic("streams-wordcount-output", partitions=6)
    app_id = unique_name("streams-wordcount-balanced")
    for suffix in ("counts-store-repartition", "counts-store-changelog"):
        kafka.track(f"{app_id}-{suffix}")
    topology = build_topology(source, sink)
    log = AssignmentLog()
    logging.getLogger("streamlet.assignment").addHandler(log)
    logging.getLogger("streamlet.assignment").setLevel(logging.INFO)
    clients: list[KafkaStreams] = []
    try:
        for pid in (A, B):
            clients.append(_client(kafka, topology, app_id, tmp_path / pid[:8], pid, "balanced"))
            await clients[-1].start()
        first = real_text_lines(400) + [SEED_LINE]
        await kafka.produce(source, [(None, line.encode()) for line in first])
        assert await wait_for_counts(kafka, sink, expected_counts(first)) == expected_counts(first)
        before = {pid: {t for t in log.rounds[-1].clients[pid]["active"] if t in STATEFUL} for pid in (A, B)}
        rounds_before = len(log.rounds)

        clients.append(_client(kafka, topology, app_id, tmp_path / C[:8], C, "balanced"))
        await clients[-1].start()
        second = real_text_lines(800)[400:]
        await kafka.produce(source, [(None, line.encode()) for line in second])
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 90
        while loop.time() < deadline:
            latest = log.rounds[-1]
            if len(latest.clients) == 3 and latest.followup is False:
                break
            await asyncio.sleep(0.5)
        three = [r for r in log.rounds[rounds_before:] if len(r.clients) == 3]
        assert three and three[-1].followup is False, f"did not converge: {log.rounds[rounds_before:]}"
        for round_ in three:
            stateful = {pid: {t for t in c["active"] if t in STATEFUL} for pid, c in round_.clients.items()}
            assert max(len(ts) for ts in stateful.values()) <= 3, round_.clients
            # sticky: an old client only ever gives tasks away, it never receives another old client's task
            for pid in (A, B):
                assert stateful[pid] <= before[pid], (pid, stateful[pid], before[pid])
        final = {pid: sorted(t for t in c["active"] if t in STATEFUL) for pid, c in three[-1].clients.items()}
        assert sorted(len(ts) for ts in final.values()) == [2, 2, 2], final
        expected = expected_counts(first + second)
        assert await wait_for_counts(kafka, sink, expected) == expected
    finally:
        logging.getLogger("streamlet.assignment").removeHandler(log)
        for client in clients:
            await client.close()
