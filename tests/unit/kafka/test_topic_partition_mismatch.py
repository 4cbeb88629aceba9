"""The error for an existing internal topic with the wrong partition count: advice that fits what it holds."""

from __future__ import annotations

import pytest

from streamlet.errors import TopologyError
from streamlet.kafka.topics import TopicSpec, _validate, partition_mismatch_message


def test_changelog_message_never_presents_deletion_as_free() -> None:
    message = partition_mismatch_message("wc-counts-changelog", 4, 6)
    assert message.startswith("changelog topic wc-counts-changelog has 4 partitions but the topology needs 6")
    assert "derived" not in message
    assert "only durable copy" in message
    assert "give the source topics 4 partitions again" in message  # keeping the state comes first
    assert "give up this store's state" in message and "streamlet cleanup MODULE:APP" in message
    assert message.index("keep the state") < message.index("delete the changelog")


def test_repartition_message_says_what_deleting_it_loses() -> None:
    message = partition_mismatch_message("wc-words-repartition", 2, 6)
    assert message.startswith("repartition topic wc-words-repartition has 2 partitions but the topology needs 6")
    assert "delete the topic" in message
    assert "not yet processed downstream are lost" in message


def test_other_topics_get_no_deletion_advice() -> None:
    message = partition_mismatch_message("input", 2, 6)
    assert message == "topic input has 2 partitions but the topology needs 6; " + (
        "streamlet does not change the partition count of an existing topic"
    )


def test_validate_raises_only_for_a_mismatch() -> None:
    specs = [TopicSpec("a-s-changelog", 6), TopicSpec("a-r-repartition", 6), TopicSpec("new-changelog", 3)]
    _validate(specs, {"a-s-changelog": 6, "a-r-repartition": 6})  # missing topics are created, not errors
    with pytest.raises(TopologyError, match="changelog topic a-s-changelog has 3 partitions"):
        _validate(specs, {"a-s-changelog": 3})
