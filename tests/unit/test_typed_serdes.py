"""Serdes from types: ModelSerde for Records and pydantic models, and the build-time fit check."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

from streamlet.errors import SerializationError, TopologyError
from streamlet.models import Record
from streamlet.serdes import BytesSerde, JsonSerde, LongSerde, StringSerde
from streamlet.typed_serdes import ModelSerde, check_serde_fits, serde_for_type


class Click(Record):
    user: str
    x: int = 0


class PydClick(pydantic.BaseModel):
    user: str
    x: int = 0


def test_record_round_trip_and_null() -> None:
    serde = ModelSerde(Click)
    assert serde.serialize("t", Click("ann", 3)) == b'{"user":"ann","x":3}'
    assert serde.deserialize("t", b'{"user":"ann","x":3}') == Click("ann", 3)
    assert serde.serialize("t", None) is None and serde.deserialize("t", None) is None


def test_serializing_the_wrong_type_names_serde_topic_and_type() -> None:
    with pytest.raises(SerializationError, match=r"ModelSerde\(Click\) cannot serialize a dict for topic 'clicks'"):
        ModelSerde(Click).serialize("clicks", {"user": "ann"})


def test_decoding_errors_name_model_topic_and_field() -> None:
    with pytest.raises(SerializationError, match="cannot decode a Click from topic 'clicks': Click: field 'x' must"):
        ModelSerde(Click).deserialize("clicks", b'{"user":"a","x":"many"}')


def test_pydantic_models_are_accepted_directly() -> None:
    serde = ModelSerde(PydClick)
    data = serde.serialize("t", PydClick(user="ann", x=2))
    assert data is not None and serde.deserialize("t", data) == PydClick(user="ann", x=2)
    with pytest.raises(SerializationError, match="cannot decode a PydClick from topic 'clicks': field 'user'"):
        serde.deserialize("clicks", b'{"x":1}')
    with pytest.raises(SerializationError, match="cannot decode a PydClick"):
        serde.deserialize("clicks", b"{not json")
    with pytest.raises(SerializationError, match="cannot serialize a Click"):
        serde.serialize("t", Click("ann"))


def test_model_serde_refuses_a_non_model() -> None:
    with pytest.raises(TypeError, match="Record subclass or a pydantic model"):
        ModelSerde(dict)


@pytest.mark.parametrize(
    ("tp", "expected"),
    [(str, StringSerde), (bytes, BytesSerde), (int, LongSerde), (float, JsonSerde), (dict, JsonSerde)],
)
def test_serde_for_type(tp: Any, expected: type) -> None:
    assert type(serde_for_type(tp)) is expected


def test_serde_for_a_model_type_is_its_model_serde() -> None:
    serde = serde_for_type(Click)
    assert isinstance(serde, ModelSerde) and serde.model is Click


@pytest.mark.parametrize(
    ("serde", "tp"),
    [(StringSerde(), Click), (StringSerde(), dict), (LongSerde(), str), (JsonSerde(), Click), (ModelSerde(Click), str)],
    ids=repr,
)
def test_mismatches_are_topology_errors(serde: Any, tp: type) -> None:
    with pytest.raises(TopologyError, match="table t"):
        check_serde_fits(serde, tp, "table t")


@pytest.mark.parametrize(
    ("serde", "tp"),
    [(StringSerde(), str), (LongSerde(), int), (JsonSerde(), dict), (ModelSerde(Click), Click), (JsonSerde(), int)],
    ids=repr,
)
def test_fitting_serdes_pass(serde: Any, tp: type) -> None:
    check_serde_fits(serde, tp, "table t")


def test_generic_types_are_checked_by_their_origin() -> None:
    with pytest.raises(TopologyError, match="declared type is dict"):
        check_serde_fits(StringSerde(), dict[str, int], "map_values")
    check_serde_fits(JsonSerde(), list[int], "map_values")
