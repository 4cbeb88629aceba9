"""The group consumer's in-place assignment against aiokafka's real subscription state and fetch results.

A rebalance that takes a partition away while the fetcher holds records fetched for it must drop those
records: `getmany()` must not return them, nor fail on them. Seen in `streamlet experiment run` (both
protocols): a worker's loop died with aiokafka's `assert self._position is not None` right after
"Revoke previously assigned partitions".
"""

from __future__ import annotations

from types import SimpleNamespace

from aiokafka.consumer.fetcher import FetchResult
from aiokafka.consumer.subscription_state import SubscriptionState
from aiokafka.structs import TopicPartition

from streamlet.kafka.group.consumer import _InPlaceOwnership

TP0, TP1 = TopicPartition("input", 0), TopicPartition("input", 1)


def _ownership(subscription: SubscriptionState) -> _InPlaceOwnership:
    fetcher = SimpleNamespace(_notify=lambda future: None, _wait_consume_future=None, _default_reset_strategy=0)
    consumer = SimpleNamespace(_subscription=subscription, _fetcher=fetcher)
    return _InPlaceOwnership(consumer)  # type: ignore[arg-type]


def _buffered(subscription: SubscriptionState, tp: TopicPartition, offset: int) -> FetchResult:
    """What the fetcher keeps for `tp` after a fetch at `offset` (only the offset matters to the check)."""
    records = SimpleNamespace(next_fetch_offset=offset)
    return FetchResult(tp, assignment=subscription.subscription.assignment, partition_records=records, backoff=0)


async def test_records_buffered_for_a_partition_taken_away_are_dropped_not_an_assertion() -> None:
    subscription = SubscriptionState()
    subscription.assign_from_user(set())
    ownership = _ownership(subscription)
    ownership.assign([TP0, TP1], {TP0: 5, TP1: 7})
    buffered = _buffered(subscription, TP1, 7)
    assert buffered.check_assignment(TP1)  # owned at the fetched position: the records would be returned

    ownership.assign([TP0], {})  # TP1 moves away (a revocation, eager or cooperative)
    assert not buffered.check_assignment(TP1)  # dropped, as aiokafka drops a result of a partition it lost
    assert buffered.getall() == []
    assert _buffered(subscription, TP0, 5).check_assignment(TP0)  # the kept partition still returns its records
    assert ownership.owned() == frozenset({TP0})

    ownership.assign([TP0, TP1], {TP1: 9})  # TP1 comes back: a fresh state at its committed position
    assert _buffered(subscription, TP1, 9).check_assignment(TP1)
