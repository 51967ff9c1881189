"""The checks the configuration document's parser (domain/config/config_document.py) shares with the
modules that parse its other sections (costs, spot, training plans, warm pools), so every section
words its refusals alike and names the key path the same way."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from smq_lambda.errors import ConfigError


class SectionParser(Protocol):
    def fail(self, path: str, problem: str) -> ConfigError: ...

    def section(self, value: Any, path: str, shape: str) -> dict[str, Any]: ...

    def known(self, members: Mapping[str, Any], path: str, keys: tuple[str, ...]) -> None: ...

    def count(
        self, value: Any, path: str, *, maximum: int, unit: str = ..., minimum: int = ..., nullable: bool = ...
    ) -> int: ...

    def number(
        self, value: Any, path: str, *, maximum: float, what: str, minimum: float = ..., above_minimum: bool = ...
    ) -> float: ...

    def tag_key(self, value: Any, path: str) -> str: ...

    def team_name(self, team: str, *, section: str = ...) -> None: ...
