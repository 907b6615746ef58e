"""Third-party warnings are recorded, not raised; our own still reach the filters (an error here)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from tilegate import warnlog


def _triton_file() -> str:
    import triton

    return str(Path(triton.__file__).parent / "knobs.py")


def test_a_warning_issued_in_triton_is_recorded_not_raised() -> None:
    with warnlog.recording() as got:
        for _ in range(2):  # recorded each time, even a warning meant to show once
            warnings.warn_explicit("TRITON_X is unset", UserWarning, _triton_file(), 504)
    assert got == [warnlog.Warned("UserWarning", "TRITON_X is unset", "triton/knobs.py:504")] * 2
    assert warnlog.unique(got) == [(got[0], 2)]


def test_our_own_warning_is_issued_again_and_fails_under_pytest() -> None:
    with pytest.raises(UserWarning, match="ours"), warnlog.recording() as got:
        warnings.warn("ours", UserWarning, stacklevel=1)
    assert got == []


def test_an_exception_in_the_block_wins_and_triton_warnings_are_kept() -> None:
    with pytest.raises(KeyError), warnlog.recording() as got:
        warnings.warn_explicit("from triton", DeprecationWarning, _triton_file(), 1)
        warnings.warn("ours, dropped: the exception matters more", UserWarning, stacklevel=1)
        raise KeyError("boom")
    assert [w.message for w in got] == ["from triton"]


def test_recorded_warnings_round_trip_through_json() -> None:
    w = warnlog.Warned("UserWarning", "m", "torch/x.py:3")
    assert warnlog.Warned.from_json(w.to_json()) == w
    assert warnlog.Warned.from_json({"category": "UserWarning"}) is None
