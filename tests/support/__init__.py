"""Test support shared by every test level: in-memory fakes of the ports and AWS (moto) helpers."""
