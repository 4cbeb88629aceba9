"""AppClient: what a running App uses outside its tasks (timers, pages, `app.client()`), started on first use.

Inside an agent, `await topic.send(...)` queues the record in the task's producer, so it is committed with the
input record. Outside every task (an `@app.timer`, an `@app.page`, a script in `async with app.client()`)
there is no task to commit with: the record is sent at once by this client's own producer and acknowledged
by the broker (acks=all) before `send` returns, never inside a task's transaction. The same producer sends
`agent.ask()` requests, whose replies the reply consumer reads (`streamlet.faust.replies`).

Nothing is opened until it is needed; `close()` (when the worker or `app.client()` ends) stops what was.
"""

from __future__ import annotations

import asyncio
import time

from aiokafka import AIOKafkaProducer

from streamlet.config import StreamsConfig
from streamlet.faust.replies import ReplyConsumer
from streamlet.kafka import connect

__all__ = ["AppClient"]


class AppClient:
    """The producer and reply consumer of one running App (one per worker or `app.client()`)."""

    def __init__(self, config: StreamsConfig) -> None:
        self.config = config
        self._lock = asyncio.Lock()
        self._producer: AIOKafkaProducer | None = None
        self._replies: ReplyConsumer | None = None

    async def producer(self) -> AIOKafkaProducer:
        async with self._lock:
            return await self._started_producer()

    async def _started_producer(self) -> AIOKafkaProducer:
        if self._producer is None:
            producer = connect.producer(
                self.config.cluster, client_id=f"{self.config.application_id}-app-client", acks="all"
            )
            await connect.start(producer, self.config.cluster, f"{self.config.application_id}'s app client")
            self._producer = producer
        return self._producer

    async def replies(self) -> ReplyConsumer:
        async with self._lock:
            if self._replies is None:
                replies = ReplyConsumer(self.config, await self._started_producer())
                await replies.start()
                self._replies = replies
            return self._replies

    async def send(self, topic: str, key: bytes | None, value: bytes | None, partition: int | None) -> None:
        """Send one record now, stamped with the wall clock, and wait for the broker's acknowledgement."""
        producer = await self.producer()
        await producer.send_and_wait(topic, value, key, partition=partition, timestamp_ms=int(time.time() * 1000))

    async def close(self) -> None:
        async with self._lock:
            if self._replies is not None:
                await self._replies.close()
                self._replies = None
            if self._producer is not None:
                await self._producer.stop()
                self._producer = None
