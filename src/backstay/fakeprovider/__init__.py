"""A real local HTTP server speaking the Anthropic, OpenAI and Gemini wire formats, with
scripted faults: the provider backstay's own tests, benchmarks and demo fail against.

``FakeProvider(scenario)`` serves on 127.0.0.1 (a sync or async context manager);
``Scenario`` holds the ``Fault`` list, the ``Reply``, a scripted multi-turn ``Session``
(``Scenario.shell_session``) and an enforced ``RateLimit``;
``load_scenario(path)`` reads one from YAML. Needs aiohttp (``backstay[fake]``), imported
only when a server starts. See docs/fake-provider.md.
"""

from __future__ import annotations

import os

from backstay.fakeprovider.faults import API_NAMES, Fault, FaultKind, Outage
from backstay.fakeprovider.provider import FakeProvider
from backstay.fakeprovider.scenario import RateLimit, Reply, Scenario, ToolCall
from backstay.fakeprovider.session import SHELL_TOOLS, Session, Turn
from backstay.fakeprovider.stats import Stats
from backstay.fakeprovider.tokens import count_tokens

__all__ = [
    "API_NAMES",
    "SHELL_TOOLS",
    "FakeProvider",
    "Fault",
    "FaultKind",
    "Outage",
    "RateLimit",
    "Reply",
    "Scenario",
    "Session",
    "Stats",
    "ToolCall",
    "Turn",
    "count_tokens",
    "load_scenario",
    "parse_fault",
]


def load_scenario(path: str | os.PathLike[str]) -> Scenario:
    """Read and check a scenario file (docs/fake-provider.md): one ``ConfigError`` lists
    every problem with its file, line and key path."""
    from backstay.config._fake_scenario import load_scenario as load  # noqa: PLC0415

    return load(path)


def parse_fault(spec: str) -> Fault:
    """A ``Fault`` from ``KIND[:key=value]…``, the form ``--fault`` takes
    (``rate_limit:first=2:retry_after_s=3``); ``ConfigError`` names what is wrong."""
    from backstay.config._fake_scenario import parse_fault as parse  # noqa: PLC0415

    return parse(spec)
