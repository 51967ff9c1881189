"""Jobs and their attempts: the model, the state machine and its legal changes, how an attempt ended, and what a SageMaker report means for a job."""
