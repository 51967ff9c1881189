"""Start estimates replay the pass as it decides: with the spot interruption rates it read."""

from __future__ import annotations

from dataclasses import replace

from smq_lambda.domain.placements.purchase import Purchase
from smq_lambda.forecast.estimate import estimate_starts

from tests.scheduling.builders import G5, NOW
from tests.scheduling.test_purchase_options import SPOT_FULL, config, with_purchase


def test_a_spot_job_that_goes_on_demand_for_its_types_rate_is_estimated_to_start_now() -> None:
    """The spot pool is held by a job that never ends in the replay: at a rate above the limit the
    pass starts the spot job on demand at once, and so does the replay of its estimate."""
    snapshot = with_purchase(SPOT_FULL, Purchase.SPOT, "spot")
    at_rate = estimate_starts(replace(snapshot, spot_rates={G5: 0.9}), NOW, config(limit=0.5))["spot"]
    calm = estimate_starts(replace(snapshot, spot_rates={G5: 0.1}), NOW, config(limit=0.5))["spot"]
    assert at_rate.at == NOW
    assert calm.at is None
