"""A secured broker's or cluster's STREAMLET_* client variables as config settings and as a `ClientSecurity`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from streamlet.kafka.security import ClientSecurity


def config_of(variables: Mapping[str, str]) -> dict[str, str]:
    """STREAMLET_SSL_CAFILE=... -> ssl_cafile=...: what `StreamsConfig.from_mapping` takes."""
    return {name.removeprefix("STREAMLET_").lower(): value for name, value in variables.items()}


def security_of(settings: Mapping[str, Any]) -> ClientSecurity:
    return ClientSecurity.from_settings({k: v for k, v in settings.items() if k != "bootstrap_servers"})
