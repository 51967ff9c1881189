"""Replaying a workload against the real scheduling code in virtual time (`smq simulate`)."""
