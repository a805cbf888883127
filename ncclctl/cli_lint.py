"""`ncclctl lint`, `rules`, `explain`, `fleet lint` (registered on the main app when ncclctl.cli is imported)."""

from __future__ import annotations
