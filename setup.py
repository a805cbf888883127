"""The optional C accelerator of the fabric reader; everything else is in pyproject.toml.

``optional=True``: where there is no C compiler or no Python headers, the build prints a warning and installs
ncclctl without it (ncclctl.fabric.lean then uses its pure-Python readers, which give the same results)."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("ncclctl.fabric._fastread", ["ncclctl/fabric/_fastread.c"], optional=True)])
