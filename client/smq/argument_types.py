"""Argument types the `smq` commands read (the CLI, `smq local` and `smq simulate`)."""

from __future__ import annotations

import argparse

from smq_lambda.domain.config.bounds import MAX_INSTANCES


def instance_preference(text: str) -> str:
    """`TYPE` or `TYPE:COUNT` (a positive count): one entry of the `smq:instance-preferences` tag."""
    instance_type, _, count = text.partition(":")
    if not instance_type.startswith("ml.") or (count and not (count.isdigit() and int(count) > 0)):
        raise argparse.ArgumentTypeError(f"expected TYPE or TYPE:COUNT (e.g. ml.g5.48xlarge:4), got {text!r}")
    return text


def pool_capacity(text: str) -> tuple[str, int]:
    """`TYPE=N`: a pool and the instances it holds."""
    pool, _, count = text.partition("=")
    if not pool or not count.isdigit():
        raise argparse.ArgumentTypeError(f"expected TYPE=N (e.g. ml.g5.xlarge=8), got {text!r}")
    if int(count) > MAX_INSTANCES:
        raise argparse.ArgumentTypeError(f"{pool}: a pool holds at most {MAX_INSTANCES} instances, not {count}")
    return pool, int(count)
