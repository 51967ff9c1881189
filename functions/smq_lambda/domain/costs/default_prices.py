"""The on-demand SageMaker *training* prices smq ships, in US dollars per instance-hour, by region:
what a stack prices with before its first Price List refresh, when the refresh is off or older than
a week, and on the local stack (which has no Price List). The configuration document's `prices`
override them type by type.

Only prices AWS published are here, each with where and when. SageMaker's pricing page
(aws.amazon.com/sagemaker/pricing) renders its tables from the Price List, so the sources are AWS's
own statements of a training price:

- AWS Machine Learning Blog, "Improve price performance of your model training using Amazon
  SageMaker heterogeneous clusters" (2022): a table "based on us-east-1 SageMaker on-demand
  pricing" with ml.p4d.24xlarge $37.688, ml.p3.2xlarge $3.825, ml.p4d.24xlarge + 2 ml.c5.18xlarge
  $45.032 (so ml.c5.18xlarge $3.672) and ml.p3.2xlarge + ml.c5.9xlarge $5.661 (so ml.c5.9xlarge
  $1.836).
- The AWS Price List Query API (GetProducts, usage types USE1-Train:<type>) as queried and quoted
  in public repositories: ml.m5.large $0.115 (SKU JMCWJEAPVJNFJ5P4, 2026-08-11) and ml.g5.2xlarge
  $1.515 (2026-08-20).

Read 2026-11-26. Every other type (the rest of ml.g4dn, ml.g5, ml.g6, ml.p5, ml.p5e/p5en, ml.trn1,
ml.p4de, ml.m5, ml.c5) and every other region, us-west-2 included, has no shipped price: it is
unpriced (never $0) until the refresh or the configuration document prices it. Prices change
(AWS cut several GPU prices since 2022): a deployed stack's daily refresh replaces these.
"""

from __future__ import annotations

from collections.abc import Mapping

from smq_lambda.domain.costs.costs import Prices

PUBLISHED = "AWS Machine Learning Blog (2022) and the AWS Price List API (2026-08); read 2026-11-26"
"""Where the shipped prices come from, as the prices in force name it (`defaults`)."""

DEFAULT_PRICES: Mapping[str, Prices] = {
    "us-east-1": {
        "ml.c5.9xlarge": 1.836,
        "ml.c5.18xlarge": 3.672,
        "ml.g5.2xlarge": 1.515,
        "ml.m5.large": 0.115,
        "ml.p3.2xlarge": 3.825,
        "ml.p4d.24xlarge": 37.688,
    },
}


def default_prices(region: str | None) -> Prices:
    """The shipped prices of `region`; none for a region (or no region) without shipped prices."""
    return DEFAULT_PRICES.get(region or "", {})
