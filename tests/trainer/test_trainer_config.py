"""Hyperparameters, SageMaker environment, process placement and the LR schedule."""

from __future__ import annotations

import json
import math
from itertools import pairwise
from pathlib import Path

import pytest
from trainer_support import hparams, topology, train

EMPTY: dict[str, str] = {}


def test_dash_and_underscore_spellings_are_the_same_option() -> None:
    dashed = hparams.parse(["--max-steps", "7", "--batch-size", "3"], EMPTY)
    underscored = hparams.parse(["--max_steps", "7", "--batch_size", "3"], EMPTY)

    assert (dashed.max_steps, dashed.batch_size) == (7, 3)
    assert vars(dashed) == vars(underscored)


def test_directories_default_from_the_environment() -> None:
    env = {"SMQ_CHECKPOINT_DIR": "/jobs/a/ckpt", "SM_MODEL_DIR": "/jobs/a/model", "SM_CHANNEL_TRAINING": "/data"}

    hp = hparams.parse([], env)

    assert hp.checkpoint_dir == Path("/jobs/a/ckpt")
    assert hp.model_dir == Path("/jobs/a/model")
    assert hp.data_dir == Path("/data")


def test_directories_fall_back_to_sagemaker_paths() -> None:
    hp = hparams.parse([], EMPTY)

    assert hp.checkpoint_dir == Path("/opt/ml/checkpoints")
    assert hp.model_dir == Path("/opt/ml/model")
    assert hp.checkpoint_every_seconds == hparams.DEFAULT_CHECKPOINT_EVERY_SECONDS


def test_command_line_beats_environment() -> None:
    hp = hparams.parse(["--checkpoint-dir", "/mine"], {"SMQ_CHECKPOINT_DIR": "/theirs"})

    assert hp.checkpoint_dir == Path("/mine")


def test_sdk_hyperparameters_are_ignored_but_typos_are_not() -> None:
    hp = hparams.parse(["--sagemaker_program", '"train.py"', "--lr", "0.01", "--sagemaker_region", "us-east-1"], EMPTY)
    assert hp.lr == 0.01

    with pytest.raises(SystemExit):
        hparams.parse(["--max-step", "5"], EMPTY)


@pytest.mark.parametrize(
    "argv",
    [
        ["--max-steps", "0"],
        ["--batch-size", "0"],
        ["--keep-checkpoints", "0"],
        ["--checkpoint-every-seconds", "-1"],
        ["--data", "folder"],
        ["--data", "imagenet"],
    ],
)
def test_invalid_settings_are_refused(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        hparams.parse(argv, EMPTY)


def test_warmup_defaults_to_five_percent() -> None:
    assert hparams.parse(["--max-steps", "200"], EMPTY).warmup_steps == 10
    assert hparams.parse(["--max-steps", "5"], EMPTY).warmup_steps == 1
    assert hparams.parse(["--max-steps", "200", "--warmup-steps", "3"], EMPTY).warmup_steps == 3


def test_lr_warms_up_linearly_then_decays_by_cosine() -> None:
    warmup, total = 4, 14

    factors = [train.lr_factor(step, warmup, total) for step in range(total + 1)]

    assert factors[:4] == [0.25, 0.5, 0.75, 1.0]
    assert factors[4] == 1.0
    assert math.isclose(factors[9], 0.5)
    assert factors[14] == 0.0
    assert all(a >= b for a, b in pairwise(factors[4:]))


def test_plain_process_is_a_world_of_one() -> None:
    launch = topology.plan(EMPTY, nproc_per_host=None)

    assert launch.local_ranks == (0,)
    assert launch.world_size == 1
    assert launch.placement(0).is_leader


def test_torchrun_variables_win() -> None:
    env = {"RANK": "5", "LOCAL_RANK": "1", "WORLD_SIZE": "8", "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "1234"}

    launch = topology.plan(env, nproc_per_host=4)

    assert launch.local_ranks == (1,)
    placement = launch.placement(1)
    assert (placement.rank, placement.local_rank, placement.world_size) == (5, 1, 8)
    assert not placement.is_leader
    assert launch.environment(1)["MASTER_ADDR"] == "10.0.0.1"


def test_sagemaker_hosts_give_each_host_a_block_of_ranks() -> None:
    env = {"SM_HOSTS": json.dumps(["algo-1", "algo-2", "algo-3"]), "SM_CURRENT_HOST": "algo-2"}

    launch = topology.plan(env, nproc_per_host=2)

    assert launch.world_size == 6
    assert [launch.placement(local).rank for local in launch.local_ranks] == [2, 3]
    assert launch.master_addr == "algo-1"
    assert launch.master_port == topology.DEFAULT_MASTER_PORT
    assert launch.environment(1) == {
        "RANK": "3",
        "LOCAL_RANK": "1",
        "WORLD_SIZE": "6",
        "MASTER_ADDR": "algo-1",
        "MASTER_PORT": str(topology.DEFAULT_MASTER_PORT),
    }


def test_gpu_count_without_visible_gpus_means_one_process() -> None:
    assert topology.default_nproc_per_host({"SM_NUM_GPUS": "0"}) == 1
    assert topology.default_nproc_per_host({"SM_NUM_GPUS": "8"}) >= 1


def test_current_host_must_be_listed() -> None:
    env = {"SM_HOSTS": json.dumps(["algo-1", "algo-2"]), "SM_CURRENT_HOST": "algo-9"}

    with pytest.raises(ValueError, match="algo-9"):
        topology.plan(env, nproc_per_host=1)
