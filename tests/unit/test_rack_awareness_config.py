"""KIP-708 config: `client_tags` and `rack_aware_assignment_tags`, validated as Kafka's StreamsConfig does."""

from __future__ import annotations

import pytest

from streamlet.assignment.api import AssignmentConfigs
from streamlet.config import StreamsConfig
from streamlet.errors import ConfigError


def test_kafka_names_map_to_client_tags_and_the_tag_list() -> None:
    config = StreamsConfig.from_mapping(
        {
            "application.id": "app",
            "client.tag.zone": "eu-1a",
            "client.tag.cluster": "k8s-1",
            "rack.aware.assignment.tags": "zone, cluster",
        }
    )
    assert config.client_tags == {"zone": "eu-1a", "cluster": "k8s-1"}
    assert config.rack_aware_assignment_tags == ("zone", "cluster")
    assert AssignmentConfigs.from_streams_config(config).rack_aware_assignment_tags == ("zone", "cluster")


@pytest.mark.parametrize(
    ("tags", "configured", "message"),
    [
        ({"zone": "a"}, ["rack"], "not a key of client_tags"),
        ({f"k{i}": "v" for i in range(6)}, [], "at most 5 client tags"),
        ({"zone": "a"}, ["zone"] * 6, "at most 5 tag keys"),
        ({"k" * 21: "v"}, [], "exceeds 20"),
        ({"zone": "v" * 31}, [], "exceeds 30"),
        ({"zone": "a"}, "zone", "list of tag keys"),
    ],
)
def test_invalid_rack_awareness_is_rejected(tags: dict[str, str], configured: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        StreamsConfig(application_id="app", client_tags=tags, rack_aware_assignment_tags=configured)  # type: ignore[arg-type]


def test_limits_are_inclusive() -> None:
    tags = {f"{i}".rjust(20, "k"): "v" * 30 for i in range(5)}
    assert (
        StreamsConfig(application_id="app", client_tags=tags, rack_aware_assignment_tags=tuple(tags)).client_tags
        == tags
    )
