"""The gateway's upstream session (``backstay.gateway.server``): one session serves every
client, so what an upstream sets for one client (a cookie) never goes out with another's
request."""

from __future__ import annotations

import asyncio

import httpx
from aiohttp import web

from backstay.gateway import Gateway, GatewaySettings, Upstreams

ANSWER = b'{"id": "chatcmpl-1", "object": "chat.completion", "choices": []}'


def test_an_upstreams_cookie_is_not_sent_with_the_next_request() -> None:
    seen = asyncio.run(_two_clients())
    assert len(seen) == 2
    assert seen == [None, None]


async def _two_clients() -> list[str | None]:
    """Two clients' requests through one gateway to an upstream that sets a cookie: the
    ``Cookie`` header of each request the upstream got."""
    seen: list[str | None] = []

    async def chat(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Cookie"))
        answer = web.Response(body=ANSWER, content_type="application/json")
        answer.set_cookie("session", "client-a-only")
        return answer

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    # A host name, not an address: aiohttp keeps no cookie from an address anyway.
    upstream = f"http://localhost:{runner.addresses[0][1]}"
    try:
        settings = GatewaySettings(port=0, upstreams=Upstreams.all(upstream))
        async with Gateway(settings) as served:
            for key in ("sk-client-a", "sk-client-b"):  # each a client of its own
                async with httpx.AsyncClient(timeout=30.0) as client:
                    answer = await client.post(
                        served.url + "/v1/chat/completions",
                        json={"model": "gpt-5", "messages": []},
                        headers={"authorization": f"Bearer {key}"},
                    )
                assert answer.status_code == 200
                assert "client-a-only" in answer.headers["set-cookie"]  # the client's to keep
    finally:
        await runner.cleanup()
    return seen
