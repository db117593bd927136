"""What every settings section shares: the error type and the strict section base."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ConfigError(ValueError):
    """A configuration file or value is invalid; the message says where and why."""


class Section(BaseModel):
    """One TOML table of settings: unknown keys are errors, assignments are validated.

    Every field carries a ``description``: ``noteseek init`` writes it into the template above
    the field's default, and a test fails when one is missing.
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True)
