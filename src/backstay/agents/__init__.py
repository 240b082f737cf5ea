"""The real agent CLIs: which versions backstay supports, installing them, finding them.

* ``catalog``: ``CliSpec`` for each known CLI (``CLIS``): its package, its program, the
  pinned version ``backstay agents install`` installs and the versions adapters accept.
* ``dirs``: the managed directory (``--dir``, ``$BACKSTAY_AGENTS_DIR``, the user's cache).
* ``install``: pinned installs from npm and PyPI, each in its own folder, idempotent,
  several at once; failures are results naming the command and what to do.
* ``locate``: the binary an adapter runs (configured path, managed directory, ``PATH``)
  at a supported version, or a ``ConfigError`` saying how to install one.
* ``version``: ``<binary> --version``, run briefly, remembered per binary.
* ``status``: where each CLI stands (``backstay agents list``).

Nothing here is imported by ``import backstay``; adapters import it when they run.
"""

from __future__ import annotations

from backstay.agents.catalog import CLIS, CliSpec, PackageKind, cli_names, cli_spec
from backstay.agents.dirs import AGENTS_DIR_ENV_VAR, agents_dir
from backstay.agents.install import (
    DEFAULT_INSTALL_TIMEOUT_S,
    DEFAULT_JOBS,
    InstallResult,
    InstallStarted,
    InstallStatus,
    install,
)
from backstay.agents.locate import Located, Source, locate
from backstay.agents.status import CliState, CliStatus, cli_status
from backstay.agents.version import VERSION_TIMEOUT_S, detect_version

__all__ = [
    "AGENTS_DIR_ENV_VAR",
    "CLIS",
    "DEFAULT_INSTALL_TIMEOUT_S",
    "DEFAULT_JOBS",
    "VERSION_TIMEOUT_S",
    "CliSpec",
    "CliState",
    "CliStatus",
    "InstallResult",
    "InstallStarted",
    "InstallStatus",
    "Located",
    "PackageKind",
    "Source",
    "agents_dir",
    "cli_names",
    "cli_spec",
    "cli_status",
    "detect_version",
    "install",
    "locate",
]
