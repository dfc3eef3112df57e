"""Shared pydantic configuration for bundlegraph's own formats (strict: unknown keys are errors)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Strict(BaseModel):
    """Base of our own spec formats: ``extra="forbid"`` (a misspelled key is an error), frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)
