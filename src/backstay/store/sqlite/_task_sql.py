"""The SQL of ``SQLiteTaskStore``, one statement per change it makes (tables: ``_task_rows``)."""

from __future__ import annotations

from typing import Final

from backstay.store._task_rows import ATTEMPT_COLUMNS, ESCALATION_COLUMNS, TASK_COLUMNS

SELECT_TASK: Final = f"SELECT {TASK_COLUMNS} FROM backstay_tasks"  # noqa: S608 - constant names
SELECT_ATTEMPT: Final = f"SELECT {ATTEMPT_COLUMNS} FROM backstay_attempts"  # noqa: S608
SELECT_ESCALATION: Final = f"SELECT {ESCALATION_COLUMNS} FROM backstay_escalations"  # noqa: S608
SELECT_ONE_TASK: Final = f"{SELECT_TASK} WHERE operation_id = ?"
SELECT_STATE: Final = "SELECT state, attempts_used FROM backstay_tasks WHERE operation_id = ?"

REGISTER: Final = (
    "INSERT INTO backstay_tasks (operation_id, workflow_id, task_id, task_run_id, spec_json, "
    "state, reason, attempts_used, budget_base, created_at, updated_at) "
    "VALUES (?, ?, ?, ?, ?, 'pending', 'registered', 0, 0, ?, ?) "
    "ON CONFLICT (operation_id) DO UPDATE SET spec_json = excluded.spec_json"
)
CHANGE_STATE: Final = (
    "UPDATE backstay_tasks SET state = ?, reason = ?, next_run_at = ?, updated_at = ?, "
    "result_json = coalesce(?, result_json), "
    "budget_base = CASE WHEN ? THEN attempts_used ELSE budget_base END WHERE operation_id = ?"
)
# ``CHANGE_STATE`` to running for an attempt begun (no next run, result or new budget),
# with the attempt counted, in one statement.
BEGIN_TASK: Final = (
    "UPDATE backstay_tasks SET state = 'running', reason = ?, next_run_at = NULL, "
    "updated_at = ?, attempts_used = ? WHERE operation_id = ?"
)
BEGIN_ATTEMPT: Final = (
    "INSERT INTO backstay_attempts (operation_id, number, attempt_id, output_dir, started_at, "
    "outcome, candidate) VALUES (?, ?, ?, ?, ?, 'running', ?)"
)
END_ATTEMPT: Final = (
    "UPDATE backstay_attempts SET ended_at = ?, outcome = ?, failure_json = ?, delay_s = ?, "
    "exit_code = ?, usage_json = ? WHERE operation_id = ? AND number = ? AND outcome = 'running'"
)
INTERRUPT_ATTEMPTS: Final = (
    "UPDATE backstay_attempts SET outcome = 'interrupted', ended_at = ? "
    "WHERE operation_id = ? AND outcome = 'running'"
)
ADD_ESCALATION: Final = (
    "INSERT INTO backstay_escalations (operation_id, task_id, failure_json, context_json, "
    "created_at, status) VALUES (?, ?, ?, ?, ?, 'open')"
)
RESOLVE_ESCALATION: Final = (
    "UPDATE backstay_escalations SET status = 'resolved', action = ?, note = ?, "
    "resolved_at = ?, resolved_by = ? WHERE escalation_id = ?"
)
RESOLVE_OPEN_ESCALATIONS: Final = (
    "UPDATE backstay_escalations SET status = 'resolved', action = ?, note = ?, "
    "resolved_at = ?, resolved_by = ? WHERE operation_id = ? AND status = 'open'"
)
UPDATE_SPEC: Final = "UPDATE backstay_tasks SET spec_json = ? WHERE operation_id = ?"
