"""The processor spec families of `topology/nodes.py`: each operation belongs to exactly one, and a spec is
made only with an operation of its own family."""

from __future__ import annotations

import pytest

from streamlet.errors import TopologyError
from streamlet.topology import nodes as n
from streamlet.topology.suppressed import BufferConfig, Suppressed
from tests.unit.topology._support import spec_families


def test_every_operation_belongs_to_one_family() -> None:
    owners: dict[str, list[str]] = {}
    for kind in spec_families():
        for op in kind.OPS:
            owners.setdefault(op, []).append(kind.__name__)
    assert {op: kinds for op, kinds in owners.items() if len(kinds) > 1} == {}
    # the operations the DSL names (the module's constants) are exactly the families' operations
    named = {value for name, value in vars(n).items() if name.isupper() and isinstance(value, str)}
    assert set(owners) == named


def test_a_spec_takes_only_its_own_operations() -> None:
    assert n.StreamOperationSpec("f", (), n.FILTER, fn=bool).op == n.FILTER
    with pytest.raises(TopologyError, match="'count' is not one of its operations"):
        n.StreamOperationSpec("f", (), n.COUNT)
    with pytest.raises(TopologyError, match="'filter' is not one of its operations"):
        n.AggregateSpec("agg", (), n.FILTER, stores=("s",))
    with pytest.raises(TopologyError, match="ProcessorSpec p"):
        n.ProcessorSpec("p", (), n.FILTER)  # the base is no family: an operation always has its type


def test_a_family_of_one_operation_has_it_as_default() -> None:
    assert n.ProcessSpec("p", (), fn=print).op == n.PROCESS
    assert n.BranchSpec("b", (), fn=print).op == n.BRANCH
    assert n.PreAggregateSpec("pre", (), fn=print).op == n.PREAGGREGATE
    suppressed = Suppressed.until_time_limit(10, BufferConfig.unbounded())
    suppress = n.SuppressSpec("s", (), stores=("buffer",), suppress=suppressed)
    assert (suppress.op, suppress.stores) == (n.SUPPRESS, ("buffer",))
