"""``observe.otel`` of ``backstay.yaml``: checked like every section, overridable, and
turned into ``OtelSettings``."""

from __future__ import annotations

from pathlib import Path

import pytest

from backstay.config import load_config
from backstay.config._otel import OtelSettings
from backstay.errors import ConfigError


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "backstay.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_otel_section_becomes_settings(tmp_path: Path) -> None:
    path = _file(
        tmp_path,
        "observe:\n  otel:\n    enabled: true\n    service_name: nightly\n"
        "    endpoint: http://127.0.0.1:4318\n    capture_content: true\n",
    )
    assert load_config(path, environ={}).otel_settings() == OtelSettings(
        enabled=True,
        service_name="nightly",
        endpoint="http://127.0.0.1:4318",
        capture_content=True,
    )


def test_without_the_section_the_environment_decides(tmp_path: Path) -> None:
    assert load_config(_file(tmp_path, "retry: {}\n"), environ={}).otel_settings() == (
        OtelSettings()
    )


def test_an_unknown_key_names_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"observe.*prometheus.*otel"):
        load_config(_file(tmp_path, "observe:\n  prometheus: {}\n"), environ={})


def test_a_wrong_type_is_named_with_its_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"yaml:3: observe\.otel\.enabled: must be true or false"):
        load_config(_file(tmp_path, "observe:\n  otel:\n    enabled: maybe\n"), environ={})


def test_an_environment_variable_overrides_the_file(tmp_path: Path) -> None:
    path = _file(tmp_path, "observe:\n  otel:\n    enabled: true\n")
    config = load_config(path, environ={"BACKSTAY__OBSERVE__OTEL__ENABLED": "false"})
    assert config.otel_settings().enabled is False
    assert config.source_of("observe.otel.enabled").kind == "env"
