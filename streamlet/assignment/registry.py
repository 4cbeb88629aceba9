"""Resolve the `task_assignor` setting to an assignor: a registered name or "package.module:ClassName".

Names keep configs short and stable ("high_availability"); the import form lets users plug in their own
assignor without touching streamlet, like Kafka Streams' `task.assignor.class`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from streamlet.assignment.api import TaskAssignor
from streamlet.assignment.balanced import BalancedTaskAssignor
from streamlet.assignment.fallback_prior import FallbackPriorTaskAssignor
from streamlet.assignment.faust import FaustTaskAssignor
from streamlet.assignment.high_availability import HighAvailabilityTaskAssignor
from streamlet.assignment.legacy_sticky import LegacyStickyTaskAssignor
from streamlet.assignment.sticky import StickyTaskAssignor
from streamlet.errors import ConfigError

_FACTORIES: dict[str, Callable[[], TaskAssignor]] = {
    "high_availability": HighAvailabilityTaskAssignor,
    # KIP-925 rack-aware HATA, whatever `rack_aware_assignment_strategy` says (sweeps compare it with HATA)
    "high_availability_min_traffic": lambda: HighAvailabilityTaskAssignor("min_traffic"),
    "high_availability_balance_subtopology": lambda: HighAvailabilityTaskAssignor("balance_subtopology"),
    "balanced": BalancedTaskAssignor,
    "sticky": StickyTaskAssignor,
    "legacy_sticky": LegacyStickyTaskAssignor,
    "fallback_prior": FallbackPriorTaskAssignor,
    "faust": FaustTaskAssignor,
}


def register_task_assignor(name: str, factory: Callable[[], TaskAssignor]) -> None:
    """Make `name` resolvable; re-registering a name replaces its factory."""
    if not name or ":" in name:
        raise ConfigError(f"assignor name {name!r} must be non-empty and must not contain ':'")
    _FACTORIES[name] = factory


def registered_task_assignors() -> list[str]:
    return sorted(_FACTORIES)


def _accepted() -> str:
    names = ", ".join(repr(n) for n in registered_task_assignors())
    return f"expected one of {names} or 'package.module:ClassName'"


def resolve_task_assignor(spec: str) -> TaskAssignor:
    """A fresh assignor instance for `spec`; raises ConfigError naming the value and what is accepted."""
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError(f"task_assignor={spec!r} is not valid: {_accepted()}")
    factory = _FACTORIES.get(spec)
    if factory is None:
        module_name, sep, attr = spec.partition(":")
        if not sep or not module_name or not attr:
            raise ConfigError(f"task_assignor={spec!r} is not a known assignor: {_accepted()}")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise ConfigError(f"task_assignor={spec!r}: cannot import module {module_name!r} ({exc})") from exc
        target = module
        for part in attr.split("."):
            try:
                target = getattr(target, part)
            except AttributeError:
                raise ConfigError(f"task_assignor={spec!r}: module {module_name!r} has no {attr!r}") from None
        if not callable(target):
            raise ConfigError(f"task_assignor={spec!r}: {attr!r} is not a class or factory")
        factory = target
    try:
        assignor = factory()
    except Exception as exc:
        raise ConfigError(f"task_assignor={spec!r}: could not create the assignor: {exc!r}") from exc
    if not callable(getattr(assignor, "assign", None)):
        raise ConfigError(f"task_assignor={spec!r}: {assignor!r} has no assign(application_state) method")
    return assignor
