"""A run's private ``HOME``: its folders (``private_home``), and the files a CLI needs
there from its installation (``CliSpec.home_seed``).

Aider's litellm fetches a model price list from the network on every start unless the
copy it ships sits in ``$HOME/.aider/caches``: the seed maps that path inside ``HOME`` to
a glob inside the installation's root (the virtual environment holding the binary).
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Final

from backstay.agents.catalog import CliSpec
from backstay.errors import ConfigError

__all__ = ["HOME_FOLDERS", "install_root", "private_home", "seed_files", "seed_home"]

# Variable → folder inside the run's HOME: where CLIs keep config, caches, data, state and
# temporary files (crash reports, transcripts), so that nothing lands outside it.
HOME_FOLDERS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "TMPDIR": "tmp",
        "XDG_CONFIG_HOME": ".config",
        "XDG_CACHE_HOME": ".cache",
        "XDG_DATA_HOME": ".local/share",
        "XDG_STATE_HOME": ".local/state",
    }
)


def install_root(binary: Path) -> Path:
    """The root of the installation a program belongs to: the folder above its ``bin/``
    (a virtual environment), after following symbolic links (pipx links its programs)."""
    return binary.resolve().parent.parent


def seed_files(spec: CliSpec, binary: Path) -> Mapping[str, Path]:
    """Each ``HOME``-relative target of ``spec.home_seed`` → the file of the installation
    it is copied from. ``ConfigError`` naming the CLI when a source is missing."""
    root = install_root(binary)
    found: dict[str, Path] = {}
    for target, pattern in spec.home_seed.items():
        matches = sorted(root.glob(pattern))
        if not matches:
            raise ConfigError(
                f"{pattern} is missing from {root}, so a run would fetch {target} from the "
                f"network: reinstall with `{spec.install_hint} --force`",
                where=spec.name,
            )
        found[target] = matches[-1]
    return MappingProxyType(found)


def seed_home(files: Mapping[str, Path], home: Path) -> None:
    """Copy each of ``files`` (from ``seed_files``) to its place inside ``home``."""
    for target, source in files.items():
        destination = home / target
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, destination)


def private_home(home: Path) -> dict[str, str]:
    """Make ``home`` and the folders of ``HOME_FOLDERS`` inside it; the variables that
    point a CLI at them (``HOME`` included)."""
    env = {"HOME": str(home)}
    for variable, folder in HOME_FOLDERS.items():
        path = home / folder
        path.mkdir(parents=True, exist_ok=True)
        env[variable] = str(path)
    return env
