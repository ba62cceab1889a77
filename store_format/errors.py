"""The project's exception hierarchy: one base type, each message says what to do."""
from __future__ import annotations

__all__ = ["StoreError", "StoreLayoutError", "UnsupportedConfigError", "CorruptStoreError", "UsageError",
           "RestartFailsError"]


class StoreError(Exception):
    """Base of every error a user of this project can hit."""


class StoreLayoutError(StoreError):
    """The store on disk is not laid out as a broker would load it (missing folder, odd segment size)."""


class UnsupportedConfigError(StoreError):
    """A broker setting this project cannot reproduce (e.g. ``enableConsumeQueueExt=true``)."""


class CorruptStoreError(StoreError):
    """Corrupt commitlog bytes found while running in strict mode."""


class UsageError(StoreError):
    """A command line or a call that cannot run as given (a file that is no store file, options that
    do not go together)."""


class RestartFailsError(StoreError):
    """The broker's own restart on this store fails (its ``load()`` throws), so there is no restart to
    reproduce or predict."""
