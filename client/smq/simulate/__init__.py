"""`smq simulate`: replay a workload against the real scheduling code, and against baselines."""
