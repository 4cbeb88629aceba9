"""The transactional producer's coordinator lookups retry a failover's connection errors.

aiokafka's sender finds the transaction and group coordinators with FindCoordinator; it retries a coordinator that is
not available, but a lookup whose connection closes under it (the broker asked was killed that instant) is a
KafkaConnectionError, which it wraps in a plain KafkaError and raises out of its sender task: "Unexpected error in
sender routine", and the producer is broken for good (streamlet then replaces it, and its transaction aborts). The
broker-failover chaos test met it in a full run under load. Java's producer retries every retriable error of a
lookup; so does this, after a metadata refresh and the producer's retry backoff.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiokafka import errors as Errors
from aiokafka.producer.sender import Sender

from streamlet.kafka.aiokafka_internals import require

log = logging.getLogger(__name__)


def _retrying(find: Callable[..., Awaitable[int]]) -> Callable[..., Awaitable[int]]:
    async def find_coordinator(self: Any, coordinator_type: Any, coordinator_key: str) -> int:
        while True:
            try:
                return await find(self, coordinator_type, coordinator_key)
            except Errors.KafkaError as err:
                cause = err.__cause__
                if not (isinstance(cause, Errors.KafkaError) and cause.retriable):
                    raise
                log.info("FindCoordinator for %s failed (%r); retrying", coordinator_key, cause)
                await self.client.force_metadata_update()
                await asyncio.sleep(self._retry_backoff)

    find_coordinator.original = find  # type: ignore[attr-defined]
    return find_coordinator


def install() -> None:
    """Idempotent."""
    if not hasattr(Sender._find_coordinator, "original"):
        Sender._find_coordinator = _retrying(Sender._find_coordinator)  # type: ignore[method-assign]


require(
    "retrying a coordinator lookup whose connection closed",
    [(Sender._find_coordinator, ("raise KafkaError(repr(err)) from err", "self._retry_backoff"))],
)
