"""Argument types more than one `smq` command reads."""

from __future__ import annotations

import argparse


def pool_capacity(text: str) -> tuple[str, int]:
    """`TYPE=N`: a pool and the instances it holds."""
    pool, _, count = text.partition("=")
    if not pool or not count.isdigit():
        raise argparse.ArgumentTypeError(f"expected TYPE=N (e.g. ml.g5.xlarge=8), got {text!r}")
    return pool, int(count)
