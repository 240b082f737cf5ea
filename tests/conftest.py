"""Every test starts without the providers' standard variables, whatever the shell that
runs the tests exports: runs inherit them (``backstay.adapters.provider_env``), and a
test says itself which ones it sets."""

from __future__ import annotations

import pytest

from backstay.adapters.provider_env import declared_env
from backstay.adapters.registry import BUILTIN_ADAPTERS, adapter_class

PROVIDER_VARIABLES = sorted(
    {name for adapter in BUILTIN_ADAPTERS for name in declared_env(adapter_class(adapter)).names}
)


@pytest.fixture(autouse=True)
def _no_provider_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROVIDER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
