"""The two clients of ``bench/fallback.py``, configured alike: backstay's ``FallbackChain``
and litellm's ``Router``. Each ``prepare_*`` imports its library (before the provider
starts) and returns how to build the client once the provider's URL is known."""

from __future__ import annotations

import os
from typing import Any

from fallback_batch import (
    API_KEY,
    FAILURE_THRESHOLD,
    FALLBACK,
    INITIAL_DELAY_S,
    MAX_DELAY_S,
    MAX_TOKENS,
    PRIMARY,
    PROMPT,
    REQUEST_TIMEOUT_S,
    RETRIES,
    Client,
    Prepare,
    Scenario,
)

MESSAGES = [{"role": "user", "content": PROMPT}]


def prepare_backstay() -> Prepare:
    """A ``FallbackChain`` of the primary and the fallback, each candidate with its own
    breaker; the official SDK clients with their own retries off (the chain retries)."""
    import anthropic  # noqa: PLC0415 - imported in the batch's process only
    import openai  # noqa: PLC0415

    from backstay import BreakerSettings, RetryPolicy  # noqa: PLC0415
    from backstay.fallback import Candidate, FallbackChain, FallbackRules  # noqa: PLC0415

    def build(url: str, scenario: Scenario) -> Client:
        claude = anthropic.AsyncAnthropic(
            base_url=url, api_key=API_KEY, max_retries=0, timeout=REQUEST_TIMEOUT_S
        )
        gpt = openai.AsyncOpenAI(
            base_url=url + "/v1", api_key=API_KEY, max_retries=0, timeout=REQUEST_TIMEOUT_S
        )
        chain = FallbackChain(
            [
                Candidate(provider=PRIMARY[0], model=PRIMARY[1]),
                Candidate(provider=FALLBACK[0], model=FALLBACK[1]),
            ],
            rules=FallbackRules(),
            policy=RetryPolicy(
                name="bench",
                max_attempts=RETRIES + 1,
                initial_delay_s=INITIAL_DELAY_S,
                max_delay_s=MAX_DELAY_S,
            ),
            breaker=BreakerSettings(
                failure_threshold=FAILURE_THRESHOLD, open_duration_s=scenario.cooldown_s
            ),
        )

        async def attempt(candidate: Any) -> str:
            if candidate.provider == PRIMARY[0]:
                await claude.messages.create(
                    model=candidate.model, max_tokens=MAX_TOKENS, messages=MESSAGES
                )
            else:
                await gpt.chat.completions.create(
                    model=candidate.model, max_completion_tokens=MAX_TOKENS, messages=MESSAGES
                )
            return str(candidate.provider)

        async def call() -> str:
            answer = await chain.acall(attempt)
            return str(answer.value)

        async def close() -> None:
            await claude.close()
            await gpt.close()

        return call, close

    return build


def prepare_litellm() -> Prepare:
    """``litellm.Router`` with the same two deployments and fallback, offline: the local
    cost map, no telemetry, no callbacks."""
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    import litellm  # noqa: PLC0415 - imported in the batch's process only

    litellm.telemetry = False
    litellm.suppress_debug_info = True
    litellm.callbacks = []
    litellm.success_callback = []
    litellm.failure_callback = []

    def build(url: str, scenario: Scenario) -> Client:
        deployments = [
            {
                "model_name": "primary",
                "litellm_params": {
                    "model": f"{PRIMARY[0]}/{PRIMARY[1]}",
                    "api_base": url,
                    "api_key": API_KEY,
                },
            },
            {
                "model_name": "fallback",
                "litellm_params": {
                    "model": f"{FALLBACK[0]}/{FALLBACK[1]}",
                    "api_base": url + "/v1",
                    "api_key": API_KEY,
                },
            },
        ]
        router = litellm.Router(
            model_list=deployments,
            fallbacks=[{"primary": ["fallback"]}],
            num_retries=RETRIES,
            allowed_fails=FAILURE_THRESHOLD - 1,
            cooldown_time=scenario.cooldown_s,
            timeout=REQUEST_TIMEOUT_S,
        )

        async def call() -> str:
            response = await router.acompletion(
                model="primary", messages=MESSAGES, max_tokens=MAX_TOKENS
            )
            model = str(response.model or "")
            return PRIMARY[0] if "claude" in model else FALLBACK[0]

        async def close() -> None:
            return None

        return call, close

    return build


PREPARE = {"backstay": prepare_backstay, "litellm": prepare_litellm}
