# The optional C readers (ncclctl/fabric/_fastread.c); see ncclctl/fabric/lean.py.
from typing import Any, Callable, Mapping

_Result = tuple[list[tuple[str, str, int, int, int | None, str]], int, int, int, int, bool, list[tuple[str, str]]]

def topology(text: str | bytes, lanes: Mapping[str, float], rate: Callable[[str, str], float | None], hcas: dict[str, Any],
             hca_links: dict[tuple[str, int], Any], switch_links: list[tuple], /) -> _Result | None: ...
def ports(text: str | bytes, lanes: Mapping[str, float], rate: Callable[[str, str], float | None], hcas: dict[str, Any],
          hca_links: dict[tuple[str, int], Any], switch_links: list[tuple], /) -> _Result | None: ...
def endpoints(hcas: dict[str, Any], hca_links: dict[tuple[str, int], Any],
              aggregation: set[str], no_host: set[str], endpoint: type, /
              ) -> tuple[dict[str, dict[str, Any]], list[tuple[str, str, int]]] | None: ...
