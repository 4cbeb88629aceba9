"""`TableJoined`: the name and partitioners of a foreign-key join (Kafka Streams' `TableJoined`).

A foreign-key join writes subscriptions to a topic read by the tasks of the foreign (other) table, and
responses to a topic read by the tasks of this (left) table. Both topics must be co-partitioned with the table
that reads them; by default they are placed like the default partitioner places keys (subscriptions, by the
foreign key) and back to the partition the subscription came from (responses). A table whose topic is written
with a custom partitioner needs that partitioner here, as in Kafka (`KTableImpl#doJoinOnForeignKey`):

* `other_partitioner(topic, foreign_key, None, num_partitions)` places each subscription;
* `partitioner(topic, key, None, num_partitions)` places each response.

A partitioner is Kafka's `StreamPartitioner#partition`: it gets the topic's full (application-prefixed) name,
the key, no value (None: Kafka passes null, since the placement may depend on the key only) and the topic's
partition count, and returns a partition or None for the default partitioner (murmur2 of the serialized key).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from streamlet.errors import TopologyError
from streamlet.topology.nodes import StreamPartitioner, validate_name


@dataclass(frozen=True)
class TableJoined:
    """The partitioners and base name of a foreign-key join (Kafka's `TableJoined`): `with_(partitioner,
    other_partitioner)`, `as_(name)`, and the `with_*` copies; None leaves the default."""

    partitioner: StreamPartitioner | None = None
    other_partitioner: StreamPartitioner | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        for what, partitioner in (("partitioner", self.partitioner), ("other_partitioner", self.other_partitioner)):
            if partitioner is not None and not callable(partitioner):
                raise TopologyError(f"TableJoined {what} must be callable, got {partitioner!r}")
        if self.name is not None:
            validate_name(self.name)

    @staticmethod
    def with_(partitioner: StreamPartitioner | None, other_partitioner: StreamPartitioner | None) -> TableJoined:
        return TableJoined(partitioner, other_partitioner)

    @staticmethod
    def as_(name: str) -> TableJoined:
        return TableJoined(name=name)

    def with_partitioner(self, partitioner: StreamPartitioner | None) -> TableJoined:
        return replace(self, partitioner=partitioner)

    def with_other_partitioner(self, other_partitioner: StreamPartitioner | None) -> TableJoined:
        return replace(self, other_partitioner=other_partitioner)

    def with_name(self, name: str) -> TableJoined:
        return replace(self, name=name)


def resolve_table_joined(table_joined: TableJoined | None, name: str | None) -> TableJoined:
    """`table_joined=` and its shorthand `name=` (`TableJoined.as_(name)`); giving both is an error."""
    if table_joined is None:
        return TableJoined(name=name)
    if not isinstance(table_joined, TableJoined):
        raise TopologyError(f"table_joined must be a TableJoined, got {table_joined!r}")
    if name is not None:
        raise TopologyError(
            f"join(): name={name!r} and table_joined= both given; name the join with TableJoined.with_name() only"
        )
    return table_joined
