"""ncclctl: probe GPU nodes, emit and validate NCCL topology files, lint NCCL networking.

This module must stay import-free: ``ncclctl --version`` and every CLI start-up pay for it.
"""

__version__ = "0.1.0"

#: Version of every ``--format json`` document and of the node model's JSON form.
JSON_SCHEMA_VERSION = 1
