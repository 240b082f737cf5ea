"""locate: a configured path, then the managed directory, then PATH, at a supported version."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.agents.support import managed, program, runs_of

from backstay.agents import Source, cli_spec, locate
from backstay.agents.version import forget_versions
from backstay.errors import ConfigError

CODEX = cli_spec("codex")
AIDER = cli_spec("aider")


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    forget_versions()


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    path = tmp_path / "bin"
    path.mkdir()
    return path


@pytest.fixture
def env(bin_dir: Path) -> dict[str, str]:
    return {"PATH": f"{bin_dir}:/usr/bin:/bin"}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "agents"


def test_a_configured_path_is_the_only_candidate(
    tmp_path: Path, root: Path, bin_dir: Path, env: dict[str, str]
) -> None:
    managed(root, CODEX, "0.169.0", prints="codex-cli 0.169.0")
    mine = program(tmp_path / "mine" / "codex", "codex-cli 0.169.0")
    found = locate("codex", mine, agents_dir=root, environ=env)
    assert (found.path, found.version, found.source) == (mine, "0.169.0", Source.CONFIGURED)


def test_a_configured_path_that_is_missing_names_the_setting(
    tmp_path: Path, root: Path, env: dict[str, str]
) -> None:
    managed(root, CODEX, "0.169.0", prints="codex-cli 0.169.0")
    with pytest.raises(ConfigError) as caught:
        locate("codex", tmp_path / "nope", agents_dir=root, environ=env, where="config.binary")
    assert caught.value.where == "config.binary"
    assert "is not an executable file" in str(caught.value)
    assert "backstay agents install codex" in str(caught.value)


def test_a_configured_path_at_an_unknown_version_is_refused(
    tmp_path: Path, root: Path, env: dict[str, str]
) -> None:
    old = program(tmp_path / "old" / "codex", "codex-cli 0.100.0")
    with pytest.raises(ConfigError) as caught:
        locate("codex", old, agents_dir=root, environ=env)
    message = str(caught.value)
    assert "is codex 0.100.0, which backstay does not support (supported: 0.169.0)" in message
    assert "backstay agents install codex" in message


def test_an_intact_managed_install_is_found_without_running_it(
    tmp_path: Path, root: Path, bin_dir: Path, env: dict[str, str]
) -> None:
    runs = tmp_path / "runs"
    binary = managed(root, CODEX, "0.169.0", prints="codex-cli 0.169.0", runs=runs)
    program(bin_dir / "codex", "codex-cli 0.169.0")
    found = locate("codex", agents_dir=root, environ=env)
    assert (found.path, found.version, found.source) == (binary, "0.169.0", Source.MANAGED)
    assert runs_of(runs) == 0


def test_a_changed_managed_binary_is_asked_its_version(
    tmp_path: Path, root: Path, env: dict[str, str]
) -> None:
    binary = managed(root, CODEX, "0.169.0")
    program(binary, "codex-cli 0.169.0 (rebuilt)")
    found = locate("codex", agents_dir=root, environ=env)
    assert (found.source, found.version) == (Source.MANAGED, "0.169.0")


def test_path_is_used_when_nothing_is_managed(
    root: Path, bin_dir: Path, env: dict[str, str]
) -> None:
    on_path = program(bin_dir / "codex", "codex-cli 0.169.0")
    found = locate("codex", agents_dir=root, environ=env)
    assert (found.path, found.source) == (on_path, Source.PATH)


def test_an_unsupported_managed_version_falls_through_to_path(
    root: Path, bin_dir: Path, env: dict[str, str]
) -> None:
    managed(root, CODEX, "0.150.0")
    on_path = program(bin_dir / "codex", "codex-cli 0.169.0")
    assert locate("codex", agents_dir=root, environ=env).path == on_path


def test_nothing_usable_lists_what_was_found_and_how_to_install(
    root: Path, bin_dir: Path, env: dict[str, str]
) -> None:
    program(bin_dir / "codex", "codex-cli 0.100.0")
    with pytest.raises(ConfigError) as caught:
        locate("codex", agents_dir=root, environ=env)
    message = str(caught.value)
    assert caught.value.where == "codex"
    assert f"{root / 'codex'}: not installed" in message
    assert f"PATH: {bin_dir / 'codex'} is 0.100.0, not supported" in message
    assert message.endswith("Install it with `backstay agents install codex`")


def test_a_broken_path_binary_is_reported_not_raised_through(
    root: Path, bin_dir: Path, env: dict[str, str]
) -> None:
    program(bin_dir / "codex", "segfault", code=139)
    with pytest.raises(ConfigError, match="exited 139 without a version"):
        locate("codex", agents_dir=root, environ=env)


def test_the_adapter_may_narrow_the_supported_versions(
    root: Path, bin_dir: Path, env: dict[str, str]
) -> None:
    program(bin_dir / "codex", "codex-cli 0.169.0")
    with pytest.raises(ConfigError, match=r"no supported codex \(0\.170\.0\)"):
        locate("codex", supported=["0.170.0"], agents_dir=root, environ=env)


def test_an_unknown_cli_is_a_config_error(root: Path, env: dict[str, str]) -> None:
    with pytest.raises(ConfigError, match="unknown agent CLI 'cursor'"):
        locate("cursor", agents_dir=root, environ=env)


def test_the_managed_directory_comes_from_the_environment(
    tmp_path: Path, env: dict[str, str]
) -> None:
    root = tmp_path / "from-env"
    binary = managed(root, CODEX, "0.169.0")
    found = locate("codex", environ={**env, "BACKSTAY_AGENTS_DIR": str(root)})
    assert found.path == binary


def test_seed_home_copies_the_files_a_run_would_fetch(tmp_path: Path, root: Path) -> None:
    binary = managed(root, AIDER, "0.86.2", prints="aider 0.86.2")
    litellm = binary.parent.parent / "lib" / "python3.11" / "site-packages" / "litellm"
    litellm.mkdir(parents=True)
    (litellm / "model_prices_and_context_window_backup.json").write_text('{"gpt": {}}')
    found = locate("aider", agents_dir=root, environ={"PATH": "/usr/bin:/bin"})
    home = tmp_path / "home"
    found.seed_home(home)
    seeded = home / ".aider" / "caches" / "model_prices_and_context_window.json"
    assert seeded.read_text() == '{"gpt": {}}'
    assert found.offline_env == {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def test_seed_home_without_the_file_says_to_reinstall(tmp_path: Path, root: Path) -> None:
    managed(root, AIDER, "0.86.2", prints="aider 0.86.2")
    found = locate("aider", agents_dir=root, environ={"PATH": "/usr/bin:/bin"})
    with pytest.raises(
        ConfigError, match=r"reinstall with `backstay agents install aider --force`"
    ):
        found.seed_home(tmp_path / "home")
