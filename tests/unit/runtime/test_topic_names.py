"""TopicNames binds a topology's raw names to one application id, and maps stores and changelogs both ways."""

from __future__ import annotations

import pytest

from streamlet.errors import TopologyError
from streamlet.runtime.topic_names import TopicNames
from tests.unit.topology.test_describe import wordcount_builder

APP = "streams-wordcount"


def test_wordcount_runtime_names_match_the_seed() -> None:
    # The seed's `kafka-topics --list` shows exactly these internal topics for application id "streams-wordcount".
    names = TopicNames(wordcount_builder().build(), APP)
    assert names.source_topics() == ["streams-plaintext-input", "streams-wordcount-counts-store-repartition"]
    assert names.sink_topics() == ["streams-wordcount-counts-store-repartition", "streams-wordcount-output"]
    assert names.repartition_topics() == ["streams-wordcount-counts-store-repartition"]
    assert names.changelog_topics() == {"counts-store": "streams-wordcount-counts-store-changelog"}
    assert names.subtopology_source_topics(1) == ("streams-wordcount-counts-store-repartition",)


def test_store_and_changelog_map_both_ways() -> None:
    names = TopicNames(wordcount_builder().build(), APP)
    assert names.changelog_topic("counts-store") == "streams-wordcount-counts-store-changelog"
    assert names.store_of_changelog("streams-wordcount-counts-store-changelog") == "counts-store"
    with pytest.raises(TopologyError, match="no changelog"):
        names.changelog_topic("other")
    with pytest.raises(TopologyError, match="not a changelog"):
        names.store_of_changelog("streams-plaintext-input")


def test_user_topics_keep_their_names() -> None:
    names = TopicNames(wordcount_builder().build(), APP)
    assert names.topic("streams-plaintext-input") == "streams-plaintext-input"
    assert names.topic("counts-store-repartition") == "streams-wordcount-counts-store-repartition"


def test_internal_topics_under_runtime_names() -> None:
    topics = TopicNames(wordcount_builder().build(), APP).internal_topics({"streams-plaintext-input": 6})
    assert [(t.name, t.partitions, t.kind) for t in topics] == [
        ("streams-wordcount-counts-store-repartition", 6, "repartition"),
        ("streams-wordcount-counts-store-changelog", 6, "changelog"),
    ]
