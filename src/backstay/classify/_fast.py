"""A fast path in front of ``classify(exc)``: transport exceptions decided by their type.

The failures a retry loop meets most — ``ConnectionError``, ``TimeoutError`` and the rest of
the ``OSError`` family, httpx / httpcore / requests / urllib3 / aiohttp transport errors,
the SDKs' ``APIConnectionError`` / ``APITimeoutError`` — come back again and again with the
same type, text and cause chain. The full classifier (``exceptions.classify_exception``)
decides them from exactly that: the classes' names along the MRO, ``errno``, the texts and
the links of the chain. So the result of the full classifier is remembered under a
*fingerprint* of those inputs, and an exception with the same fingerprint gets the same
``Failure`` back without running the rules again.

What keeps it exact:

* Only a top exception whose class the rules map to a transport code (``network`` or
  ``timeout`` kind), or a bare ``OSError`` the rules decide by its ``errno``, is considered;
  which classes those are is asked of the rules themselves, once per class, so a class the
  rules learn about is picked up with no change here.
  Google's genai SDK raises the httpx / aiohttp exceptions themselves on a transport failure.
* An exception (or any link of its chain) that carries a response, a status, a body,
  headers or an attached ``Failure`` is never fingerprinted: it always goes through the full
  classification.
* The fingerprint holds, for every exception of the chain the classifier walks (in its
  order): the class, the text, ``errno``, the plain data attributes (strings, numbers) and
  which links it has. Other objects an exception holds (the request, a connection pool)
  are not read by the rules for a transport failure.
* A ``Failure`` is redacted when it is built, with the secrets known then: the remembered
  one is returned only while the set of secrets is still the same object.
* Results that depend on the clock (a reset time, a retry-after) are not remembered.

The commonest exception of all, a lone one — one text argument, no cause, context or
attributes, of a class that prints its argument as it is (``ConnectionError("[Errno 104]
Connection reset by peer")``) — is answered from a table per class keyed by that text, with
no key to build: ``recall_lone``.

A rule that starts reading something else of a transport exception must add it to the
fingerprint here; ``tests/classify/test_fast.py`` compares both paths on every shape the
classify tests build.
"""

from __future__ import annotations

import os
from collections.abc import Hashable
from typing import Any, Final, NamedTuple

from backstay._secret_values import SECRETS
from backstay.classify._bounds import MAX_SCANNED_CHARS
from backstay.classify._guard import raised_by_object
from backstay.classify.exceptions import _RESPONSE, _TRANSPORT_KINDS, _mro_code, _provider_of
from backstay.failure import Failure
from backstay.redact import _secrets
from backstay.taxonomy import CODES

__all__ = ["current_secrets", "fingerprint", "lookup", "recall", "recall_lone", "remember"]

# The attributes the classifier follows from one exception to the next (as ``_chain``).
_LINKS: Final = ("reason", "os_error", "last_attempt")
# Attributes that carry what a response said: an exception holding any is never fast.
_PAYLOAD: Final = frozenset(
    {
        "body",
        "code",
        "details",
        "failure",
        "headers",
        "http_status",
        "response",
        "response_json",
        "status",
        "status_code",
    }
)
_PLAIN: Final = (str, int, float, bytes)
_MAX_CHAIN: Final = 12  # as ``exceptions._MAX_CHAIN``
_MAX_TYPES: Final = 4096
_MAX_REMEMBERED: Final = 2048


# Exceptions whose ``str()`` is their one text argument as it is.
_PLAIN_STR: Final = (BaseException.__str__, OSError.__str__)


class _Profile(NamedTuple):
    """What one exception class allows, worked out once per class."""

    top: bool  # the rules map it to a transport code: it may head a fingerprint
    links: tuple[str, ...]  # link attributes the class itself defines (properties)
    payload: tuple[str, ...]  # response attributes the class defines (``code = None``)
    errno: bool  # it has an ``errno`` (the OSError family, or a property)
    provider: str | None
    bare: bool  # it may head a fingerprint and defines no links nor response attributes
    plain_str: bool  # its ``str()`` of one text argument is that text


_types: dict[type, _Profile] = {}
# The classes whose profile is ``bare``: (has an ``errno``, the provider it names).
_bare: dict[type, tuple[bool, str | None]] = {}
_remembered: dict[Hashable, tuple[tuple[str, ...], Failure]] = {}
# Lone exceptions of a ``bare``, ``plain_str`` class, answered with no key to build:
# per class, (the secrets the answers were redacted under, whether the class has an
# ``errno``, the answers by text). Each answer is also in ``_remembered``, and both are
# cleared together, so this table is bounded by ``_MAX_REMEMBERED`` as well.
_lone: dict[type, tuple[tuple[str, ...], bool, dict[str, Failure]]] = {}
_NOTHING: Final[tuple[None, None]] = (None, None)


def _profile(exc: BaseException) -> _Profile:
    cls = type(exc)
    found = _types.get(cls)
    if found is not None:
        return found
    code = _mro_code(exc)
    if code is None:  # a bare OSError: decided by its errno, chain and text
        top = issubclass(cls, OSError)
    else:
        top = code != _RESPONSE and CODES[code].kind in _TRANSPORT_KINDS
    # A class answering unknown attributes (``__getattr__``) may answer any link.
    links = (
        _LINKS
        if hasattr(cls, "__getattr__")
        else tuple(name for name in _LINKS if hasattr(cls, name))
    )
    payload = tuple(sorted(name for name in _PAYLOAD if hasattr(cls, name)))
    found = _Profile(
        top=top,
        links=links,
        payload=payload,
        errno=hasattr(cls, "errno"),
        provider=_provider_of(exc),
        bare=top and not links and not payload,
        plain_str=cls.__str__ in _PLAIN_STR,
    )
    if len(_types) >= _MAX_TYPES:
        _types.clear()
        _bare.clear()
    _types[cls] = found
    if found.bare:
        _bare[cls] = (found.errno, found.provider)
    return found


def _links(exc: BaseException, profile: _Profile, attrs: dict[str, Any]) -> list[BaseException]:
    """The exceptions the classifier goes to from ``exc``, in its order."""
    out: list[BaseException] = []
    cause, context = exc.__cause__, exc.__context__
    if cause is not None:
        out.append(cause)
    if context is not None:
        out.append(context)
    if profile.links or attrs:
        for name in _LINKS:
            if name in profile.links or name in attrs:
                value = getattr(exc, name, None)
                if isinstance(value, BaseException):
                    out.append(value)
    for arg in exc.args[:3]:
        if isinstance(arg, BaseException):
            out.append(arg)  # noqa: PERF401 - a generator costs more on this path
    return out


def _carries_response(exc: BaseException, profile: _Profile) -> bool:
    """Whether a response attribute the class defines has a value on ``exc``."""
    for name in profile.payload:
        try:
            if getattr(exc, name, None) is not None:
                return True
        except Exception:  # a property that cannot answer: let the full path decide
            return True
        except BaseException as err:  # the object's own KeyboardInterrupt …: likewise
            if raised_by_object(err):
                return True
            raise
    return False


def _data(attrs: dict[str, Any]) -> tuple[object, ...] | None:
    """The plain data attributes of an exception; ``None`` when one carries a response."""
    out: list[object] = []
    for key, value in attrs.items():
        if value is None or key in _LINKS:
            continue
        if key in _PAYLOAD:
            return None
        if isinstance(value, _PLAIN):
            out += (key, value)
    return tuple(out)


def _chained(exc: BaseException, profile: _Profile, provider: str | None) -> Hashable | None:
    """The fingerprint of an exception and its chain, walked as the classifier walks it:
    breadth first, each exception once, at most ``_MAX_CHAIN``. Exceptions are numbered in
    the order they are first met (the order the walk visits them), and each one's links
    are kept as those numbers, so the same shape gives the same fingerprint."""
    number: dict[int, int] = {id(exc): 0}
    met: list[BaseException] = [exc]
    parts: list[object] = [provider]
    for current in met:
        if len(parts) > _MAX_CHAIN:
            break
        prof = profile if current is exc else _types.get(type(current)) or _profile(current)
        if prof.payload and _carries_response(current, prof):
            return None
        attrs = current.__dict__
        data = _data(attrs) if attrs else ()
        if data is None:
            return None
        try:
            text = str(current)
            links = _links(current, prof, attrs)
            errno = getattr(current, "errno", None) if prof.errno else None
        except Exception:  # a broken __str__ or property: the full path copes
            return None
        except BaseException as err:  # the object's own KeyboardInterrupt …: likewise
            if raised_by_object(err):
                return None
            raise
        positions = []
        for link in links:
            found = number.get(id(link))
            if found is None:
                found = number[id(link)] = len(met)
                met.append(link)
            positions.append(found)
        parts.append((type(current), text, errno, data, tuple(positions)))
    return tuple(parts)


def fingerprint(exc: BaseException, provider: str | None) -> Hashable | None:
    """Everything the classifier reads of ``exc``, as a key; ``None`` when ``exc`` is not a
    transport exception or carries a response, a status or an attached failure."""
    cls = type(exc)
    bare = _bare.get(cls)
    if bare is None:
        profile = _types.get(cls) or _profile(exc)
        if not profile.bare:
            return _chained(exc, profile, provider or profile.provider) if profile.top else None
        bare = (profile.errno, profile.provider)
    # A lone exception with nothing attached, the common case, has a short key:
    # ``ConnectionError("[Errno 104] Connection reset by peer")``.
    try:
        if exc.__cause__ is None and exc.__context__ is None and not exc.__dict__:
            args = exc.args
            if (len(args) == 1 and type(args[0]) is str) or not any(
                isinstance(arg, BaseException) for arg in args
            ):
                errno = exc.errno if bare[0] else None  # type: ignore[attr-defined]
                return (cls, str(exc), errno, provider or bare[1])
    except Exception:  # a broken __str__ or property: the full path copes
        return None
    except BaseException as err:  # the object's own KeyboardInterrupt …: likewise
        if raised_by_object(err):
            return None
        raise
    profile = _types.get(cls) or _profile(exc)
    return _chained(exc, profile, provider or profile.provider)


def recall_lone(exc: BaseException, provider: str | None) -> Failure | None:
    """The remembered ``Failure`` of a lone transport exception (one text argument, no
    cause, context or attributes, ``errno`` unset, a class that prints its argument as it
    is), the commonest case, with no key to build; ``None`` for any other exception, for a
    provider other than the class's own, or when nothing is remembered (``lookup`` then
    decides). It answers what ``lookup`` would for the same exception."""
    entry = _lone.get(type(exc))
    if entry is None:
        return None
    try:  # the drivers call this first, outside ``classify``'s guard: it must not raise
        if exc.__cause__ is not None or exc.__context__ is not None:
            return None
        args = exc.args
        if len(args) != 1 or exc.__dict__:
            return None
        text = args[0]
        if type(text) is not str or (entry[1] and exc.errno is not None):  # type: ignore[attr-defined]
            return None
    except Exception:  # a property of the exception's class that cannot answer
        return None
    except BaseException as err:  # the object's own KeyboardInterrupt …: likewise
        if raised_by_object(err):
            return None
        raise
    found = entry[2].get(text)
    if found is None or (provider is not None and provider != found.provider):
        return None
    # Whether the secrets are still those the answer was redacted under: the common case
    # of ``SECRETS.current()`` (nothing changed, the environment watched), inline; any
    # other case asks it.
    state = SECRETS._state
    if state is not None and state[3] is entry[0] and state[2] is None and not SECRETS._stale:
        env = os.environ
        if env is state[0] and env._data is state[1]:  # type: ignore[attr-defined]
            return found
    return found if entry[0] is _secrets.current() else None


def lookup(exc: BaseException, provider: str | None) -> tuple[Failure | None, Hashable | None]:
    """The remembered ``Failure`` of ``exc`` (and its key), or ``None`` and the key to
    ``remember`` the full classification under (``None`` when it must not be)."""
    key = fingerprint(exc, provider)
    if key is None:
        return _NOTHING
    try:
        found = _remembered.get(key)
    except TypeError:  # an unhashable part (``OSError([1], "…")`` has a list for errno)
        return _NOTHING
    if found is not None and found[0] is _secrets.current():
        _keep_lone(key, found[0], found[1])  # the text table may have been started afresh
        return found[1], key
    return None, key


def recall(key: Hashable) -> Failure | None:
    """The ``Failure`` remembered for ``key``, if the known secrets have not changed since."""
    found = _remembered.get(key)
    if found is not None and found[0] is _secrets.current():
        return found[1]
    return None


def remember(key: Hashable, failure: Failure, secrets: tuple[str, ...]) -> None:
    """Keep ``failure`` for ``key``; ``secrets`` are those known before it was built."""
    if failure.resets_at is not None or failure.retry_after_s is not None:
        return  # depends on the clock
    if _holds_long_text(key):
        return  # a key would keep a text the rules read only part of (a proxy's HTML page)
    if len(_remembered) >= _MAX_REMEMBERED:
        _remembered.clear()
        _lone.clear()
    _remembered[key] = (secrets, failure)
    _keep_lone(key, secrets, failure)


def _holds_long_text(value: object, depth: int = 0) -> bool:
    """Whether a key holds a text longer than the rules ever read (``_bounds``)."""
    if type(value) is str:
        return len(value) > MAX_SCANNED_CHARS
    if type(value) is tuple and depth < 3:
        return any(_holds_long_text(item, depth + 1) for item in value)
    return False


def _keep_lone(key: Hashable, secrets: tuple[str, ...], failure: Failure) -> None:
    """Keep ``failure`` by text for ``recall_lone`` too when ``key`` is a lone key,
    ``(class, text, errno, provider)`` as ``fingerprint`` builds it (a chained key starts
    with the provider), of a class whose lone exceptions ``recall_lone`` answers."""
    if not (type(key) is tuple and len(key) == 4 and isinstance(key[0], type)):
        return
    cls, text, errno, provider = key
    profile = _types.get(cls)
    if (
        profile is not None
        and profile.bare
        and profile.plain_str
        and errno is None
        and provider == profile.provider
        and type(text) is str
    ):
        entry = _lone.get(cls)
        if entry is None or entry[0] is not secrets:
            entry = _lone[cls] = (secrets, profile.errno, {})
        entry[2][text] = failure


def current_secrets() -> tuple[str, ...]:
    """The secrets redaction knows now (an object that changes whenever they do)."""
    return _secrets.current()
