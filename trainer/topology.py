"""Where this process sits in the job: torchrun's variables, else SageMaker's hosts and GPUs.

Two ways in:
- under ``torchrun`` (SageMaker's ``torch_distributed`` distribution, or by hand) RANK,
  LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT are already set;
- launched plainly, once per host (SageMaker's default), the world is SM_HOSTS times the
  processes per host, this host's ranks follow its position in SM_HOSTS, and the first host is
  the rendezvous. More than one process per host is started here with ``spawn``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass

import torch

DEFAULT_MASTER_PORT = 29500


@dataclass(frozen=True)
class Placement:
    rank: int
    local_rank: int
    world_size: int

    @property
    def is_leader(self) -> bool:
        """The one process that writes checkpoints, the model and metrics, and logs progress."""
        return self.rank == 0


@dataclass(frozen=True)
class LaunchPlan:
    """The processes that run on this host: global rank = ``first_rank`` + local rank."""

    first_rank: int
    local_ranks: tuple[int, ...]
    world_size: int
    master_addr: str
    master_port: int

    def placement(self, local_rank: int) -> Placement:
        return Placement(rank=self.first_rank + local_rank, local_rank=local_rank, world_size=self.world_size)

    def environment(self, local_rank: int) -> dict[str, str]:
        """The torchrun-style variables a spawned process uses to join the process group."""
        placement = self.placement(local_rank)
        return {
            "RANK": str(placement.rank),
            "LOCAL_RANK": str(placement.local_rank),
            "WORLD_SIZE": str(self.world_size),
            "MASTER_ADDR": self.master_addr,
            "MASTER_PORT": str(self.master_port),
        }


def default_nproc_per_host(env: Mapping[str, str]) -> int:
    """One process per GPU SageMaker reports, capped by the GPUs this process can actually see."""
    gpus = int(env.get("SM_NUM_GPUS") or 0)
    return max(1, min(gpus, torch.cuda.device_count()))


def plan(env: Mapping[str, str], nproc_per_host: int | None) -> LaunchPlan:
    if "RANK" in env and "WORLD_SIZE" in env:
        rank = int(env["RANK"])
        local_rank = int(env.get("LOCAL_RANK", "0"))
        return LaunchPlan(
            first_rank=rank - local_rank,
            local_ranks=(local_rank,),
            world_size=int(env["WORLD_SIZE"]),
            master_addr=env.get("MASTER_ADDR", "127.0.0.1"),
            master_port=int(env.get("MASTER_PORT") or DEFAULT_MASTER_PORT),
        )
    nproc = nproc_per_host if nproc_per_host is not None else default_nproc_per_host(env)
    if nproc < 1:
        raise ValueError("--nproc-per-host must be at least 1")
    hosts = json.loads(env["SM_HOSTS"]) if env.get("SM_HOSTS") else []
    current = env.get("SM_CURRENT_HOST")
    if len(hosts) > 1 and current not in hosts:
        raise ValueError(f"SM_CURRENT_HOST {current!r} is not one of SM_HOSTS {hosts}")
    host_index = hosts.index(current) if len(hosts) > 1 else 0
    return LaunchPlan(
        first_rank=host_index * nproc,
        local_ranks=tuple(range(nproc)),
        world_size=max(1, len(hosts)) * nproc,
        master_addr=env.get("MASTER_ADDR") or (hosts[0] if hosts else "127.0.0.1"),
        master_port=int(env.get("MASTER_PORT") or DEFAULT_MASTER_PORT),
    )


def export(launch: LaunchPlan, local_rank: int) -> None:
    """Set the rendezvous variables in this process so ``init_process_group("env://")`` works."""
    os.environ.update(launch.environment(local_rank))
