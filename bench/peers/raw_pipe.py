"""The limit for Python: WordCount as a bare aiokafka pipe in one process, no framework, no state store.

consume lines -> split -> produce (word, word) keyed to a 6-partition repartition topic -> consume it ->
count in a dict -> every COMMIT_INTERVAL_S emit the changed words' counts (int64 BE) to the output topic
(what a framework's record cache does). Batches are built per partition by hand (aiokafka's fastest
producer path). No fault tolerance: nothing is logged to a changelog, so this is an upper bound.

Usage: raw_pipe.py BOOTSTRAP APP_ID INPUT OUTPUT COMMIT_INTERVAL_S   (stops on SIGTERM)
"""

import asyncio
import signal
import struct
import sys
import time

from _split import split_words
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.partitioner import murmur2

PARTITIONS = 6


async def send_partitioned(producer: AIOKafkaProducer, topic: str, items, partitions: int) -> list:
    """items: iterable of (key bytes, value bytes); one batch per partition, sent when full."""
    batches: dict[int, object] = {}
    futures = []
    for key, value in items:
        p = (murmur2(key) & 0x7FFFFFFF) % partitions
        batch = batches.get(p)
        if batch is None:
            batch = batches[p] = producer.create_batch()
        if batch.append(key=key, value=value, timestamp=None) is None:
            futures.append(await producer.send_batch(batch, topic, partition=p))
            batch = batches[p] = producer.create_batch()
            batch.append(key=key, value=value, timestamp=None)
    for p, batch in batches.items():
        if batch.record_count():
            futures.append(await producer.send_batch(batch, topic, partition=p))
    return futures


async def main() -> None:
    bootstrap, app_id, input_topic, output_topic, commit_s = sys.argv[1:6]
    interval = float(commit_s)
    words_topic = f"{app_id}-words"
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        if words_topic not in await admin.list_topics():
            await admin.create_topics([NewTopic(words_topic, PARTITIONS, 1)])
    finally:
        await admin.close()

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, max_batch_size=256 * 1024)
    lines_in = AIOKafkaConsumer(
        input_topic,
        bootstrap_servers=bootstrap,
        group_id=app_id,
        auto_offset_reset="earliest",
        max_partition_fetch_bytes=2 * 1024 * 1024,
    )
    words_in = AIOKafkaConsumer(
        words_topic,
        bootstrap_servers=bootstrap,
        group_id=f"{app_id}-count",
        auto_offset_reset="earliest",
        max_partition_fetch_bytes=2 * 1024 * 1024,
    )
    await producer.start()
    await lines_in.start()
    await words_in.start()
    counts: dict[bytes, int] = {}
    dirty: set[bytes] = set()

    async def split_loop() -> None:
        while not stop.is_set():
            batch = await lines_in.getmany(timeout_ms=200, max_records=5000)
            items = [
                (w, w)
                for records in batch.values()
                for r in records
                for w in (x.encode() for x in split_words(r.value.decode()))
            ]
            if items:
                await send_partitioned(producer, words_topic, items, PARTITIONS)

    async def count_loop() -> None:
        last = time.monotonic()
        while not stop.is_set():
            batch = await words_in.getmany(timeout_ms=200, max_records=20000)
            for records in batch.values():
                for r in records:
                    key = r.key
                    counts[key] = counts.get(key, 0) + 1
                    dirty.add(key)
            now = time.monotonic()
            if dirty and now - last >= interval:
                last = now
                await send_partitioned(
                    producer, output_topic, [(k, struct.pack(">q", counts[k])) for k in dirty], PARTITIONS
                )
                dirty.clear()

    try:
        await asyncio.gather(split_loop(), count_loop())
    finally:
        await lines_in.stop()
        await words_in.stop()
        await producer.stop()


if __name__ == "__main__":
    asyncio.run(main())
