"""Argument types the commands share (argparse ``type=`` callables)."""

from __future__ import annotations

import argparse


def seconds_argument(text: str) -> float:
    """An argparse type: seconds, 0 or more."""
    value = float(text)
    if not 0 <= value < float("inf"):  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be 0 or more seconds, not {text}")
    return value
