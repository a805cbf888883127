"""Lint: rules over a node model (and a fleet of them), registered explicitly in :mod:`ncclctl.registry`."""
