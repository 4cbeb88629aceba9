"""How the TxnOffsetCommit v3 handler reads each error of the response, without a broker.

Found by the broker failover chaos test: every error other than the fenced ones reached a reference to an
error class aiokafka does not have, and the AttributeError ended the producer's sender routine, so a
transaction coordinator's failover (NOT_COORDINATOR) failed the commit instead of being retried.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from aiokafka import errors as Errors
from aiokafka.structs import OffsetAndMetadata, TopicPartition

from streamlet.kafka.txn_offset_commit import (
    FENCED_INSTANCE_ID,
    GroupAwareTxnOffsetCommitHandler,
    TxnOffsetCommitResponse_v3,
)

TP = TopicPartition("input", 0)


class Sender:
    """The sender's surface the handler uses: its transaction manager, retry backoff and coordinator lookups."""

    def __init__(self) -> None:
        self._retry_backoff = 0.1
        self.dead: list[Any] = []
        self.errors: list[BaseException] = []
        self.committed: list[tuple[TopicPartition, int, str]] = []
        self._txn_manager = SimpleNamespace(
            offset_committed=lambda tp, offset, group: self.committed.append((tp, offset, group)),
            error_transaction=self.errors.append,
        )

    def _coordinator_dead(self, kind: Any) -> None:
        self.dead.append(kind)


def answer(error_code: int) -> tuple[Sender, float | None]:
    sender = Sender()
    handler = GroupAwareTxnOffsetCommitHandler(sender, {TP: OffsetAndMetadata(7, "")}, "group")
    response = TxnOffsetCommitResponse_v3(0, [("input", [(0, error_code, {})], {})], {})
    return sender, handler.handle_response(response)


def test_no_error_records_the_commit() -> None:
    sender, backoff = answer(0)
    assert (backoff, sender.committed) == (None, [(TP, 7, "group")])


@pytest.mark.parametrize("error", [Errors.NotCoordinatorError, Errors.CoordinatorNotAvailableError])
def test_a_moved_coordinator_is_looked_up_again_and_retried(error: type[Errors.BrokerResponseError]) -> None:
    sender, backoff = answer(error.errno)
    assert backoff == 0.1 and len(sender.dead) == 1 and not sender.errors


@pytest.mark.parametrize("code", [Errors.IllegalGenerationError.errno, FENCED_INSTANCE_ID])
def test_a_fenced_member_fails_the_transaction_not_the_producer(code: int) -> None:
    sender, backoff = answer(code)
    assert backoff is None and isinstance(sender.errors[0], Errors.CommitFailedError)


def test_a_loading_coordinator_is_waited_for() -> None:
    sender, backoff = answer(Errors.CoordinatorLoadInProgressError.errno)
    assert backoff == 0.1 and not sender.dead and not sender.errors
