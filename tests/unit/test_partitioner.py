"""The caching partitioner places keys exactly like aiokafka's (= Kafka's) default partitioner."""

from __future__ import annotations

import random

from aiokafka.partitioner import DefaultPartitioner

from streamlet.runtime.partitioner import CachingDefaultPartitioner


def test_same_partition_as_the_default_partitioner_for_many_keys() -> None:
    rng = random.Random(7)
    keys = [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 24))) for _ in range(5000)]
    keys += [w.encode() for w in "the quick brown fox jumps over the lazy dog".split()]
    default, caching = DefaultPartitioner(), CachingDefaultPartitioner(max_keys=1000)  # forces memo clears
    for partitions in ([0], [0, 1, 2], list(range(6)), list(range(50))):
        for key in keys + keys[:100]:  # second pass hits the memo
            assert caching(key, partitions, partitions) == default(key, partitions, partitions)


# Kafka's UtilsTest#testMurmur2 reference hashes (signed 32-bit), and the partition Java would pick.
KAFKA_MURMUR2 = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


def test_kafka_reference_placements() -> None:
    partitioner = CachingDefaultPartitioner()
    for key, signed_hash in KAFKA_MURMUR2.items():
        for n in (1, 6, 12):
            partitions = list(range(n))
            assert partitioner(key, partitions, partitions) == (signed_hash & 0x7FFFFFFF) % n
