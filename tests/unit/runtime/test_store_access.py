"""store_access: a store's spec, the store from the task, and its serdes called with its changelog's name."""

from __future__ import annotations

from typing import Any

import pytest

from streamlet.runtime.store_access import store_access
from streamlet.runtime.topic_names import TopicNames
from tests.unit.topology.test_describe import wordcount_builder

APP = "streams-wordcount"
CHANGELOG = "streams-wordcount-counts-store-changelog"


class _Task:
    def __init__(self, stores: dict[str, Any]) -> None:
        self._stores = stores

    def get_state_store(self, name: str) -> Any:
        return self._stores[name]


def test_the_store_comes_from_the_task_and_the_serdes_are_the_specs() -> None:
    names = TopicNames(wordcount_builder().build(), APP)
    store = object()
    access = store_access(names, "counts-store", _Task({"counts-store": store}))
    spec = names.topology.stores["counts-store"]
    assert access.name == "counts-store"
    assert access.spec is spec
    assert access.store is store
    assert access.topic == CHANGELOG
    assert access.key_ser(access.topic, "word") == b"word"  # the count's key serde: str
    assert access.key_de(access.topic, b"word") == "word"
    assert access.value_ser(access.topic, 3) == (3).to_bytes(8, "big")  # its value serde: int64
    assert access.value_de(access.topic, (3).to_bytes(8, "big")) == 3


def test_a_store_handed_over_and_another_serde_topic() -> None:
    names = TopicNames(wordcount_builder().build(), APP)
    store = object()
    access = store_access(names, "counts-store", store=store, topic="a-buffer-changelog")
    assert access.store is store
    assert access.topic == "a-buffer-changelog"
    assert store_access(names, "counts-store").store is None


def test_an_unknown_store_is_a_key_error() -> None:
    names = TopicNames(wordcount_builder().build(), APP)
    with pytest.raises(KeyError):
        store_access(names, "no-such-store")
