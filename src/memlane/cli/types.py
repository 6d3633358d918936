"""Option types shared by CLI commands."""

from __future__ import annotations

import math
from typing import Any

import click


class FiniteFloatRange(click.FloatRange):
    """A float within bounds; ``nan`` and ``inf`` are refused (NaN passes every bound check)."""

    name = "finite float range"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number
