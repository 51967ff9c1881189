"""The one rule of whose idle quota borrowed instances run on (`domain.config.teams.lent_by`)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from smq_lambda.domain.config.teams import UNASSIGNED, Quota, Sharing, Teams, lent_by

P = "ml.p5.48xlarge"


def teams(*sharing: Sharing) -> Teams:
    return Teams(quotas={f"t{index}": Quota({P: 1}, mode) for index, mode in enumerate(sharing)})


@given(
    borrowed=st.integers(min_value=-3, max_value=60),
    idle=st.lists(st.integers(min_value=0, max_value=20), min_size=1, max_size=6),
    modes=st.lists(st.sampled_from(list(Sharing)), min_size=6, max_size=6),
)
def test_lending_never_exceeds_idle_quota_and_adds_up(borrowed: int, idle: list[int], modes: list[Sharing]) -> None:
    configured = teams(*modes[: len(idle)])
    by_team = {f"t{index}": count for index, count in enumerate(idle)}
    lending = {team: count for team, count in by_team.items() if configured.sharing(team).lends}

    lent = lent_by(borrowed, by_team, configured)

    assert sum(lent.values()) == min(max(borrowed, 0), sum(lending.values()))
    assert all(0 < lent[team] <= lending[team] for team in lent)


def test_lending_is_in_proportion_to_idle_quota_and_reserving_teams_lend_nothing() -> None:
    configured = teams(Sharing.LEND, Sharing.LEND_AND_BORROW, Sharing.RESERVE)

    assert lent_by(3, {"t0": 4, "t1": 2, "t2": 5}, configured) == {"t0": 2, "t1": 1}
    assert lent_by(1, {"t0": 1, "t1": 1}, configured) == {"t0": 1}, "ties go in name order"
    assert lent_by(2, {UNASSIGNED: 2}, configured) == {UNASSIGNED: 2}, "the unassigned group lends"
