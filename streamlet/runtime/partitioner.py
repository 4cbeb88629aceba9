"""Kafka's default key partitioner with the murmur2 hash of recent keys remembered.

Repartition topics route every record by key, and keys repeat (WordCount's words, any aggregation's
groups), while aiokafka's murmur2 is pure Python: hashing each distinct key once removes it from the
per-record path. The placement is exactly the default partitioner's, so keys land where Kafka Streams
(and any Java producer) would put them.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from aiokafka.partitioner import murmur2

#: A partition chosen once the topic's partition count is known (a sink with a `StreamPartitioner`, which
#: Kafka calls with `numPartitions`): `choose(num_partitions)` is the partition, or None for the default.
DeferredPartition = Callable[[int], "int | None"]


class CachingDefaultPartitioner:
    """`DefaultPartitioner` semantics; at most `max_keys` hashes are kept (the memo is cleared when full)."""

    def __init__(self, max_keys: int = 200_000) -> None:
        self._hashes: dict[bytes, int] = {}
        self._max_keys = max_keys

    def __call__(self, key: bytes | None, all_partitions: Sequence[int], available: Sequence[int]) -> int:
        if key is None:
            return random.choice(available or all_partitions)
        hashed = self._hashes.get(key)
        if hashed is None:
            if len(self._hashes) >= self._max_keys:
                self._hashes.clear()
            hashed = self._hashes[key] = murmur2(key) & 0x7FFFFFFF
        return all_partitions[hashed % len(all_partitions)]
