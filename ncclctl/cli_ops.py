"""Operations commands: `conf generate`, `facts` (registered on the main app when ncclctl.cli is imported)."""

from __future__ import annotations
