"""The secret values ``redact`` removes by value: those of environment variables whose
names look secret, and those given to ``register_secret``.

Every redaction asks for them (every ``Failure`` built, every event written), so the answer
is kept and worked out again only after a change. How a change is noticed:

* **Watching** (the usual case). An audit hook (``sys.addaudithook``, PEP 578) is told of
  every ``os.putenv`` and ``os.unsetenv`` — every change made through ``os.environ``. A
  change to a variable whose name looks secret marks the answer stale; a value put under
  such a name is taken from the event itself, before ``os.environ`` holds it, so a redaction
  racing the change in another thread cannot miss it. Asking is then a flag and two
  identity tests, whatever the size of the environment. The hook does nothing else: it
  costs the process one function call per audited operation (opening a file, importing a
  module …), and it is added on the first redaction, never at import.
* **Comparing**, when the hook cannot be added (an existing audit hook refuses it) or
  ``os.environ`` or its mapping was replaced (``mock.patch.object(os, "environ", {...})``):
  the raw environment is compared with a snapshot on every ask, as before watching existed.

A value is redacted while the environment holds it under a secret-looking name; one that
was put and then removed is no longer redacted (``os.unsetenv`` is an event too).
"""

from __future__ import annotations

import os
import re
import sys
import threading
from typing import Any, Final

__all__ = ["MIN_ENV_SECRET_LEN", "MIN_SECRET_LEN", "SECRETS", "SECRET_ENV_NAME", "SecretValues"]

MIN_SECRET_LEN: Final = 8
MIN_ENV_SECRET_LEN: Final = 12

# Environment variable names that hold secrets (ANTHROPIC_API_KEY, GITHUB_TOKEN, LOCAL_KEY …).
SECRET_ENV_NAME: Final = re.compile(r"(?i)(key|token|secret|passw|credential|auth)")

_PUT: Final = "os.putenv"
_UNSET: Final = "os.unsetenv"
_PROBE: Final = "backstay.secret_values.probe"
_EVENTS: Final = frozenset({_PUT, _UNSET, _PROBE})


def _text(value: object) -> str | None:
    if isinstance(value, bytes):
        return os.fsdecode(value)  # as ``os.environ`` decodes its keys and values
    return value if isinstance(value, str) else None


class SecretValues:
    """The values, longest first (a secret containing another is removed whole)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._registered: set[str] = set()
        # Values put under secret-looking names that ``os.environ`` was not yet seen holding.
        self._pending: dict[str, str] = {}
        self._stale = True
        self._watching: bool | None = None  # None: the hook not tried yet
        self._probed = False
        # (the environ object, its raw mapping, a snapshot of it when comparing, the answer):
        # replaced whole, so a reader without the lock always sees a matching set.
        self._state: tuple[object, object, dict[object, object] | None, tuple[str, ...]] | None
        self._state = None

    def register(self, value: str) -> None:
        if value in self._registered:
            return  # known already (an API adapter registers its key every call): still fresh
        with self._lock:
            self._registered.add(value)
            self._stale = True

    def current(self) -> tuple[str, ...]:
        state = self._state
        if state is not None and not self._stale:
            env = os.environ
            try:
                raw = env._data  # type: ignore[attr-defined]
            except AttributeError:  # not an ``os._Environ``: its state is None
                return self._refresh()
            if env is state[0] and raw is state[1] and (state[2] is None or raw == state[2]):
                return state[3]  # the common case: nothing changed, no lock taken
        return self._refresh()

    def audit(self, event: str, args: tuple[Any, ...]) -> None:
        """An audited environment change (called by the hook; never raises)."""
        try:
            if event == _PROBE:
                self._probed = True
                return
            name = _text(args[0])
            if name is None or not SECRET_ENV_NAME.search(name):
                return  # a variable whose value is never redacted: nothing changes
            with self._lock:
                value = _text(args[1]) if event == _PUT and len(args) > 1 else None
                if value is None:
                    self._pending.pop(name, None)
                else:
                    self._pending[name] = value
                self._stale = True
        except Exception:  # noqa: BLE001, S110 - a hook must never break the audited operation
            pass

    def _watch(self) -> bool:
        if self is not SECRETS:
            return False  # the hook tells the process's one instance
        try:
            sys.addaudithook(_on_audit)
            sys.audit(_PROBE)  # a hook another hook refused is dropped without an error
        except Exception:  # noqa: BLE001 - any refusal: compare instead
            return False
        return self._probed

    def _refresh(self) -> tuple[str, ...]:
        with self._lock:
            if self._watching is None:
                self._watching = self._watch()
            self._stale = False  # first: a change from now on marks the new answer stale
            env = os.environ
            raw = getattr(env, "_data", None)
            named = {name: value for name, value in env.items() if SECRET_ENV_NAME.search(name)}
            for name, value in list(self._pending.items()):
                if named.get(name) == value:
                    del self._pending[name]  # the environment holds it now
            values = {v for v in named.values() if len(v) >= MIN_ENV_SECRET_LEN}
            values.update(v for v in self._pending.values() if len(v) >= MIN_ENV_SECRET_LEN)
            found = tuple(sorted(values | self._registered, key=len, reverse=True))
            old = self._state
            if old is not None and old[3] == found:
                found = old[3]  # the same answer keeps its identity (results kept by it stay)
            if type(raw) is not dict:
                self._state = None  # nothing to check a change against: work it out each time
            else:
                watched = self._watching and type(env) is os._Environ
                self._state = (env, raw, None if watched else dict(raw), found)
            return found


SECRETS: Final = SecretValues()


def _on_audit(event: str, args: tuple[Any, ...]) -> None:
    if event in _EVENTS:
        SECRETS.audit(event, args)
