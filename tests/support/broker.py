"""A broker of a test's own, for tests that stop it or need other server settings than the session's."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from streamlet.kafka.broker import LocalBroker
from tests.support.waiting import free_port

# Tests stamp records with event times near 1970 (windows at 0 s, 3.6 s, ...). A broker's time retention deletes
# such records at its next retention check (every 5 minutes by default), under a running test: a restore then
# finds an empty changelog, a drain an empty sink. Test brokers check once a day; tests do not test retention.
TEST_BROKER_SETTINGS = {"log.retention.check.interval.ms": str(24 * 3600 * 1000)}


@contextlib.contextmanager
def own_broker(directory: Path, **overrides: str) -> Iterator[LocalBroker]:
    """A running broker on a free port; `overrides` are server.properties entries (dots as in Kafka)."""
    settings = {**TEST_BROKER_SETTINGS, **overrides}
    broker = LocalBroker(directory, port=free_port(), die_with_parent=True, overrides=settings)
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()
