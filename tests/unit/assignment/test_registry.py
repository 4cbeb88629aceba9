"""Resolving the `task_assignor` setting."""

from __future__ import annotations

import pytest

from streamlet.assignment.api import ApplicationState, TaskAssignment
from streamlet.assignment.balanced import BalancedTaskAssignor
from streamlet.assignment.fallback_prior import FallbackPriorTaskAssignor
from streamlet.assignment.faust import FaustTaskAssignor
from streamlet.assignment.high_availability import HighAvailabilityTaskAssignor
from streamlet.assignment.legacy_sticky import LegacyStickyTaskAssignor
from streamlet.assignment.registry import register_task_assignor, registered_task_assignors, resolve_task_assignor
from streamlet.assignment.sticky import StickyTaskAssignor
from streamlet.errors import ConfigError


class EmptyAssignor:
    def assign(self, application_state: ApplicationState) -> TaskAssignment:
        return TaskAssignment([])


def test_registered_name_and_import_path_resolve() -> None:
    assert isinstance(resolve_task_assignor("high_availability"), HighAvailabilityTaskAssignor)
    spec = "streamlet.assignment.high_availability:HighAvailabilityTaskAssignor"
    assert isinstance(resolve_task_assignor(spec), HighAvailabilityTaskAssignor)
    assert isinstance(resolve_task_assignor(f"{__name__}:EmptyAssignor"), EmptyAssignor)
    assert resolve_task_assignor("high_availability") is not resolve_task_assignor("high_availability")


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("high_availability", HighAvailabilityTaskAssignor),
        ("balanced", BalancedTaskAssignor),
        ("sticky", StickyTaskAssignor),
        ("legacy_sticky", LegacyStickyTaskAssignor),
        ("fallback_prior", FallbackPriorTaskAssignor),
        ("faust", FaustTaskAssignor),
    ],
)
def test_every_kafka_streams_assignor_has_a_name(name: str, cls: type) -> None:
    assert isinstance(resolve_task_assignor(name), cls)
    assert name in registered_task_assignors()


def test_register_task_assignor() -> None:
    register_task_assignor("test_empty", EmptyAssignor)
    assert "test_empty" in registered_task_assignors()
    assert isinstance(resolve_task_assignor("test_empty"), EmptyAssignor)
    with pytest.raises(ConfigError):
        register_task_assignor("bad:name", EmptyAssignor)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("stiky", "'stiky' is not a known assignor: expected one of .*'high_availability'.*package.module:ClassName"),
        ("", "is not valid"),
        ("no_such_module_xyz:Thing", "cannot import module 'no_such_module_xyz'"),
        ("streamlet.assignment.api:NoSuchThing", "has no 'NoSuchThing'"),
        ("streamlet.assignment.client_state:LONG_MAX", "not a class or factory"),
        ("collections:OrderedDict", "has no assign"),
        ("streamlet.assignment.api:TaskInfo", "could not create the assignor"),
        ("module:", "not a known assignor"),
    ],
)
def test_bad_values_raise_config_error_naming_the_value(spec: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        resolve_task_assignor(spec)
    assert repr(spec) in str(info.value)
