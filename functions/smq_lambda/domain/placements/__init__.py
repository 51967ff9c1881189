"""Where a job runs: its placements in the order it prefers them, its purchase options, training plans at submission, and spot interruption rates."""
