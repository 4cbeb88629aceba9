"""The producer side of a freeze: batches handed to the producer before this process froze are not sent after it.

A stream thread checks for a freeze (SIGSTOP, a frozen VM, a long GC pause: `runtime.stall_watch`) before it hands
records to the producer, but records handed over just before the freeze wait in aiokafka's accumulator, behind the
request in flight, and its sender sends them the moment the process runs again, before the thread has had its turn.
By then the group has given their tasks to another member, which has written newer results: under at-least-once
the zombie's would become the last word in the output and the changelog. Kafka Streams sends them (at-least-once
fences no zombie; exactly-once does, and there the broker refuses them anyway). Here the sender fails them with a
retriable error instead, and the thread takes the lost path that the freeze calls for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError
from aiokafka.producer.message_accumulator import MessageBatch
from aiokafka.producer.sender import Sender

from streamlet.kafka.aiokafka_internals import require


class HandedOverBeforeAFreezeError(KafkaError):
    """The batch was handed to the producer before this process froze for longer than the session timeout."""

    retriable = True
    description = (
        "not sent: handed to the producer before this process froze for longer than the session timeout; "
        "its tasks have most likely moved to another member"
    )


def refuse_batches_from_before_a_freeze(producer: AIOKafkaProducer, froze_after: Callable[[float], bool]) -> None:
    """Make `producer`'s sender fail every batch handed over at a monotonic time `t` with `froze_after(t)` true."""
    sender: Any = producer._sender
    send = sender._send_produce_req

    async def send_unless_from_before_a_freeze(node_id: int, batches: dict[Any, Any]) -> None:
        for tp in [tp for tp, batch in batches.items() if froze_after(batch._ctime)]:
            batches.pop(tp).failure(exception=HandedOverBeforeAFreezeError())
            sender._muted_partitions.discard(tp)
        if batches:
            await send(node_id, batches)
        else:
            sender._in_flight.discard(node_id)

    sender._send_produce_req = send_unless_from_before_a_freeze


require(
    "not sending what a frozen process handed to its producer",
    [
        (AIOKafkaProducer.__init__, ("self._sender",)),
        (Sender._sender_routine, ("self._send_produce_req(node_id, node_batches)", "self._muted_partitions.add(tp)")),
        (Sender._send_produce_req, ("self._in_flight.remove(node_id)", "self._muted_partitions.remove(tp)")),
        (MessageBatch.__init__, ("self._ctime = time.monotonic()",)),
        (MessageBatch.failure, ("def failure(self, exception)",)),
    ],
)
