"""Governance: the rules that guard the bill for every training job in the account, queued or not.

Each rule is a pure function over values (a job, a SageMaker description, the policy) that returns
actions carrying a reason a person can read, like `scheduling.decide`; adapters carry them out.

- `policy`: the one policy document and its parser;
- `limits`: required tags and limits, at submission and for jobs started outside the queue;
- `idle`: the idle-GPU CloudWatch alarms and what their notifications mean;
- `spot`: falling back from managed spot to on-demand, and spot jobs SageMaker stopped;
- `retry`: which failures are the infrastructure's (retried) and which the training code's (final);
- `notices`: what a job's owner is told of each change to the job, with its SNS filter attributes.
"""
