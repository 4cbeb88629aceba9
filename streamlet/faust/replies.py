"""`await agent.ask(value)`: Faust's request-reply, through a reply topic of the asking process.

Faust wraps a request's value in an envelope (`ReqRepRequest`) holding the reply topic and a correlation
id. streamlet leaves the value alone, so the agent's topic keeps its serdes and other readers see a plain
record, and carries the two in Kafka headers instead: `streamlet.reply_to` and `streamlet.correlation_id`.

The agent processes a request like any record, inline in its task. Each value it `yield`s for the request
goes to its sinks, as usual, and also to the reply topic, keyed by the correlation id. That reply is one of
the record's sends, so it is committed with the request (in the same transaction under exactly-once). The
asker's `ReplyConsumer` reads its reply topic (read_committed: an aborted attempt's reply is never seen) and
completes the request whose correlation id the reply names. Replies are JSON (a model's own JSON).

The reply topic belongs to one `ReplyConsumer`: `<application_id>-reply-<uuid>`, one partition, created when
the first request is made and deleted when the App stops (a crashed process leaves it behind; the topic
expires its records after `REPLY_RETENTION_MS`). Headers do not survive a repartition topic, so an agent
whose stream re-keys (`group_by`) before its loop cannot be asked; `ask()` says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Sequence
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.structs import TopicPartition

from streamlet.config import StreamsConfig
from streamlet.errors import StreamletError
from streamlet.kafka import connect
from streamlet.kafka.topics import InternalTopicManager, TopicSpec
from streamlet.serdes import JsonSerde, Serde
from streamlet.typed_serdes import ModelSerde, is_model

__all__ = [
    "CORRELATION_ID_HEADER",
    "REPLY_TO_HEADER",
    "AskTimeoutError",
    "ReplyConsumer",
    "reply_serde",
    "reply_target",
]

log = logging.getLogger("streamlet.faust.replies")

REPLY_TO_HEADER = "streamlet.reply_to"
CORRELATION_ID_HEADER = "streamlet.correlation_id"
#: A reply topic's records expire after a day (Faust's `reply_expires` default).
REPLY_RETENTION_MS = 24 * 3600 * 1000


class AskTimeoutError(StreamletError, TimeoutError):
    """No reply came within the timeout: no worker runs the agent, it failed on the request, or it yielded nothing."""


def reply_serde(tp: Any) -> Serde:
    """A reply's serde: a model's JSON for a model type, plain JSON otherwise (both ends use the same rule)."""
    return ModelSerde(tp) if is_model(tp) else JsonSerde()


def reply_target(headers: Sequence[tuple[str, bytes]]) -> tuple[str, bytes] | None:
    """`(reply topic, correlation id)` of a request record's headers; None for a record nobody asked."""
    reply_to = correlation_id = None
    for name, value in headers:
        if name == REPLY_TO_HEADER:
            reply_to = value
        elif name == CORRELATION_ID_HEADER:
            correlation_id = value
    if reply_to is None or correlation_id is None:
        return None
    return reply_to.decode(), correlation_id


class ReplyConsumer:
    """One process's reply topic: sends requests (with the App's producer), completes each with its first reply."""

    def __init__(self, config: StreamsConfig, producer: AIOKafkaProducer) -> None:
        self.config = config
        self.topic = f"{config.application_id}-reply-{uuid.uuid4()}"
        self._pending: dict[bytes, asyncio.Future[bytes | None]] = {}
        self._producer = producer  # the App's, which sends the requests (not stopped here)
        self._consumer: AIOKafkaConsumer | None = None
        self._task: asyncio.Task[None] | None = None
        self._failure: BaseException | None = None
        self._created = False

    async def start(self) -> None:
        config = self.config
        try:
            manager = InternalTopicManager(
                config.cluster, replication_factor=config.replication_factor, topic_configs=config.topic_configs
            )
            await manager.start()
            try:
                await manager.ensure([TopicSpec(self.topic, 1, {"retention.ms": str(REPLY_RETENTION_MS)})])
                self._created = True
            finally:
                await manager.close()
            self._consumer = connect.consumer(
                config.cluster,
                client_id=f"{self.topic}-consumer",
                group_id=None,
                enable_auto_commit=False,
                auto_offset_reset="earliest",
                isolation_level="read_committed",
            )
            await self._consumer.start()
            self._consumer.assign([TopicPartition(self.topic, 0)])
        except BaseException:
            await self.close()
            raise
        self._task = asyncio.create_task(self._consume(), name=f"{self.topic}-consumer")

    async def request(
        self, topic: str, key: bytes | None, value: bytes | None, partition: int | None, timeout: float, asked: str
    ) -> bytes | None:
        """Send a request record to `topic`; the raw value of its first reply. `asked` names the agent in errors."""
        if self._task is None:
            raise StreamletError("the reply consumer is not started")
        if self._failure is not None:
            raise StreamletError(f"the reply consumer of {self.topic} failed: {self._failure!r}") from self._failure
        correlation_id = uuid.uuid4().hex.encode()
        future: asyncio.Future[bytes | None] = asyncio.get_running_loop().create_future()
        self._pending[correlation_id] = future
        headers = [(REPLY_TO_HEADER, self.topic.encode()), (CORRELATION_ID_HEADER, correlation_id)]
        try:
            await self._producer.send_and_wait(topic, value, key, partition=partition, headers=headers)
            async with asyncio.timeout(timeout):
                return await future
        except TimeoutError:
            raise AskTimeoutError(
                f"agent {asked} did not reply within {timeout} s to request {correlation_id.decode()} on topic "
                f"{topic}: is a worker running it, and does it yield a value for every record?"
            ) from None
        finally:
            self._pending.pop(correlation_id, None)

    async def _consume(self) -> None:
        assert self._consumer is not None
        try:
            while True:
                batch = await self._consumer.getmany(timeout_ms=1_000)
                for records in batch.values():
                    for record in records:
                        future = self._pending.get(record.key) if record.key is not None else None
                        if future is not None and not future.done():
                            future.set_result(record.value)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # every waiting request fails now rather than at its timeout
            self._failure = exc
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(StreamletError(f"the reply consumer of {self.topic} failed: {exc!r}"))
            log.error("reply consumer of %s failed: %r", self.topic, exc)
            raise

    async def close(self) -> None:
        """Stop consuming (failing the requests still waiting), stop the clients, delete the reply topic."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
        for future in self._pending.values():
            if not future.done():
                future.set_exception(StreamletError("the App stopped before the reply came"))
        if self._consumer is not None:
            await self._consumer.stop()
            self._consumer = None
        if self._created:
            self._created = False
            manager = InternalTopicManager(self.config.cluster)
            try:
                await manager.start()
                await manager.delete([self.topic])
            except Exception as exc:  # the topic expires its records anyway
                log.warning("could not delete reply topic %s: %r", self.topic, exc)
            finally:
                await manager.close()
