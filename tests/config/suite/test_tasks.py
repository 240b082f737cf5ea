"""Tasks in a suite file: their own keys, and the defaults they start from."""

from __future__ import annotations

from pathlib import Path

from tests.config.suite_helpers import load, one_task, problems

KNOWN_TASK_KEYS = (
    "id, description, prompt, prompt_file, workspace, limits, adapter, model, timeout_s, "
    "stall_timeout_s, runs, tenant, context_window, policy, tiers, budget, fallbacks"
)


def test_a_task_takes_what_it_does_not_say_from_defaults(tmp_path: Path) -> None:
    text = one_task(defaults="{adapter: mock, model: m, timeout_s: 30, runs: 2}")
    (task,) = load(tmp_path, text).tasks
    assert (task.adapter, task.model, task.timeout_s, task.runs) == ("mock", "m", 30.0, 2)


def test_a_task_setting_wins_over_the_default(tmp_path: Path) -> None:
    text = one_task("prompt: hi\nmodel: other\nruns: 5", defaults="{adapter: mock, model: m}")
    (task,) = load(tmp_path, text).tasks
    assert (task.model, task.runs) == ("other", 5)


def test_built_in_defaults_apply_without_a_defaults_section(tmp_path: Path) -> None:
    text = one_task("prompt: hi\nadapter: mock\nmodel: m", defaults="{}")
    (task,) = load(tmp_path, text).tasks
    assert (task.timeout_s, task.stall_timeout_s, task.runs, task.policy.name) == (
        600.0,
        None,
        1,
        "agent_dispatch",
    )


def test_times_are_float_seconds(tmp_path: Path) -> None:
    (task,) = load(tmp_path, one_task("prompt: hi\ntimeout_s: 5\nstall_timeout_s: 2")).tasks
    assert (type(task.timeout_s), type(task.stall_timeout_s)) == (float, float)


def test_a_description_is_kept(tmp_path: Path) -> None:
    (task,) = load(tmp_path, one_task("prompt: hi\ndescription: greets")).tasks
    assert task.description == "greets"


def test_an_unknown_task_key_gets_a_suggestion(tmp_path: Path) -> None:
    found = problems(tmp_path, one_task("prompt: hi\nrun: 3"))
    assert found == [
        f"8: tasks[0].run: unknown key (did you mean 'runs'?); known: {KNOWN_TASK_KEYS}"
    ]


def test_the_task_id_is_required(tmp_path: Path) -> None:
    text = one_task().replace("  - id: t\n    prompt: hi", "  - prompt: hi")
    assert problems(tmp_path, text) == [
        "6: tasks[0].id: is required: a name for the task, unique in the suite"
    ]


def test_a_task_id_given_twice_names_the_first(tmp_path: Path) -> None:
    text = one_task() + "  - id: t\n    prompt: again\n"
    assert problems(tmp_path, text) == ["8: tasks[1].id: task 't' is given twice (first on line 6)"]


def test_a_task_id_must_be_usable_in_ids(tmp_path: Path) -> None:
    text = one_task().replace("id: t", "id: a/b")
    (found,) = problems(tmp_path, text)
    assert found.startswith("6: tasks[0].id: must be a letter or digit")


def test_a_prompt_and_a_prompt_file_together_are_a_problem(tmp_path: Path) -> None:
    (tmp_path / "p.md").write_text("hi", encoding="utf-8")
    found = problems(tmp_path, one_task("prompt: hi\nprompt_file: p.md"))
    assert found == ["8: tasks[0].prompt_file: give prompt or prompt_file, not both"]


def test_a_task_without_a_prompt_is_a_problem(tmp_path: Path) -> None:
    found = problems(tmp_path, one_task("runs: 1"))
    assert found == ["6: tasks[0]: give prompt (the text) or prompt_file (a file holding it)"]


def test_an_empty_prompt_is_a_problem(tmp_path: Path) -> None:
    assert problems(tmp_path, one_task("prompt: '  '")) == ["7: tasks[0].prompt: is empty"]


def test_a_prompt_file_is_resolved_against_the_suite_folder(tmp_path: Path) -> None:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "p.md").write_text("hi", encoding="utf-8")
    (task,) = load(tmp_path, one_task("prompt_file: prompts/p.md")).tasks
    assert task.prompt_file == (tmp_path / "prompts" / "p.md").resolve()
    assert task.prompt is None


def test_a_missing_prompt_file_names_the_path_it_looked_for(tmp_path: Path) -> None:
    found = problems(tmp_path, one_task("prompt_file: nope.md"))
    assert found == [f"7: tasks[0].prompt_file: no such file: {(tmp_path / 'nope.md').resolve()}"]


def test_a_prompt_file_that_is_a_folder_is_a_problem(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    found = problems(tmp_path, one_task("prompt_file: d"))
    assert found == [f"7: tasks[0].prompt_file: is not a file: {(tmp_path / 'd').resolve()}"]


def test_without_a_workspace_a_task_starts_empty(tmp_path: Path) -> None:
    (task,) = load(tmp_path, one_task()).tasks
    assert task.workspace is None


def test_a_workspace_is_resolved_against_the_suite_folder(tmp_path: Path) -> None:
    (tmp_path / "repo").mkdir()
    (task,) = load(tmp_path, one_task("prompt: hi\nworkspace: repo")).tasks
    assert task.workspace == (tmp_path / "repo").resolve()


def test_a_missing_workspace_is_a_problem(tmp_path: Path) -> None:
    found = problems(tmp_path, one_task("prompt: hi\nworkspace: repo"))
    assert found == [f"8: tasks[0].workspace: no such folder: {(tmp_path / 'repo').resolve()}"]


def test_a_workspace_that_is_a_file_is_a_problem(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("", encoding="utf-8")
    found = problems(tmp_path, one_task("prompt: hi\nworkspace: f"))
    assert found == [f"8: tasks[0].workspace: is not a folder: {(tmp_path / 'f').resolve()}"]


def test_an_absolute_workspace_is_taken_as_it_is(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    suite_dir = tmp_path / "suites"
    suite_dir.mkdir()
    (task,) = load(suite_dir, one_task(f"prompt: hi\nworkspace: {elsewhere}")).tasks
    assert task.workspace == elsewhere.resolve()


def test_runs_below_one_are_a_problem(tmp_path: Path) -> None:
    assert problems(tmp_path, one_task("prompt: hi\nruns: 0")) == [
        "8: tasks[0].runs: must be >= 1, got 0"
    ]


def test_runs_must_be_a_whole_number(tmp_path: Path) -> None:
    assert problems(tmp_path, one_task("prompt: hi\nruns: 1.5")) == [
        "8: tasks[0].runs: must be a whole number, got 1.5"
    ]


def test_runs_are_capped(tmp_path: Path) -> None:
    assert problems(tmp_path, one_task("prompt: hi\nruns: 1001")) == [
        "8: tasks[0].runs: must be <= 1000, got 1001"
    ]


def test_a_timeout_must_be_positive(tmp_path: Path) -> None:
    assert problems(tmp_path, one_task("prompt: hi\ntimeout_s: 0")) == [
        "8: tasks[0].timeout_s: must be > 0, got 0"
    ]


def test_a_wrong_type_is_named(tmp_path: Path) -> None:
    assert problems(tmp_path, one_task("prompt: [a, b]")) == [
        "7: tasks[0].prompt: must be text, got a list"
    ]


def test_a_task_without_a_model_anywhere_is_a_problem(tmp_path: Path) -> None:
    found = problems(tmp_path, one_task(defaults="{adapter: mock}"))
    assert found == ["6: tasks[0].model: is not set, here or under defaults.model"]


def test_a_wrong_default_is_not_reported_again_for_each_task(tmp_path: Path) -> None:
    found = problems(tmp_path, one_task(defaults="{adapter: mock, model: 'a b'}"))
    assert found == ["2: defaults.model: must be a model name without spaces, got 'a b'"]


def test_a_task_key_under_defaults_says_where_it_belongs(tmp_path: Path) -> None:
    (found,) = problems(tmp_path, one_task(defaults="{adapter: mock, model: m, prompt: hi}"))
    assert found.startswith(
        "2: defaults.prompt: unknown key (a task's own setting: give it in each task); known: "
    )
