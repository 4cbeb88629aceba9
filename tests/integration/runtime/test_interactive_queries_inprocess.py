"""Interactive queries' Python API on the real broker: two in-process clients, one standby per task."""

from __future__ import annotations

import asyncio
import time

import pytest

from examples.wordcount.dsl import build_topology
from streamlet.config import StreamsConfig
from streamlet.runtime.kafka_streams import KafkaStreams
from streamlet.runtime.queries import KeyNotLocalError, QueryUnavailableError
from tests.support.kafka import KafkaTestCluster, unique_name
from tests.support.wordcount import expected_counts, real_text_lines, wait_for_counts

pytestmark = pytest.mark.integration

STORE = "counts-store"
HOSTS = ("host-a:7001", "host-b:7002")


async def _eventually(check, timeout: float = 60.0):  # noqa: ANN001, ANN202
    """`check()` once it stops raising QueryUnavailableError (a rebalance or restoration in progress)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return check()
        except QueryUnavailableError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


async def test_every_key_is_answered_by_its_owner_and_routed_by_the_others(kafka: KafkaTestCluster, tmp_path) -> None:
    source = await kafka.create_topic("plaintext", partitions=6)
    sink = await kafka.create_topic("wordcount-output", partitions=6)
    app_id = unique_name("wordcount-iq")
    for suffix in ("counts-store-repartition", "counts-store-changelog"):
        kafka.track(f"{app_id}-{suffix}")
    topology = build_topology(source, sink)
    clients = [
        KafkaStreams(
            topology,
            StreamsConfig(
                application_id=app_id,
                bootstrap_servers=kafka.bootstrap_servers,
                state_dir=str(tmp_path / f"client-{i}"),
                num_stream_threads=2,
                num_standby_replicas=1,
                commit_interval_ms=200,
                application_server=HOSTS[i],
            ),
        )
        for i in range(2)
    ]
    by_host = dict(zip(HOSTS, clients, strict=True))
    try:
        for client in clients:
            await client.start()
        lines = real_text_lines(200)
        truth = expected_counts(lines)
        await kafka.produce(source, [(None, line.encode()) for line in lines])
        assert await wait_for_counts(kafka, sink, truth) == truth

        # every client knows both hosts and which of them owns the store's partitions (once the second client's
        # join has rebalanced the group: the first may have counted everything alone)
        deadline = time.monotonic() + 60
        while any({m.host for m in c.metadata_for_store(STORE)} != set(HOSTS) for c in clients):
            assert time.monotonic() < deadline, [sorted(m.host for m in c.metadata_for_store(STORE)) for c in clients]
            await asyncio.sleep(0.2)
        for word, count in truth.items():
            meta = clients[0].query_metadata_for_key(STORE, word)
            assert meta == clients[1].query_metadata_for_key(STORE, word)
            assert meta.active_host in HOSTS and meta.standby_hosts == set(HOSTS) - {meta.active_host}
            owner = by_host[meta.active_host]
            other = by_host[next(iter(meta.standby_hosts))]
            assert await _eventually(lambda o=owner, w=word: o.store(STORE).get(w)) == count
            with pytest.raises(KeyNotLocalError) as err:
                await _eventually(lambda o=other, w=word: o.store(STORE).get(w))
            assert (err.value.host, err.value.partition) == (meta.active_host, meta.partition)

        # the local views together hold every word exactly once
        union: dict[str, int] = {}
        for client in clients:
            local = dict(await _eventually(lambda c=client: list(c.store(STORE).all())))
            assert not union.keys() & local.keys()
            union.update(local)
            assert client.store(STORE).approximate_num_entries() > 0
            chunks = [chunk async for chunk in client.store(STORE).scan(chunk=100)]
            assert all(len(chunk) <= 100 for chunk in chunks)
            assert dict(kv for chunk in chunks for kv in chunk) == local
        assert union == truth

        # KIP-535: a standby that is fully caught up (lag 0 against fresh end offsets) answers for the active
        deadline = time.monotonic() + 60
        pending = dict(truth)
        while pending and time.monotonic() < deadline:
            for client in clients:
                await client.refresh_standby_lags()
            for word in list(pending):
                meta = clients[0].query_metadata_for_key(STORE, word)
                standby = by_host[next(iter(meta.standby_hosts))]
                try:
                    got = standby.store(STORE, max_standby_lag=0).get(word)
                except (QueryUnavailableError, KeyNotLocalError):
                    continue  # still catching up (a lagging standby defers to the active host)
                assert got == pending.pop(word)
            await asyncio.sleep(0.2)
        assert not pending, f"{len(pending)} words never answered by a caught-up standby"
    finally:
        for client in clients:
            await client.close()
