"""The owners' notices as pure values: the attributes a filter policy matches on, a subject SNS
accepts whatever the job's name, and the reason the job records."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st
from smq_lambda.domain.jobs.states import JobState
from smq_lambda.governance.notices import SUBJECT_MAX, NoticeAction, about_job, about_outside_job

from .builders import job

RUNNING = replace(job(JobState.RUNNING), owner="arn:aws:iam::123456789012:user/alice", team="vision")


@pytest.mark.parametrize("action", list(NoticeAction))
def test_a_notice_about_a_queued_job_carries_its_owner_team_job_and_action(action: NoticeAction) -> None:
    notice = about_job(RUNNING, action, "why it happened")

    assert notice.attributes() == {
        "owner": "arn:aws:iam::123456789012:user/alice",
        "team": "vision",
        "job": "vit",
        "action": str(action),
    }
    assert notice.subject.startswith("smq: job vit ")
    assert "\n\nwhy it happened\n\n" in notice.message
    assert "smq describe vit" in notice.message


def test_an_unknown_attribute_is_left_out_never_sent_empty() -> None:
    no_team = about_job(replace(RUNNING, team=None), NoticeAction.RETRY, "retried")
    outside = about_outside_job("by-hand", NoticeAction.IDLE_STOP, "idle")

    assert set(no_team.attributes()) == {"owner", "job", "action"}
    assert outside.attributes() == {"job": "by-hand", "action": "idle-stop"}
    assert outside.subject == "smq: training job by-hand stopped: its GPUs sat idle"


def test_a_policy_stop_keeps_the_policys_own_subject_and_names_its_creator_when_known() -> None:
    notice = about_outside_job(
        "by-hand", NoticeAction.POLICY_STOP, "the rules", subject_line="smq policy: stopped", started_by="bob"
    )
    assert (notice.subject, notice.message) == ("smq policy: stopped", "the rules")
    assert notice.attributes() == {"owner": "bob", "job": "by-hand", "action": "policy-stop"}


@given(name=st.text(min_size=1, max_size=300), action=st.sampled_from(NoticeAction))
def test_every_subject_is_one_sns_accepts(name: str, action: NoticeAction) -> None:
    notice = about_job(replace(RUNNING, name=name), action, "reason")

    assert 0 < len(notice.subject) <= SUBJECT_MAX
    assert all(" " <= char <= "~" for char in notice.subject)
    assert all(value for value in notice.attributes().values())
