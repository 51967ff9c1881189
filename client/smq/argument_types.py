"""Argument types more than one `smq` command reads (the CLI, `smq local` and `smq simulate`)."""

from __future__ import annotations

import argparse

from smq_lambda.domain.bounds import MAX_INSTANCES


def pool_capacity(text: str) -> tuple[str, int]:
    """`TYPE=N`: a pool and the instances it holds."""
    pool, _, count = text.partition("=")
    if not pool or not count.isdigit():
        raise argparse.ArgumentTypeError(f"expected TYPE=N (e.g. ml.g5.xlarge=8), got {text!r}")
    if int(count) > MAX_INSTANCES:
        raise argparse.ArgumentTypeError(f"{pool}: a pool holds at most {MAX_INSTANCES} instances, not {count}")
    return pool, int(count)
