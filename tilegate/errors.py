"""Errors that mean "cannot judge" (exit code 2), as opposed to a verdict (exit code 1)."""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAIL = 1
EXIT_CANNOT_JUDGE = 2


class InputError(Exception):
    """Bad or missing input: the gate cannot judge. The message names the file or case and what to do."""
