"""A broker of a test's own, for tests that stop it or need other server settings than the session's."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from streamlet.kafka.broker import LocalBroker, _free_port


@contextlib.contextmanager
def own_broker(directory: Path, **overrides: str) -> Iterator[LocalBroker]:
    """A running broker on a free port; `overrides` are server.properties entries (dots as in Kafka)."""
    broker = LocalBroker(directory, port=_free_port("127.0.0.1"), die_with_parent=True, overrides=overrides)
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()
