"""The gateway's public surface: sorted as ruff keeps ``__all__``, every name present."""

from __future__ import annotations

import backstay.gateway


def _isort_key(name: str) -> tuple[int, str]:
    if name.isupper():
        return (0, name)
    if name[:1].isupper():
        return (1, name)
    return (2, name)


def test_all_is_sorted_and_every_name_exists() -> None:
    names = list(backstay.gateway.__all__)
    assert names == sorted(names, key=_isort_key)
    assert [n for n in names if not hasattr(backstay.gateway, n)] == []


def test_importing_the_gateway_does_not_import_aiohttp() -> None:
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    code = "import sys, backstay.gateway; print('aiohttp' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "False"
