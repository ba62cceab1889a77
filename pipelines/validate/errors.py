"""The error ``validate`` raises when it cannot run at all (as opposed to expectations that fail)."""
from __future__ import annotations

from store_format.errors import StoreError

__all__ = ["ValidationSetupError"]


class ValidationSetupError(StoreError):
    """Validation cannot run (no tables, Great Expectations missing, unusable docs folder)."""
