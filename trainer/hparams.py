"""Hyperparameters the way SageMaker delivers them: ``--key value`` arguments plus SM_* variables.

SageMaker passes each estimator hyperparameter as ``--<key> <value>`` using the key exactly as the
user wrote it, so every multi-word option is accepted with dashes and with underscores
(``--max-steps`` and ``--max_steps``). Directories default from the environment the platform sets.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

DEFAULT_CHECKPOINT_DIR = "/opt/ml/checkpoints"
DEFAULT_MODEL_DIR = "/opt/ml/model"
DEFAULT_CHECKPOINT_EVERY_SECONDS = 60.0
"""Bounds the work lost to a hard kill to a minute; bench/bench_trainer.py shows it costs < 2%."""

# The SageMaker Python SDK adds these to the job's hyperparameters; the container toolkit normally
# strips them, but a look-alike runner may not.
_PLATFORM_PREFIXES = ("--sagemaker_", "--sagemaker-")


def _add(parser: argparse.ArgumentParser, name: str, **kwargs: Any) -> None:
    flags = [f"--{name}"]
    if "-" in name:
        flags.append(f"--{name.replace('-', '_')}")
    parser.add_argument(*flags, dest=name.replace("-", "_"), **kwargs)


def build_parser(env: Mapping[str, str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="smq reference trainer: a timm ViT that checkpoints and resumes exactly.",
        allow_abbrev=False,  # a misspelt hyperparameter must fail, not silently set a neighbour
    )
    _add(parser, "model", default="vit_tiny_patch16_224", help="timm ViT name; the options below override its size")
    _add(parser, "embed-dim", type=int, default=None)
    _add(parser, "depth", type=int, default=None)
    _add(parser, "num-heads", type=int, default=None)
    _add(parser, "patch-size", type=int, default=None)
    _add(parser, "img-size", type=int, default=224)
    _add(parser, "num-classes", type=int, default=None, help="default: 10 for synthetic data, the folder's class count")
    _add(parser, "drop-path", type=float, default=0.0, help="stochastic depth rate")

    _add(parser, "batch-size", type=int, default=32, help="per process; the global batch is this times the world size")
    _add(parser, "lr", type=float, default=5e-4, help="peak AdamW learning rate")
    _add(parser, "weight-decay", type=float, default=0.05)
    _add(
        parser,
        "warmup-steps",
        type=int,
        default=None,
        help="linear warmup before cosine decay; default 5%% of max-steps",
    )
    _add(parser, "grad-clip", type=float, default=1.0, help="max gradient norm; 0 disables clipping")
    _add(parser, "max-steps", type=int, default=1000)
    _add(parser, "seed", type=int, default=0)

    _add(parser, "data", choices=("synthetic", "folder"), default="synthetic")
    _add(
        parser,
        "data-dir",
        type=Path,
        default=_path_or_none(env.get("SM_CHANNEL_TRAINING")),
        help="image folder (default $SM_CHANNEL_TRAINING)",
    )
    _add(parser, "num-workers", type=int, default=None, help="DataLoader workers; default 2 on CUDA, 0 on CPU")

    _add(parser, "checkpoint-dir", type=Path, default=Path(env.get("SMQ_CHECKPOINT_DIR") or DEFAULT_CHECKPOINT_DIR))
    _add(parser, "checkpoint-every-steps", type=int, default=0, help="0 disables step-based checkpoints")
    _add(
        parser,
        "checkpoint-every-seconds",
        type=float,
        default=DEFAULT_CHECKPOINT_EVERY_SECONDS,
        help="0 disables time-based checkpoints",
    )
    _add(parser, "keep-checkpoints", type=int, default=2)
    _add(parser, "model-dir", type=Path, default=Path(env.get("SM_MODEL_DIR") or DEFAULT_MODEL_DIR))
    _add(parser, "log-every", type=int, default=10)

    _add(
        parser,
        "threads",
        type=int,
        default=int(env.get("SMQ_TORCH_THREADS") or 0),
        help="torch CPU threads per process; 0 keeps torch's default",
    )
    _add(
        parser,
        "nproc-per-host",
        type=int,
        default=None,
        help="processes per host when not under torchrun; default one per visible GPU ($SM_NUM_GPUS)",
    )
    return parser


def _path_or_none(value: str | None) -> Path | None:
    return Path(value) if value else None


def parse(argv: Sequence[str], env: Mapping[str, str]) -> argparse.Namespace:
    """Parse and validate, ignoring only the SDK's own ``sagemaker_*`` hyperparameters."""
    parser = build_parser(env)
    hp, unknown = parser.parse_known_args(list(argv))
    foreign = [arg for arg in unknown if arg.startswith("-") and not arg.startswith(_PLATFORM_PREFIXES)]
    if foreign:
        parser.error(f"unrecognized arguments: {' '.join(foreign)}")
    _validate(parser, hp)
    return hp


def _validate(parser: argparse.ArgumentParser, hp: argparse.Namespace) -> None:
    positive = ("img_size", "batch_size", "max_steps", "log_every", "keep_checkpoints")
    for name in positive:
        if getattr(hp, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    for name in ("checkpoint_every_steps", "checkpoint_every_seconds", "threads", "seed", "drop_path", "grad_clip"):
        if getattr(hp, name) < 0:
            parser.error(f"--{name.replace('_', '-')} must not be negative")
    if hp.num_classes is not None and hp.num_classes < 1:
        parser.error("--num-classes must be at least 1")
    if hp.data == "folder" and hp.data_dir is None:
        parser.error("--data folder needs --data-dir or $SM_CHANNEL_TRAINING")
    if hp.warmup_steps is None:
        hp.warmup_steps = max(1, hp.max_steps // 20)
