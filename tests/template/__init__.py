"""Tests of template.yaml, openapi.yaml, samconfig.toml and the template reader."""
