"""Slash commands, action ids and callback ids: every name Slack sends back to us."""

from __future__ import annotations

SCHEMA_COMMAND = "/schema"
CALENDAR_COMMAND = "/calendar"
SLASH_COMMANDS = (SCHEMA_COMMAND, CALENDAR_COMMAND)  # the Slack app manifest declares exactly these

APPROVE = "proposal_approve"
REJECT = "proposal_reject"
REQUEST_CHANGES = "proposal_request_changes"
WITHDRAW = "proposal_withdraw"
REVISE = "proposal_revise"
RESCHEDULE = "proposal_reschedule"
CLAIM_JOB = "lineage_claim_job"

PROPOSE_VIEW = "proposal_propose"
REASON_VIEW = "proposal_reason"
PROPOSE_RESULT_VIEW = "proposal_result"

SUBJECT_BLOCK, SUBJECT_ACTION = "subject", "subject"
SCHEMA_BLOCK, SCHEMA_ACTION = "schema", "schema"
FILE_BLOCK, FILE_ACTION = "schema_file", "schema_file"
WINDOW_BLOCK, WINDOW_ACTION = "window", "window"
DURATION_BLOCK, DURATION_ACTION = "duration", "duration"
NOTES_BLOCK, NOTES_ACTION = "notes", "notes"
REASON_BLOCK, REASON_ACTION = "reason", "reason"

CALENDAR_ADD_VIEW = "calendar_add"
CALENDAR_RESULT_VIEW = "calendar_result"
KIND_BLOCK, KIND_ACTION = "kind", "kind"
TITLE_BLOCK, TITLE_ACTION = "title", "title"
START_BLOCK, START_ACTION = "start", "start"
END_BLOCK, END_ACTION = "end", "end"
OWNER_BLOCK, OWNER_ACTION = "owner", "owner"
SUBJECTS_BLOCK, SUBJECTS_ACTION = "subjects", "subjects"
JOBS_BLOCK, JOBS_ACTION = "jobs", "jobs"
DATASETS_BLOCK, DATASETS_ACTION = "datasets", "datasets"
