"""SageMaker managed warm pools as the queue counts them, and when a job may reuse one."""
