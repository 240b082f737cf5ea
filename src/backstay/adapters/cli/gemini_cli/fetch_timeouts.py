"""Gemini CLI's request timeout, raised: a preload script for Node's ``fetch``.

Gemini CLI 0.61 has no setting for its request timeout. It installs one undici dispatcher
for every ``fetch`` of the process with a 60 s limit on the response headers and 300 s
between body chunks (``defaultHeadersTimeout`` / ``defaultBodyTimeout`` of its bundle;
only an experiment flag of Google's Code Assist server changes them). A request the
gateway holds longer than 60 s — a ``Retry-After`` waited out, a provider that answers
slowly — ends in ``fetch failed`` inside the CLI, and the session with it.

``PRELOAD`` is a small CommonJS file the run loads before the CLI (``NODE_OPTIONS=--require
…``, kept by the CLI when it relaunches itself): it wraps the global ``fetch`` so each
request is dispatched with both limits set to ``BACKSTAY_FETCH_TIMEOUT_MS`` (undici reads
per-request ``headersTimeout`` / ``bodyTimeout`` before the dispatcher's own). In the
relaunched CLI (``GEMINI_CLI_NO_RELAUNCH`` set) it takes itself out of ``NODE_OPTIONS``,
so the commands the agent runs do not inherit it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

__all__ = ["FILE_NAME", "PRELOAD", "TIMEOUT_ENV", "timeout_env"]

FILE_NAME: Final = "backstay-fetch-timeouts.cjs"
TIMEOUT_ENV: Final = "BACKSTAY_FETCH_TIMEOUT_MS"
PRELOAD: Final = """\
"use strict";
// backstay: this run's request timeout for every fetch of the process (see
// backstay.adapters.cli.gemini_cli.fetch_timeouts).
const ms = Number(process.env.BACKSTAY_FETCH_TIMEOUT_MS);
const self = process.env.BACKSTAY_FETCH_TIMEOUT_REQUIRE;
if (Number.isFinite(ms) && ms > 0 && typeof globalThis.fetch === "function") {
  const original = globalThis.fetch;
  const key = Symbol.for("undici.globalDispatcher.1");
  const raised = new WeakMap();
  const raise = (dispatcher) => {
    let proxy = raised.get(dispatcher);
    if (proxy === undefined) {
      proxy = new Proxy(dispatcher, {
        get(target, prop) {
          if (prop === "dispatch") {
            return (opts, handler) =>
              target.dispatch({ ...opts, headersTimeout: ms, bodyTimeout: ms }, handler);
          }
          const value = Reflect.get(target, prop, target);
          return typeof value === "function" ? value.bind(target) : value;
        },
      });
      raised.set(dispatcher, proxy);
    }
    return proxy;
  };
  globalThis.fetch = function fetch(input, init) {
    const dispatcher = (init && init.dispatcher) || globalThis[key];
    if (dispatcher === undefined || dispatcher === null) return original(input, init);
    return original(input, { ...init, dispatcher: raise(dispatcher) });
  };
}
if (process.env.GEMINI_CLI_NO_RELAUNCH && self) {
  const options = process.env.NODE_OPTIONS || "";
  process.env.NODE_OPTIONS = options.split(self).join("").trim();
  if (!process.env.NODE_OPTIONS) delete process.env.NODE_OPTIONS;
  delete process.env.BACKSTAY_FETCH_TIMEOUT_MS;
  delete process.env.BACKSTAY_FETCH_TIMEOUT_REQUIRE;
}
"""


def timeout_env(folder: Path, timeout_s: float, given: Mapping[str, str]) -> dict[str, str]:
    """Write ``PRELOAD`` into ``folder``; the variables that load it with ``timeout_s`` as
    the request timeout (``NODE_OPTIONS`` after any the run was already given)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / FILE_NAME
    path.write_text(PRELOAD, encoding="utf-8")
    path.chmod(0o600)
    require = f'--require "{_quoted(str(path))}"'
    options = given.get("NODE_OPTIONS", "").strip()
    return {
        "NODE_OPTIONS": f"{options} {require}".strip(),
        TIMEOUT_ENV: str(max(1, round(timeout_s * 1000))),
        "BACKSTAY_FETCH_TIMEOUT_REQUIRE": require,
    }


def _quoted(text: str) -> str:
    """``text`` as it goes between double quotes in ``NODE_OPTIONS``: node reads a backslash
    there as escaping the character after it, so a path holding ``"`` or ``\\`` stays whole."""
    return text.replace("\\", "\\\\").replace('"', '\\"')
