"""Python API quick start: the queue from code, shaped like the SDK's AWS Batch TrainingQueue
(docs/client.md, "The Python API"). tests/client/test_end_to_end.py runs this file unchanged against
`smq local up --executor synthetic`.
"""

import json
from pathlib import Path

from smq import TrainingQueue

queue = TrainingQueue()  # SMQ_API_URL, else the ApiUrl output of the stack named by SMQ_STACK_NAME

request = json.loads((Path(__file__).parent / "request.json").read_text())
first = queue.submit(request, priority=1, job_name="sweep-a")
second = queue.submit(request, priority=1, job_name="sweep-b")
print(first.name, first.state, "position", first.position)

second.update_priority(7)  # sweep-b now runs before any waiting job of lower priority
for job in queue.list_jobs(pool="ml.m5.xlarge"):
    print(f"{job.name:10} {job.state:10} priority {job.priority}")

first.cancel()
result = second.wait(timeout=300)  # like AWS Batch: returns the last description, check its state
print(second.name, result["state"], [attempt["training_job_name"] for attempt in second.attempts])
