"""Analysis commands (rank, rate, simulate, report, monitor) registered on the CLI."""

from __future__ import annotations
