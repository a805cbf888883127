"""The opt-in C accelerator of the fabric reader; everything else is in pyproject.toml.

By default nothing is compiled: the wheel is pure Python (``py3-none-any``), one wheel for every Python and
platform a fleet runs, and ncclctl.fabric.lean reads fabrics with its pure-Python readers (the same results).
``NCCLCTL_BUILD_C=1`` at install or build time builds ``ncclctl.fabric._fastread`` too (``optional=True``: with no
C compiler or no Python headers the build warns and goes on without it)."""

import os

from setuptools import Extension, setup

BUILD_C = os.environ.get("NCCLCTL_BUILD_C", "").strip().lower() in ("1", "yes", "true", "on")

setup(ext_modules=[Extension("ncclctl.fabric._fastread", ["ncclctl/fabric/_fastread.c"], optional=True)]
      if BUILD_C else [])
