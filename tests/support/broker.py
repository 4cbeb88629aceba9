"""A broker of a test's own, for tests that stop it or need other server settings than the session's."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from streamlet.kafka.broker import LocalBroker
from tests.support.waiting import free_port

# Tests stamp records with event times long past (near 1970, say). A broker's time retention deletes
# such records under a running test: a restore then finds an empty changelog, a drain a sink with windows missing.
# Every segment of such a topic is deletable at once: with timestamps older than `segment.ms`, each batch rolls a new
# one. The retention check runs 30 s after the broker starts (`log.initial.task.delay.ms`), then every
# `log.retention.check.interval.ms`; so topics without a retention of their own (a test's sources and sinks) keep
# their records forever, and the check runs once a day. A windowed store's changelog (compact,delete, with its
# windows' retention) is still trimmed by the log cleaner every 15 s: a test that restores one stamps recent times.
TEST_BROKER_SETTINGS = {"log.retention.ms": "-1", "log.retention.check.interval.ms": str(24 * 3600 * 1000)}


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
