"""Topology optimizations (Kafka Streams' `topology.optimization`, `InternalStreamsBuilder#optimizeTopology`).

The config is "none" (the default), "all", or a comma-separated list of rules, parsed as Kafka's
`StreamsConfig#verifyTopologyOptimizationConfigs` does. streamlet applies the rules it implements exactly as
Kafka Streams 4.1 does and refuses the others at once, so a topology never silently differs from the one a
Java application with the same config gets:

* `reuse.ktable.source.topics`: a source KTable's store (`builder.table(topic, ..., store_name)`, or one a
  join materializes) uses its source topic as its changelog (Kafka's `TableSourceNode
  #reuseSourceTopicForChangeLog`): no `-changelog` topic is created or written, and the store is restored
  from the source topic up to the task's committed offset.
"""

from __future__ import annotations

import re
from typing import Protocol

from streamlet.errors import ConfigError

NO_OPTIMIZATION = "none"
OPTIMIZE = "all"
REUSE_KTABLE_SOURCE_TOPICS = "reuse.ktable.source.topics"
MERGE_REPARTITION_TOPICS = "merge.repartition.topics"
SINGLE_STORE_SELF_JOIN = "single.store.self.join"

#: Kafka's `TOPOLOGY_OPTIMIZATION_CONFIGS`, in its order.
TOPOLOGY_OPTIMIZATION_CONFIGS = (
    OPTIMIZE,
    NO_OPTIMIZATION,
    REUSE_KTABLE_SOURCE_TOPICS,
    MERGE_REPARTITION_TOPICS,
    SINGLE_STORE_SELF_JOIN,
)
#: The rules streamlet implements (a subset of Kafka's).
SUPPORTED_RULES = frozenset({REUSE_KTABLE_SOURCE_TOPICS})
_ALL_RULES = (REUSE_KTABLE_SOURCE_TOPICS, MERGE_REPARTITION_TOPICS, SINGLE_STORE_SELF_JOIN)
_SEPARATOR = re.compile(r"\s*,\s*")


def verify_topology_optimization(config: str) -> frozenset[str]:
    """The optimization rules `config` enables (Kafka's `verifyTopologyOptimizationConfigs`).

    A ConfigError names the accepted values for an unknown one, for "none"/"all" mixed with others, and for a
    rule streamlet does not implement yet (which "all" includes).
    """
    accepted = ", ".join(repr(c) for c in TOPOLOGY_OPTIMIZATION_CONFIGS)
    if not isinstance(config, str):
        raise ConfigError(f"topology_optimization must be a string ({accepted}, or a comma list), got {config!r}")
    configs = _SEPARATOR.split(config)
    if (NO_OPTIMIZATION in configs or OPTIMIZE in configs) and len(configs) > 1:
        raise ConfigError(
            f"topology_optimization={config!r} is not a valid optimization config: 'none' and 'all' stand alone; "
            f"accepted values: {accepted}, or a comma list of the rules"
        )
    for conf in configs:
        if conf not in TOPOLOGY_OPTIMIZATION_CONFIGS:
            raise ConfigError(
                f"topology_optimization={config!r}: unrecognized value {conf!r}; accepted values: {accepted}, "
                "or a comma list of the rules"
            )
    rules = frozenset(_ALL_RULES if OPTIMIZE in configs else () if NO_OPTIMIZATION in configs else configs)
    unsupported = sorted(rules - SUPPORTED_RULES)
    if unsupported:
        raise ConfigError(
            f"topology_optimization={config!r}: streamlet does not implement {', '.join(unsupported)} yet; "
            f"supported: {', '.join(sorted(SUPPORTED_RULES))} (or 'none')"
        )
    return rules


class _Optimizable(Protocol):
    reuse_ktable_source_topics: bool


def optimize(internal: _Optimizable, rules: frozenset[str]) -> None:
    """Apply `rules` to the builder's graph before it is written (Kafka's `optimizeTopology`)."""
    internal.reuse_ktable_source_topics = REUSE_KTABLE_SOURCE_TOPICS in rules
