"""Faust (faust-streaming) WordCount with a RocksDB table (the `rocksdb://` store on rocksdict), after
faust's own examples/word_count.py: lines -> split -> words topic keyed by word -> table count -> output.

Usage: faust_wordcount.py BOOTSTRAP APP_ID INPUT OUTPUT STATE_DIR worker -l warn
"""

import os
import struct
import sys

import faust
from _split import split_words

bootstrap, app_id, input_topic, output_topic, state_dir = sys.argv[1:6]
TAKE = int(os.environ.get("FAUST_TAKE", "0"))  # > 0: the stream.take(TAKE) variant
del sys.argv[1:6]

app = faust.App(
    app_id,
    broker=f"kafka://{bootstrap}",
    store="rocksdb://",
    datadir=state_dir,
    topic_partitions=6,
    web_enabled=False,
    consumer_auto_offset_reset="earliest",
    table_standby_replicas=0,
    topic_allow_declare=True,
    producer_linger=0.005,
    broker_commit_interval=1.0,  # every peer commits every second (Faust's default is 2.8 s)
)
lines = app.topic(input_topic, key_serializer="raw", value_serializer="raw")
words = app.topic(
    f"{app_id}-words",
    key_type=str,
    value_type=str,
    key_serializer="raw",
    value_serializer="raw",
    partitions=6,
    internal=True,
)
out = app.topic(output_topic, key_serializer="raw", value_serializer="raw")
counts = app.Table("counts", default=int, partitions=6)


if not TAKE:

    @app.agent(lines)
    async def shuffle_words(stream):
        async for line in stream:
            for word in split_words(line.decode()):
                await words.send(key=word.encode(), value=word.encode())

    @app.agent(words)
    async def count_words(stream):
        async for word in stream:
            word = word.decode() if isinstance(word, bytes) else word
            counts[word] += 1
            await out.send(key=word.encode(), value=struct.pack(">q", counts[word]))

else:  # Faust's own batching, `stream.take`, where Faust allows it: a table write inside a taken batch raises
    # "Cannot modify table key from outside of stream iteration", so only the stateless split agent batches

    @app.agent(lines)
    async def shuffle_words(stream):
        async for batch in stream.take(TAKE, within=0.2):
            for line in batch:
                for word in split_words(line.decode()):
                    await words.send(key=word.encode(), value=word.encode())

    @app.agent(words)
    async def count_words(stream):
        async for word in stream:
            word = word.decode() if isinstance(word, bytes) else word
            counts[word] += 1
            await out.send(key=word.encode(), value=struct.pack(">q", counts[word]))


async def _create_words_topic() -> None:
    """Faust subscribes before it declares an internal topic and then ignores it as missing, so the
    repartition topic is created up front (the broker does not auto-create topics)."""
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        if words.get_topic_name() not in await admin.list_topics():
            await admin.create_topics([NewTopic(words.get_topic_name(), 6, 1)])
    finally:
        await admin.close()


if __name__ == "__main__":
    import asyncio

    asyncio.run(_create_words_topic())
    app.main()
