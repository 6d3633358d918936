"""Names stored with vectors, per embedding provider (constants only: no model, no numpy)."""

from __future__ import annotations

USE_MODEL = "use-multilingual-v3"
E5_MODEL = "multilingual-e5-small-q4"
