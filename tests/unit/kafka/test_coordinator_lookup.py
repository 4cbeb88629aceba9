"""kafka/coordinator_lookup.py: aiokafka's own sender, on a client whose first FindCoordinator connection closes."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from aiokafka import errors as Errors
from aiokafka.producer.sender import CoordinationType, Sender

from streamlet.kafka import coordinator_lookup


class FailoverClient:
    """The first lookup's connection closes under it (its broker was killed); the next one finds node 7."""

    def __init__(self, error: Exception) -> None:
        self.error = error
        self.lookups = 0
        self.metadata_updates = 0

    async def coordinator_lookup(self, coordinator_type: object, key: str) -> int:
        self.lookups += 1
        if self.lookups == 1:
            raise self.error
        return 7

    async def ready(self, node_id: int, group: object = None) -> bool:
        return True

    async def force_metadata_update(self) -> bool:
        self.metadata_updates += 1
        return True


def _sender(client: FailoverClient) -> Sender:
    return Sender(
        client,
        acks=-1,
        txn_manager=SimpleNamespace(transactional_id="app-1"),
        message_accumulator=None,
        retry_backoff_ms=1,
        request_timeout_ms=1000,
    )


async def test_a_lookup_whose_connection_closed_is_retried() -> None:
    coordinator_lookup.install()
    closed = Errors.KafkaConnectionError("Connection at 127.0.0.1:40163 closed")
    with pytest.raises(Errors.KafkaError, match="Connection at 127.0.0.1:40163 closed"):  # aiokafka's own behaviour
        await Sender._find_coordinator.original(_sender(FailoverClient(closed)), CoordinationType.GROUP, "app")
    client = FailoverClient(closed)
    assert await _sender(client)._find_coordinator(CoordinationType.GROUP, "app") == 7
    assert (client.lookups, client.metadata_updates) == (2, 1)


async def test_an_error_that_is_not_retriable_still_ends_the_lookup() -> None:
    coordinator_lookup.install()
    client = FailoverClient(Errors.GroupAuthorizationFailedError("app"))
    with pytest.raises(Errors.GroupAuthorizationFailedError):
        await _sender(client)._find_coordinator(CoordinationType.GROUP, "app")
    assert client.lookups == 1
