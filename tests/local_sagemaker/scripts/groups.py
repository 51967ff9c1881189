"""A group-aware entry point: each host writes what it read about its place in the cluster to the
model directory under its own name, and the data host waits for the trainer host to finish first
(as a heterogeneous job's data group serves the trainers until they are done). The group that
`FAIL_GROUP` names fails instead."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

model_dir = Path(os.environ["SM_MODEL_DIR"])
host = os.environ["SM_CURRENT_HOST"]
group = os.environ["SM_CURRENT_INSTANCE_GROUP"]
config = json.loads((Path(os.environ["SM_INPUT_CONFIG_DIR"]) / "resourceconfig.json").read_text())
report = {
    "group": group,
    "instance_type": os.environ["SM_CURRENT_INSTANCE_TYPE"],
    "hosts": json.loads(os.environ["SM_HOSTS"]),
    "instance_groups": json.loads(os.environ["SM_INSTANCE_GROUPS"]),
    "resourceconfig": config,
}
if group == os.environ.get("FAIL_GROUP"):
    raise SystemExit(f"{host} in {group} failed on purpose")
if group == "data":
    deadline = time.monotonic() + 60
    while not (model_dir / "trainer-done").exists():
        assert time.monotonic() < deadline, "the trainer never finished"
        time.sleep(0.02)
(model_dir / f"{host}.json").write_text(json.dumps(report))
if group == "trainer":
    (model_dir / "trainer-done").write_text("")
print(f"{host} in {group} done", flush=True)
