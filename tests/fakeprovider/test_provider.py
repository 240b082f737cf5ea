"""``FakeProvider``: started and stopped synchronously or in a running loop; held
requests released on stop; the request log and stats, without secrets."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import socket
import threading
from importlib.machinery import ModuleSpec
from pathlib import Path

import httpx
import pytest
from tests.fakeprovider import sdk
from tests.fakeprovider.sdk import CANARY_KEY, PROMPT, SDK_ERRORS

from backstay.errors import ConfigError
from backstay.fakeprovider import FakeProvider, Fault, FaultKind, Scenario


def test_the_url_is_loopback_with_the_chosen_port() -> None:
    with FakeProvider() as fake:
        assert fake.url == f"http://127.0.0.1:{fake.port}"
        assert fake.port > 0
        assert fake.running
    assert not fake.running


def test_the_url_of_a_stopped_provider_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="not running"):
        _ = FakeProvider().url


def test_a_port_in_use_is_a_config_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match=f"cannot listen on 127.0.0.1:{port}"):
            FakeProvider(port=port).start()


@pytest.mark.parametrize(
    ("kwargs", "where"),
    [({"port": 70000}, "port"), ({"port": -1}, "port"), ({"host": ""}, "host")],
)
def test_bad_arguments_name_what_is_wrong(kwargs: dict[str, object], where: str) -> None:
    with pytest.raises(ConfigError) as caught:
        FakeProvider(**kwargs)  # type: ignore[arg-type]
    assert caught.value.where == where


def test_it_runs_inside_a_running_event_loop() -> None:
    async def main() -> tuple[int, int]:
        async with FakeProvider() as fake, httpx.AsyncClient(base_url=fake.url) as client:
            response = await client.post(
                "/v1/chat/completions",
                json={"model": "gpt-5", "messages": [{"role": "user", "content": "hi"}]},
            )
            return response.status_code, fake.stats().requests

    assert asyncio.run(main()) == (200, 1)


def test_stopping_releases_a_hanging_request_and_its_thread() -> None:
    scenario = Scenario(faults=(Fault(kind=FaultKind.HANG),))
    fake = FakeProvider(scenario).start()
    errors: list[BaseException] = []

    def ask() -> None:
        try:
            sdk.call("anthropic", fake.url, stream=False, timeout_s=30)
        except Exception as exc:
            errors.append(exc)

    caller = threading.Thread(target=ask)
    caller.start()
    for _ in range(200):  # bounded: until the request arrived (at most 10 s)
        if fake.stats().requests:
            break
        threading.Event().wait(0.05)
    fake.stop()
    caller.join(10)
    assert not caller.is_alive()
    assert len(errors) == 1
    assert fake.stats().by_status == {0: 1}


def test_the_request_log_has_one_line_per_request_and_no_secret(tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    fault = Fault(kind=FaultKind.UNAUTHORIZED, requests=(2,))
    with FakeProvider(Scenario(faults=(fault,)), log_path=log) as fake:
        sdk.call("anthropic", fake.url, stream=True)
        with pytest.raises(SDK_ERRORS, match="invalid x-api-key"):
            sdk.call("anthropic", fake.url, stream=False)
        with sdk.openai_client(fake.url) as client:
            client.chat.completions.create(
                model=sdk.OPENAI_MODEL,
                messages=[{"role": "user", "content": PROMPT}],
                extra_headers={"Idempotency-Key": "k-1"},
            )
        stats_text = httpx.get(fake.url + "/_backstay/stats").text
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [(e["api"], e["status"], e["fault"], e["stream"]) for e in lines] == [
        ("anthropic", 200, None, True),
        ("anthropic", 401, "unauthorized", False),
        ("openai-chat", 200, None, False),
    ]
    assert set(lines[0]) == {
        "time", "path", "api", "model", "stream", "idempotency_key", "fault", "status",
        "input_tokens", "output_tokens", "replay", "traceparent", "turn",
    }  # fmt: skip
    assert lines[2]["idempotency_key"] == "k-1"
    assert lines[0]["input_tokens"] > 0
    assert CANARY_KEY not in log.read_text(encoding="utf-8")
    assert CANARY_KEY not in stats_text
    assert json.loads(stats_text)["by_status"] == {"200": 2, "401": 1}


def test_stats_survive_the_stop() -> None:
    with FakeProvider() as fake:
        sdk.call("gemini", fake.url, stream=False)
    assert fake.stats().by_api == {"gemini": 1}


@pytest.mark.parametrize(
    ("path", "body", "needle"),
    [
        ("/v1/messages", b"not json", "invalid_request_error"),
        ("/v1/messages", b'{"model": "m"}', "messages"),
        ("/v1/chat/completions", b"[]", "JSON object"),
        ("/v1beta/models/gemini-2.5-flash:generateContent", b"{}", "INVALID_ARGUMENT"),
    ],
)
def test_malformed_requests_get_the_providers_400(path: str, body: bytes, needle: str) -> None:
    with FakeProvider() as fake:
        response = httpx.post(fake.url + path, content=body, timeout=10)
    assert response.status_code == 400
    assert needle in response.text


def test_without_aiohttp_starting_names_the_extra_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = importlib.util.find_spec

    def hide_aiohttp(name: str, package: str | None = None) -> ModuleSpec | None:
        return None if name == "aiohttp" else real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", hide_aiohttp)
    with pytest.raises(ConfigError, match=r"needs aiohttp.*pip install 'backstay\[fake\]'"):
        FakeProvider().start()


def test_the_request_log_keeps_the_callers_traceparent(tmp_path: Path) -> None:
    parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    log = tmp_path / "requests.jsonl"
    with FakeProvider(log_path=log) as fake, sdk.openai_client(fake.url) as client:
        client.chat.completions.create(
            model=sdk.OPENAI_MODEL,
            messages=[{"role": "user", "content": PROMPT}],
            extra_headers={"traceparent": parent},
        )
        client.chat.completions.create(
            model=sdk.OPENAI_MODEL, messages=[{"role": "user", "content": PROMPT}]
        )
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [line["traceparent"] for line in lines] == [parent, None]
