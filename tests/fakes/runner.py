"""Command runners for tests that must not depend on this machine's tools."""

from __future__ import annotations

from ncclnb.collectors.runner import CommandResult


def no_commands(argv, timeout):
    """Every command is absent, as on a bare container."""
    return CommandResult(None, error="not found")
