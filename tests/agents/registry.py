"""Real package sources on this machine for the install tests: a small npm registry served
on 127.0.0.1 (npm itself installs from it) and a folder of wheels pip installs from.

The packages are tiny CLIs that print their version, as the real agent CLIs do.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import io
import json
import tarfile
import threading
import zipfile
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Final
from urllib.parse import unquote

# The npm settings every test install uses: this registry only, no retries, a private
# cache (so each install really asks the registry).
NPM_QUIET: Final = {
    "npm_config_fetch_retries": "0",
    "npm_config_audit": "false",
    "npm_config_fund": "false",
    "npm_config_update_notifier": "false",
}


def npm_tarball(
    name: str,
    version: str,
    program: str,
    *,
    prints: str | None = None,
    postinstall: str | None = None,
) -> bytes:
    """An npm package whose program ``program`` prints ``prints`` (default
    ``"<name> <version>"``) for ``--version``, with an optional ``postinstall`` script."""
    said = prints if prints is not None else f"{name} {version}"
    script = (
        "#!/usr/bin/env node\n"
        f"if (process.argv.includes('--version')) {{ console.log({json.dumps(said)}); }}\n"
        "else { console.log('hello'); }\n"
    )
    manifest: dict[str, object] = {"name": name, "version": version, "bin": {program: "cli.js"}}
    if postinstall is not None:
        manifest["scripts"] = {"postinstall": postinstall}
    files = {"package/package.json": json.dumps(manifest), "package/cli.js": script}
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(path)
            info.size = len(data)
            info.mode = 0o755
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


class NpmRegistry:
    """A read-only npm registry on 127.0.0.1: ``add`` packages, then point npm at ``url``.
    ``requests`` counts what npm asked for (paths)."""

    def __init__(self) -> None:
        self._packages: dict[str, dict[str, bytes]] = {}
        self.requests: list[str] = []
        self._lock = threading.Lock()
        registry = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                with registry._lock:
                    registry.requests.append(self.path)
                body, kind = registry._answer(unquote(self.path.split("?")[0]))
                self.send_response(200 if body is not None else 404)
                self.send_header("content-type", kind)
                payload = body if body is not None else b'{"error":"not found"}'
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/"

    def add(self, name: str, version: str, tarball: bytes) -> None:
        self._packages.setdefault(name, {})[version] = tarball

    def _answer(self, path: str) -> tuple[bytes | None, str]:
        if path.startswith("/-/tarballs/"):
            name, _, file = path.removeprefix("/-/tarballs/").rpartition("/")
            version = file.removesuffix(".tgz")
            data = self._packages.get(name, {}).get(version)
            return data, "application/octet-stream"
        name = path.lstrip("/")
        versions = self._packages.get(name)
        if versions is None:
            return None, "application/json"
        doc = {
            "name": name,
            "dist-tags": {"latest": max(versions)},
            "versions": {
                v: {
                    **json.loads(_member(tgz, "package/package.json")),
                    "dist": {
                        "tarball": f"{self.url}-/tarballs/{name}/{v}.tgz",
                        "shasum": hashlib.sha1(tgz).hexdigest(),  # noqa: S324 - npm's own field
                        "integrity": "sha512-"
                        + base64.b64encode(hashlib.sha512(tgz).digest()).decode(),
                    },
                }
                for v, tgz in versions.items()
            },
        }
        return json.dumps(doc).encode(), "application/json"

    def __enter__(self) -> NpmRegistry:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)


def _member(tgz: bytes, path: str) -> str:
    with tarfile.open(fileobj=io.BytesIO(tgz), mode="r:gz") as tar:
        member = tar.extractfile(path)
        assert member is not None
        return member.read().decode()


def write_wheel(
    folder: Path, name: str, version: str, program: str, data: Mapping[str, str]
) -> Path:
    """A wheel of the module ``name`` (with the files ``data`` inside it) whose console
    script ``program`` prints ``"<name> <version>"`` for ``--version``."""
    dist = f"{name}-{version}"
    code = (
        "import sys\n"
        "def main():\n"
        f"    print({f'{name} {version}'!r} if '--version' in sys.argv else 'hello')\n"
    )
    files = {
        f"{name}/__init__.py": code,
        **{f"{name}/{path}": text for path, text in data.items()},
        f"{dist}.dist-info/METADATA": (
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        ),
        f"{dist}.dist-info/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: backstay-tests\nRoot-Is-Purelib: true\n"
            "Tag: py3-none-any\n"
        ),
        f"{dist}.dist-info/entry_points.txt": f"[console_scripts]\n{program} = {name}:main\n",
    }
    record = [
        f"{path},sha256="
        + base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).decode().rstrip("=")
        + f",{len(text.encode())}"
        for path, text in files.items()
    ]
    record.append(f"{dist}.dist-info/RECORD,,")
    files[f"{dist}.dist-info/RECORD"] = "\n".join(record) + "\n"
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return wheel


def pip_env(wheels: Path) -> dict[str, str]:
    """Variables that make pip install from ``wheels`` only."""
    return {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels), "PIP_NO_CACHE_DIR": "1"}
