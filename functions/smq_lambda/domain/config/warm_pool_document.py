"""The `warm_pools` section of the configuration document (see config_document.py for the whole):

    "warm_pools": {"max_keep_alive_s": 1800}      the longest keep-alive the queue lets a job ask for

With the section, the queue decides each start's `ResourceConfig.KeepAlivePeriodInSeconds`
(scheduling/warm_pools.py): the request's own, at most `max_keep_alive_s`, while a matching job
waits in the queue; none when nothing would reuse the instances (idle warm instances bill for
nothing). `max_keep_alive_s` is 0 to MAX_KEEP_ALIVE_S (SageMaker's own maximum, 28 days), default
DEFAULT_MAX_KEEP_ALIVE_S. No section: every request's keep-alive is sent as submitted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from smq_lambda.domain.config.section_parser import SectionParser

WARM_POOL_KEYS = ("max_keep_alive_s",)
MAX_KEEP_ALIVE_S = 28 * 24 * 3600
"""SageMaker keeps a warm pool at most 28 days (KeepAlivePeriodInSeconds' own maximum)."""
DEFAULT_MAX_KEEP_ALIVE_S = 3600
"""SageMaker's default limit on a keep-alive (an account raises it through a quota)."""


@dataclass(frozen=True)
class WarmPoolPolicy:
    max_keep_alive_s: int = DEFAULT_MAX_KEEP_ALIVE_S


def parse_warm_pools(value: Any, parser: SectionParser) -> WarmPoolPolicy:
    """The `warm_pools` section `value` (present in the document)."""
    members = parser.section(value, "warm_pools", 'with "max_keep_alive_s"')
    parser.known(members, "warm_pools", WARM_POOL_KEYS)
    return WarmPoolPolicy(
        max_keep_alive_s=parser.count(
            members.get("max_keep_alive_s", DEFAULT_MAX_KEEP_ALIVE_S),
            "warm_pools.max_keep_alive_s",
            maximum=MAX_KEEP_ALIVE_S,
            unit="seconds (28 days, SageMaker's maximum)",
        )
    )
