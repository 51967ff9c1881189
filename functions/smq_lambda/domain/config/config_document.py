"""The queue's configuration document: its pools, its teams' quotas, the preemption and aging
rules, and what training costs (prices, cost tags, team budgets). The deployed queue reads it from
its SSM parameter (the "pools parameter"); `smq local up --config` and `smq simulate --config`
read the same document from a file.

    {"pools": {"ml.p5.48xlarge": 8},                      instance type → instances; required
     "team_tag": "team",                                  the tag key naming a job's team
     "quotas": {"vision": {"instances": {"ml.p5.48xlarge": 4},          required
                           "sharing": "lend_and_borrow", "borrow_limit": 4},
                "nlp": {"instances": {"ml.p5.48xlarge": 4}, "sharing": "lend"}},
     "preemption": {"min_runtime_s": 600, "max_preemptions": 3},
     "aging": {"per_hour": 1, "cap": 5},
     "usage_half_life_s": 3600,
     "prices": {"ml.p5.48xlarge": 55.04},                 $ per instance-hour (cost_document.py)
     "cost_tags": ["project"],
     "budgets": {"vision": {"monthly_usd": 50000, "action": "hold"}},
     "spot": {"pools": {"ml.p5.48xlarge": 4}, ...},          spot capacity as `<type>:spot` pools (spot_document.py)
     "training_plans": {"p5-reserved": {...}},             reserved capacity as pools (plan_document.py)
     "warm_pools": {"max_keep_alive_s": 1800}}             keep-alives the queue decides (warm_pool_document.py)

Two forms. The document is the *full* form above when any of its keys is one of the full form's
top-level keys (pools, team_tag, quotas, preemption, aging, usage_half_life_s, prices, cost_tags,
budgets, spot, training_plans, warm_pools); then `pools` is required and any other key is refused. Otherwise it is the *flat* form of the queue before teams,
`{"ml.g5.xlarge": 8}`: every key an instance type, every value its count, and it means
`{"pools": {...}}`. An instance type is never one of those words, so the two cannot be confused;
`{}` is the flat form with no pool.

Defaults: `team_tag` "team"; a quota's `sharing` lend_and_borrow and `borrow_limit` null (as many
as are idle); `usage_half_life_s` 3600; no `aging` section: no aging (an `aging` section names both
`per_hour` and `cap`). A member missing from `preemption` (or the whole section) takes the default
of the mode: QUOTA_PREEMPTION_DEFAULTS (600 s, 3 preemptions) when there are quotas, else no
protection (PreemptionRules()), exactly the queue before teams. `max_preemptions: null` means no
limit, which is not the same as leaving it out. No cost section: no prices of its own, no cost
tags, no budgets.

Every number is bounded, so no value the parser accepts can break a pass (a capacity beyond
what a DynamoDB query or a slice takes, a duration beyond what a datetime holds): instance counts
(pools, quotas, borrow_limit) at most MAX_INSTANCES, durations (min_runtime_s, usage_half_life_s)
at most MAX_SECONDS (ten years), other counts (max_preemptions, aging.cap) and aging.per_hour at
most MAX_COUNT (domain/config/bounds.py); prices and budgets have their own bounds (cost_document.py).

Anything else is refused with a ConfigDocumentError naming the key path
(`quotas.vision.sharing: 'share' is not one of reserve, lend, lend_and_borrow`), so a typo is
reported instead of silently changing how the queue schedules.

One mistake is a warning instead (`QueueConfigDocument.warnings`, each naming its key path): with
quotas, a budget for a team that is not configured, which no new job can name (its team tag must
name a configured team). Refusing it would turn documents earlier releases took into invalid ones,
and with no valid version left the queue starts and accepts nothing (adapters/ssm_config.py); and
such a budget still holds the jobs queued while its team had a quota (their spend keeps the team's
name: domain/costs/cost_totals.py).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from smq_lambda.domain.config.bounds import MAX_COUNT, MAX_INSTANCES, MAX_SECONDS
from smq_lambda.domain.config.cost_document import COST_KEYS, parse_cost_sections
from smq_lambda.domain.config.plan_document import TrainingPlan, parse_training_plans, with_plan_pools
from smq_lambda.domain.config.spot_document import SpotSection, parse_spot_section, with_spot_pools
from smq_lambda.domain.config.teams import (
    DEFAULT_TEAM_TAG,
    DEFAULT_USAGE_HALF_LIFE_S,
    QUOTA_PREEMPTION_DEFAULTS,
    UNASSIGNED,
    Aging,
    PreemptionRules,
    Quota,
    Sharing,
    Teams,
)
from smq_lambda.domain.config.warm_pool_document import WarmPoolPolicy, parse_warm_pools
from smq_lambda.domain.costs.budgets import Budget
from smq_lambda.domain.costs.costs import Prices
from smq_lambda.errors import ConfigError

TOP_LEVEL_KEYS = (
    "pools",
    "team_tag",
    "quotas",
    "preemption",
    "aging",
    "usage_half_life_s",
    *COST_KEYS,
    "spot",
    "training_plans",
    "warm_pools",
)
QUOTA_KEYS = ("instances", "sharing", "borrow_limit")
PREEMPTION_KEYS = ("min_runtime_s", "max_preemptions")
AGING_KEYS = ("per_hour", "cap")
TAG_KEY_MAX = 128
TAG_VALUE_MAX = 256
"""SageMaker's limits on a tag's key and value: a team name is a tag value."""
TAG_PUNCTUATION = frozenset("_.:/=+-@")
"""With letters, digits and spaces, the characters SageMaker allows in tag keys and values."""


@dataclass(frozen=True)
class ConfigWarning:
    """A likely mistake that leaves the document valid; `path` names the key (`budgets.visoin`)."""

    path: str
    problem: str

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}"


class ConfigDocumentError(ConfigError):
    """The configuration document breaks a rule; `path` names the key (`quotas.vision.sharing`),
    empty for the document as a whole."""

    def __init__(self, source: str, path: str, problem: str) -> None:
        super().__init__(f"{source}: {path}: {problem}" if path else f"{source}: {problem}")
        self.path = path
        self.problem = problem


@dataclass(frozen=True)
class QueueConfigDocument:
    pools: Mapping[str, int]
    teams: Teams = field(default_factory=Teams)
    preemption: PreemptionRules = field(default_factory=PreemptionRules)
    aging: Aging = field(default_factory=Aging)
    prices: Prices = field(default_factory=dict)
    """The document's own prices (see cost_document.py); the prices in force add defaults to them."""
    cost_tags: tuple[str, ...] = ()
    budgets: Mapping[str, Budget] = field(default_factory=dict)
    spot: SpotSection | None = None
    """The `spot` section (spot_document.py); its pools are in `pools`, each named `<type>:spot`."""
    training_plans: Mapping[str, TrainingPlan] = field(default_factory=dict)
    """Per name, the training plans (plan_document.py); their pools are in `pools`, each `plan:<name>`."""
    warm_pools: WarmPoolPolicy | None = None
    """The `warm_pools` section (warm_pool_document.py); None: keep-alives are sent as submitted."""
    warnings: tuple[ConfigWarning, ...] = ()
    """Likely mistakes the document is valid with (the module docstring), for whoever reads it to show."""


def parse_config_document(value: Any, *, source: str) -> QueueConfigDocument:
    """Validate the decoded JSON `value` (read from `source`, which errors name first)."""
    return _Parser(source).document(value)


def with_pools(document: QueueConfigDocument, pools: Mapping[str, int], *, source: str) -> QueueConfigDocument:
    """`document` with `pools` added to its own (a pool in both takes the count of `pools`), its
    quotas checked against the result (`smq simulate --capacity` on top of `--config`)."""
    merged = {**document.pools, **_Parser(source).pools(dict(pools), path="pools")}
    _Parser(source).fit(document.teams.quotas, merged)
    return replace(document, pools=merged)


class _Parser:
    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, path: str, problem: str) -> ConfigDocumentError:
        return ConfigDocumentError(self.source, path, problem)

    def document(self, value: Any) -> QueueConfigDocument:
        if not isinstance(value, dict):
            raise self.fail(
                "",
                'must be a JSON object: {"pools": {"ml.g5.xlarge": 8}, ...}, or the flat pools form '
                f'{{"ml.g5.xlarge": 8}}; got {json_type(value)}',
            )
        if not any(key in TOP_LEVEL_KEYS for key in value):
            return QueueConfigDocument(pools=self.pools(value, path=""))
        unknown = sorted(key for key in value if key not in TOP_LEVEL_KEYS)
        if unknown:
            raise self.fail(
                unknown[0],
                f'unknown key; the document has {", ".join(TOP_LEVEL_KEYS)} (instance types go under "pools")',
            )
        if "pools" not in value:
            raise self.fail("pools", "is required: the instances of each instance type the queue may hold")
        on_demand = self.pools(value["pools"], path="pools")
        spot = parse_spot_section(value["spot"], on_demand, self) if "spot" in value else None
        training_plans = parse_training_plans(value.get("training_plans", {}), self)
        pools = with_plan_pools(with_spot_pools(on_demand, spot, self), training_plans, self)
        teams = Teams(
            tag=self.tag_key(value.get("team_tag", DEFAULT_TEAM_TAG), "team_tag"),
            quotas=self.quotas(value.get("quotas", {}), pools),
            usage_half_life_s=self.count(
                value.get("usage_half_life_s", DEFAULT_USAGE_HALF_LIFE_S),
                "usage_half_life_s",
                minimum=1,
                maximum=MAX_SECONDS,
                unit="seconds (ten years)",
            ),
        )
        defaults = QUOTA_PREEMPTION_DEFAULTS if teams.enabled else PreemptionRules()
        costs = parse_cost_sections(value, self)
        return QueueConfigDocument(
            pools=pools,
            teams=teams,
            preemption=self.preemption(value.get("preemption", {}), defaults),
            aging=self.aging(value["aging"]) if "aging" in value else Aging(),
            prices=costs.prices,
            cost_tags=costs.cost_tags,
            budgets=costs.budgets,
            spot=spot,
            training_plans=training_plans,
            warm_pools=parse_warm_pools(value["warm_pools"], self) if "warm_pools" in value else None,
            warnings=_unnamed_budget_teams(costs.budgets, teams),
        )

    def pools(self, value: Any, *, path: str) -> dict[str, int]:
        members = self.section(value, path or "the document", "of instance type to instance count")
        pools: dict[str, int] = {}
        for instance_type, count in members.items():
            if not instance_type.strip():
                raise self.fail(path, "an instance type is empty")
            pools[instance_type] = self.count(
                count, dotted(path, instance_type), maximum=MAX_INSTANCES, unit="instances"
            )
        return pools

    def quotas(self, value: Any, pools: Mapping[str, int]) -> dict[str, Quota]:
        quotas: dict[str, Quota] = {}
        for team, member in self.section(value, "quotas", "of team name to quota").items():
            self.team_name(team)
            quotas[team] = self.quota(member, f"quotas.{team}", pools)
        self.fit(quotas, pools)
        return quotas

    def fit(self, quotas: Mapping[str, Quota], pools: Mapping[str, int]) -> None:
        """The quotas of each pool add up to no more than the pool."""
        for pool, capacity in pools.items():
            total = sum(quota.instances.get(pool, 0) for quota in quotas.values())
            if total > capacity:
                raise self.fail("quotas", f"quotas of {pool} add up to {total}, the pool has {capacity}")

    def team_name(self, team: str, *, section: str = "quotas") -> None:
        path = f"{section}.{team}" if team else f'{section}.""'
        if not team or len(team) > TAG_VALUE_MAX:
            raise self.fail(path, f"a team name is a tag value: 1 to {TAG_VALUE_MAX} characters")
        if team == UNASSIGNED:
            raise self.fail(path, f"{UNASSIGNED} is the group of jobs of no team, not a team name")
        if not tag_text(team):
            raise self.fail(path, "a team name is a tag value: letters, digits, spaces and _.:/=+-@ only")

    def quota(self, value: Any, path: str, pools: Mapping[str, int]) -> Quota:
        members = self.section(value, path, "with instances, sharing and borrow_limit")
        unknown = sorted(key for key in members if key not in QUOTA_KEYS)
        if unknown:
            raise self.fail(dotted(path, unknown[0]), f"unknown key; a quota has {', '.join(QUOTA_KEYS)}")
        if "instances" not in members:
            raise self.fail(dotted(path, "instances"), "is required: the instances of each pool the team owns")
        instances = self.pools(members["instances"], path=dotted(path, "instances"))
        for pool in instances:
            if pool not in pools:
                configured = ", ".join(sorted(pools)) or "none"
                raise self.fail(dotted(path, "instances", pool), f"not a configured pool (pools: {configured})")
        sharing = members.get("sharing", Sharing.LEND_AND_BORROW.value)
        modes = [mode.value for mode in Sharing]
        if sharing not in modes:
            raise self.fail(dotted(path, "sharing"), f"{sharing!r} is not one of {', '.join(modes)}")
        borrow_limit = members.get("borrow_limit")
        if borrow_limit is not None:
            borrow_limit = self.count(
                borrow_limit, dotted(path, "borrow_limit"), maximum=MAX_INSTANCES, unit="instances", nullable=True
            )
            if not Sharing(sharing).borrows:
                raise self.fail(
                    dotted(path, "borrow_limit"),
                    f"only a team that borrows (sharing {Sharing.LEND_AND_BORROW}) has a borrow limit; "
                    f"this one's sharing is {sharing}",
                )
        return Quota(instances=instances, sharing=Sharing(sharing), borrow_limit=borrow_limit)

    def preemption(self, value: Any, defaults: PreemptionRules) -> PreemptionRules:
        members = self.section(value, "preemption", "with min_runtime_s and max_preemptions")
        self.known(members, "preemption", PREEMPTION_KEYS)
        max_preemptions = members.get("max_preemptions", defaults.max_preemptions)
        return PreemptionRules(
            min_runtime_s=self.count(
                members.get("min_runtime_s", defaults.min_runtime_s),
                "preemption.min_runtime_s",
                maximum=MAX_SECONDS,
                unit="seconds (ten years)",
            ),
            max_preemptions=None
            if max_preemptions is None
            else self.count(max_preemptions, "preemption.max_preemptions", maximum=MAX_COUNT, nullable=True),
        )

    def aging(self, value: Any) -> Aging:
        members = self.section(value, "aging", "with per_hour and cap")
        self.known(members, "aging", AGING_KEYS)
        for key in AGING_KEYS:
            if key not in members:
                raise self.fail(f"aging.{key}", "is required in an aging section")
        per_hour = members["per_hour"]
        if not is_number(per_hour) or not 0 <= per_hour <= MAX_COUNT:
            raise self.fail(
                "aging.per_hour",
                f"must be a non-negative number of priority points, at most {MAX_COUNT}, not {per_hour!r}",
            )
        return Aging(per_hour=float(per_hour), cap=self.count(members["cap"], "aging.cap", maximum=MAX_COUNT))

    def tag_key(self, value: Any, path: str) -> str:
        if not isinstance(value, str) or not 1 <= len(value) <= TAG_KEY_MAX:
            raise self.fail(path, f"must be a tag key of 1 to {TAG_KEY_MAX} characters, not {value!r}")
        if value.lower().startswith("aws:"):
            raise self.fail(path, f"{value!r}: tag keys starting with 'aws:' are reserved for AWS")
        if not tag_text(value):
            raise self.fail(path, f"{value!r}: a tag key has letters, digits, spaces and _.:/=+-@ only")
        return value

    def section(self, value: Any, path: str, shape: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(path, f"must be a JSON object {shape}, not {json_type(value)}")
        return value

    def known(self, members: Mapping[str, Any], path: str, keys: tuple[str, ...]) -> None:
        unknown = sorted(key for key in members if key not in keys)
        if unknown:
            raise self.fail(dotted(path, unknown[0]), f"unknown key; {path} has {', '.join(keys)}")

    def count(
        self, value: Any, path: str, *, maximum: int, unit: str = "", minimum: int = 0, nullable: bool = False
    ) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            kind = "a non-negative integer" if minimum == 0 else f"an integer of at least {minimum}"
            raise self.fail(path, f"must be {kind}{' or null' if nullable else ''}, not {value!r}")
        if value > maximum:
            raise self.fail(path, f"must be at most {maximum}{f' {unit}' if unit else ''}, not {value}")
        return value

    def number(
        self, value: Any, path: str, *, maximum: float, what: str, minimum: float = 0, above_minimum: bool = False
    ) -> float:
        """`value` as a float if it is a JSON number from `minimum` (exclusive when `above_minimum`)
        to `maximum`; else refused as not being `what`."""
        low_ok = is_number(value) and (value > minimum if above_minimum else value >= minimum)
        if not low_ok or value > maximum:
            raise self.fail(path, f"must be {what}, not {value!r}")
        return float(value)


def _unnamed_budget_teams(budgets: Mapping[str, Budget], teams: Teams) -> tuple[ConfigWarning, ...]:
    """A warning for each budget whose team no new job can name: with quotas, a team tag must name a
    configured team (service/submission_tags.py)."""
    if not teams.enabled:
        return ()
    configured = ", ".join(repr(team) for team in sorted(teams.quotas))
    return tuple(
        ConfigWarning(
            f"budgets.{team}",
            f"{team!r} is not a configured team: with quotas, a job's team tag must name one of {configured}, so no "
            f"new job counts against this budget (only jobs queued while {team!r} was a team do)",
        )
        for team in budgets
        if team not in teams.quotas
    )


def dotted(*parts: str) -> str:
    return ".".join(part for part in parts if part)


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def tag_text(text: str) -> bool:
    """Whether SageMaker accepts `text` in a tag (`^([\\p{L}\\p{Z}\\p{N}_.:/=+\\-@]*)$`)."""
    return all(char in TAG_PUNCTUATION or unicodedata.category(char)[0] in "LZN" for char in text)


def json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "a number" if is_number(value) else type(value).__name__
