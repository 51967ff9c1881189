"""Scheduler configuration: the configuration document (pools, teams, preemption and aging rules;
domain/config/config_document.py) from SSM, hot-reloaded, the rest from the settings.

The pools parameter is an operator's document (adapters/ssm_document.py): a change reaches every
function within a minute without a redeploy, and a value that is not JSON or breaks a rule of the
document is logged naming what is wrong, counted in `InvalidConfiguration`, and replaced by the
newest valid version of the parameter, so a typo in SSM does not stop the queue. When no version is
valid, nothing stands in for it: every load raises ConfigError, so the scheduler starts nothing and
the API accepts nothing (500, "the queue is misconfigured") until it is fixed. Neither the stack's
deploy-time pools (they may hold more than an operator has since allowed, and no team quotas) nor an
empty set of pools (every job unlimited when unpooled types run unlimited) would fail closed. SSM
throttling or failing on its side, or not answering at all, is ServiceUnavailable (it passes, and
the API says 503) until a configuration is in force, which then stays. A valid document's likely
mistakes (`QueueConfigDocument.warnings`) are logged as warnings each time it is read.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities import parameters

from smq_lambda.adapters.ssm_document import DocumentRules, SsmDocument
from smq_lambda.domain.config.config_document import parse_config_document
from smq_lambda.errors import ConfigError
from smq_lambda.scheduling.snapshot import SchedulerConfig
from smq_lambda.settings import Settings

INVALID_CONFIGURATION_METRIC = "InvalidConfiguration"

logger = Logger(service="smq", child=True)


def _nothing() -> SchedulerConfig:
    raise ConfigError("the queue starts and accepts nothing until it is fixed")


class SsmConfigSource:
    """The ConfigSource port over a powertools SSMProvider, whose cache lives as long as the
    provider. Handlers build the provider with their other clients once per cold start, so its
    client always points where theirs do (a process-global default would outlive a local stack)."""

    def __init__(self, settings: Settings, provider: parameters.SSMProvider) -> None:
        self._settings = settings
        self._document = SsmDocument(
            settings.pools_parameter,
            provider,
            DocumentRules(
                what="configuration document",
                parse=self._config,
                metric=INVALID_CONFIGURATION_METRIC,
                last_resort=_nothing,
                last_resort_name="nothing",
            ),
        )

    def load(self) -> SchedulerConfig:
        return self._document.load()

    def _config(self, value: Any, source: str) -> SchedulerConfig:
        document = parse_config_document(value, source=source)
        for warning in document.warnings:
            logger.warning(
                "configuration document: a likely mistake", extra={"source": source, "warning": str(warning)}
            )
        return SchedulerConfig.of(document, unpooled=self._settings.unpooled, backfill=self._settings.backfill)
