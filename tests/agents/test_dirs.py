"""agents_dir: --dir, then $BACKSTAY_AGENTS_DIR, then the user's cache directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from backstay.agents import agents_dir
from backstay.errors import ConfigError


def test_an_explicit_directory_wins(tmp_path: Path) -> None:
    env = {"BACKSTAY_AGENTS_DIR": "/elsewhere", "HOME": "/home/u"}
    assert agents_dir(tmp_path / "d", environ=env) == tmp_path / "d"


def test_the_variable_comes_before_the_cache() -> None:
    env = {"BACKSTAY_AGENTS_DIR": "/opt/agents", "XDG_CACHE_HOME": "/c", "HOME": "/home/u"}
    assert agents_dir(environ=env) == Path("/opt/agents")


def test_the_xdg_cache_directory_is_used_when_absolute() -> None:
    env = {"XDG_CACHE_HOME": "/c", "HOME": "/home/u"}
    assert agents_dir(environ=env) == Path("/c/backstay/agents")


def test_a_relative_xdg_cache_directory_is_ignored_as_the_spec_says() -> None:
    env = {"XDG_CACHE_HOME": "relative", "HOME": "/home/u"}
    assert agents_dir(environ=env) == Path("/home/u/.cache/backstay/agents")


def test_a_tilde_means_home() -> None:
    assert agents_dir("~/agents", environ={"HOME": "/home/u"}) == Path("/home/u/agents")


def test_a_relative_directory_is_made_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert agents_dir("agents", environ={}) == tmp_path / "agents"


def test_a_file_is_not_a_directory(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    with pytest.raises(ConfigError) as caught:
        agents_dir(environ={"BACKSTAY_AGENTS_DIR": str(tmp_path / "f")})
    assert caught.value.where == "BACKSTAY_AGENTS_DIR"
    assert "is not a directory" in str(caught.value)


def test_an_empty_value_is_rejected_naming_the_flag() -> None:
    with pytest.raises(ConfigError) as caught:
        agents_dir(" ", environ={})
    assert caught.value.where == "--dir"


def test_without_any_home_it_says_what_to_set() -> None:
    with pytest.raises(ConfigError, match="set BACKSTAY_AGENTS_DIR, XDG_CACHE_HOME or HOME"):
        agents_dir(environ={})
