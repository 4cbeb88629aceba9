"""Test a topology without Kafka: `TopologyTestDriver`, as Kafka Streams' test-utils provide it."""

from streamlet.testing.driver import TopologyTestDriver
from streamlet.testing.stores import KeyValueStoreView, TimestampedKeyValueStoreView, WindowStoreView
from streamlet.testing.topics import TestInputTopic, TestOutputTopic, TestRecord

__all__ = [
    "KeyValueStoreView",
    "TestInputTopic",
    "TestOutputTopic",
    "TestRecord",
    "TimestampedKeyValueStoreView",
    "TopologyTestDriver",
    "WindowStoreView",
]
