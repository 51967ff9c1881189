"""How other processes (`smq local inject`, clients) find a running stack: the state file it writes
into its workdir; and which SageMaker training job a queue job's name stands for."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from smq.api_client import SmqApiClient
from smq.errors import JobNotFound
from smq.local.stack_options import REGION

STATE_FILE = "stack.json"
"""Written into the workdir while the stack runs, so `smq local inject` and clients can find it."""


def write_state(workdir: Path, api_url: str, sagemaker_url: str, client_env: Mapping[str, str]) -> Path:
    """Write the running stack's URLs and client environment; returns the file (remove it on stop)."""
    state = {"api_url": api_url, "sagemaker_url": sagemaker_url, "env": dict(client_env), "pid": os.getpid()}
    path = workdir / STATE_FILE
    path.write_text(json.dumps(state, indent=2))
    return path


def read_state(workdir: Path) -> dict[str, Any]:
    """The running stack's URLs and client environment, as `smq local up` wrote them."""
    path = Path(workdir) / STATE_FILE
    if not path.exists():
        raise FileNotFoundError(f"no local stack is running with workdir {workdir} (run `smq local up`)")
    return json.loads(path.read_text())


def training_job_for(api_url: str, job: str) -> str:
    """The SageMaker name of a queue job's latest attempt; other names are taken as they are."""
    try:
        name = SmqApiClient(api_url, region=REGION).get_job(job).get("training_job_name")
    except JobNotFound:
        return job
    return str(name or job)
