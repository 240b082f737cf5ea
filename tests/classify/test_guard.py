"""An object being classified that raises ``KeyboardInterrupt`` or ``SystemExit`` from its own
code (``backstay.classify._guard``): classified as unreadable, while a real ``SIGINT``
delivered during classification still stops the program."""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any, NoReturn

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.classify.test_never_raises import _ATTRIBUTES, _BASES, _CLASS_NAMES, _MODULES

from backstay import Failure, classify
from backstay.classify import _fast
from backstay.classify._guard import raised_by_object


def _hostile_str(raised: type[BaseException], base: type[Exception]) -> BaseException:
    def hostile_str(self: object) -> str:
        raise raised

    exc: BaseException = type("ProxyError", (base,), {"__str__": hostile_str})("boom")
    return exc


def _hostile_property(raised: type[BaseException], base: type[Exception]) -> BaseException:
    def status_code(self: object) -> int:
        raise raised

    exc: BaseException = type("APIStatusError", (base,), {"status_code": property(status_code)})(
        "boom"
    )
    return exc


def _hostile_getattr(raised: type[BaseException], base: type[Exception]) -> BaseException:
    def hostile_getattr(self: object, name: str) -> Any:
        raise raised

    exc: BaseException = type("HTTPStatusError", (base,), {"__getattr__": hostile_getattr})("boom")
    return exc


def _hostile_message(raised: type[BaseException], base: type[Exception]) -> BaseException:
    def message(self: object) -> str:
        raise raised

    attrs = {"message": property(message), "status_code": 429}
    exc: BaseException = type("APIStatusError", (base,), attrs)("boom")
    return exc


_HOSTILE = [_hostile_str, _hostile_property, _hostile_getattr, _hostile_message]


@pytest.mark.parametrize("make", _HOSTILE, ids=lambda make: make.__name__[1:])
@pytest.mark.parametrize("raised", [KeyboardInterrupt, SystemExit])
@pytest.mark.parametrize("base", [Exception, ConnectionError, TimeoutError])
def test_an_object_raising_a_base_exception_while_read_is_classified_as_unreadable(
    make: Callable[[type[BaseException], type[Exception]], BaseException],
    raised: type[BaseException],
    base: type[Exception],
) -> None:
    failure = classify(make(raised, base))
    assert isinstance(failure, Failure)
    assert failure.code == "ERR_UNKNOWN"
    assert failure.details["source"] == "classifier_error"
    assert failure.details["error"] == raised.__name__


def test_an_unreadable_object_is_classified_the_same_the_second_time() -> None:
    exc = _hostile_str(KeyboardInterrupt, ConnectionError)
    assert classify(exc) == classify(exc)


def test_the_drivers_first_look_never_raises_for_an_object_raising_a_base_exception() -> None:
    class Reset(ConnectionError):
        hostile = False

        @property
        def errno(self) -> int | None:  # type: ignore[override]
            if type(self).hostile:
                raise SystemExit(3)
            return None

    text = "[Errno 104] Connection reset by peer"
    assert classify(Reset(text)).code == "ERR_CONNECTION_RESET"
    assert _fast.recall_lone(Reset(text), None) is not None  # remembered by its text
    Reset.hostile = True
    assert _fast.recall_lone(Reset(text), None) is None
    assert classify(Reset(text)).details["error"] == "SystemExit"


def _signal_default() -> bool:
    return signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.skipif(not _signal_default(), reason="SIGINT is not Python's default handler here")
@pytest.mark.parametrize("base", [Exception, ConnectionError])
def test_a_real_sigint_delivered_while_an_object_is_read_still_interrupts(
    base: type[Exception],
) -> None:
    def interrupted_str(self: object) -> str:
        signal.raise_signal(signal.SIGINT)  # Ctrl-C pressed while the object is read
        return "boom"

    exc = type("ProxyError", (base,), {"__str__": interrupted_str})("boom")
    with pytest.raises(KeyboardInterrupt):
        classify(exc)


def test_a_keyboard_interrupt_raised_in_the_readers_own_frame_is_not_the_objects() -> None:
    with pytest.raises(KeyboardInterrupt) as info:
        raise KeyboardInterrupt
    assert not raised_by_object(info.value)


def test_a_keyboard_interrupt_raised_by_a_raise_statement_of_the_object_is_the_objects() -> None:
    class Hostile:
        @property
        def value(self) -> NoReturn:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt) as info:
        _ = Hostile().value
    assert raised_by_object(info.value)


_BASE_EXCEPTIONS = st.sampled_from([KeyboardInterrupt, SystemExit, GeneratorExit])


@st.composite
def _base_exception_raiser(draw: st.DrawFn) -> BaseException:
    """An exception of any name and base whose ``__str__`` or attributes raise a
    ``BaseException`` that is not an ``Exception``, each from a ``raise`` statement."""
    raised = draw(_BASE_EXCEPTIONS)

    def hostile(*_: object) -> NoReturn:
        raise raised

    attrs: dict[str, Any] = {"__module__": draw(_MODULES)}
    if draw(st.booleans()):
        attrs["__str__"] = hostile
    if draw(st.booleans()):
        attrs["__getattr__"] = hostile
    for name in draw(st.lists(_ATTRIBUTES, max_size=4, unique=True)):
        attrs[name] = property(hostile)
    cls = type(draw(_CLASS_NAMES), (draw(_BASES),), attrs)
    exc: BaseException = cls("boom") if "args" not in attrs else cls()
    return exc


@settings(max_examples=200, deadline=None)
@given(exc=_base_exception_raiser(), provider=st.none() | st.sampled_from(["anthropic", "x"]))
def test_classify_never_raises_for_objects_raising_base_exceptions(
    exc: BaseException, provider: str | None
) -> None:
    failure = classify(exc, provider=provider)
    assert isinstance(failure, Failure)
