"""The largest numbers the operators' documents accept (the configuration document, the governance
policy): far beyond any real use, and small enough that no accepted value can break a pass, a
datetime, a DynamoDB query or a float. Each refusal names the key and its bound."""

from __future__ import annotations

MAX_INSTANCES = 100_000
"""Instances: a pool's capacity, a quota, a borrow limit, a job's instance count."""
MAX_SECONDS = 10 * 365 * 86_400
"""Ten years: a minimum runtime, a usage half-life, a runtime or training-time limit."""
MAX_COUNT = 1_000_000
"""Other counts (preemptions, retries, spot interruptions, aging points) and aging points per hour."""
