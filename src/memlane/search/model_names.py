"""Names stored with vectors, per embedding provider (constants only: no model, no numpy)."""

from __future__ import annotations

USE_MODEL = "use-multilingual-v3"
E5_MODEL = "multilingual-e5-small-q4"

# Dimensions of the vectors each model writes (toy models say theirs in their name).
MODEL_DIMENSIONS = {USE_MODEL: 512, E5_MODEL: 384}


def dimensions(model: str) -> int | None:
    """How many numbers a vector of ``model`` holds; None for a model memlane does not know."""
    if model.startswith("toy-") and model[4:].isdigit():
        return int(model[4:])
    return MODEL_DIMENSIONS.get(model)
