"""Fallbacks in a suite file: candidates of an adapter each, checked, none twice."""

from __future__ import annotations

from pathlib import Path

from tests.config.suite_helpers import load, one_task, problems

from backstay.fallback import Candidate


def test_a_task_without_fallbacks_has_none(tmp_path: Path) -> None:
    (task,) = load(tmp_path, one_task()).tasks
    assert task.fallbacks == ()


def test_every_fallback_key_reaches_the_candidate(tmp_path: Path) -> None:
    body = """\
        prompt: hi
        context_window: 200000
        fallbacks:
          - adapter: openai-api
            model: gpt-4.1
            api_key_env: SPARE_KEY
            context_window: 1000000
            tools: false
            streaming: false
            base_url: "http://127.0.0.1:9/v1"
        """
    (task,) = load(tmp_path, one_task(body)).tasks
    assert task.context_window == 200_000
    assert task.fallbacks == (
        Candidate(
            adapter="openai-api",
            model="gpt-4.1",
            api_key_env="SPARE_KEY",
            context_window=1_000_000,
            tools=False,
            streaming=False,
            base_url="http://127.0.0.1:9/v1",
        ),
    )


def test_a_task_inherits_the_defaults_fallbacks(tmp_path: Path) -> None:
    text = one_task(defaults="{adapter: mock, model: m, fallbacks: [{adapter: mock, model: m2}]}")
    (task,) = load(tmp_path, text).tasks
    assert task.fallbacks == (Candidate(adapter="mock", model="m2"),)


def test_a_fallback_without_a_model_is_named(tmp_path: Path) -> None:
    found = problems(tmp_path, one_task("prompt: hi\nfallbacks: [{adapter: mock}]"))
    assert found == ["8: tasks[0].fallbacks[0].model: is required"]


def test_an_unknown_fallback_key_is_named(tmp_path: Path) -> None:
    found = problems(
        tmp_path, one_task("prompt: hi\nfallbacks: [{adapter: mock, model: m2, key: x}]")
    )
    assert len(found) == 1
    assert "fallbacks[0].key: unknown key" in found[0]


def test_a_fallback_given_twice_is_named(tmp_path: Path) -> None:
    body = "prompt: hi\nfallbacks: [{adapter: mock, model: m2}, {adapter: mock, model: m2}]"
    found = problems(tmp_path, one_task(body))
    assert found == ["8: tasks[0].fallbacks[1]: mock/m2 is given twice in this list"]
