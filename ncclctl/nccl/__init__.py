"""NCCL's own semantics, in one place: what NCCL (NVIDIA/nccl, 2.30.7 unless a version is given) does with the
text an administrator writes, so that every command judges a setting the same way.

* :mod:`ncclctl.nccl.version`: release numbers (:class:`~ncclctl.nccl.version.Version`, the default release, the
  release list) and the one parser for them.
* :mod:`ncclctl.nccl.changes`: the release the model follows (2.30.7) and the behaviour changes after it, per
  release: where each was checked, whether it is modelled, whether it concerns a node.
* :mod:`ncclctl.nccl.params`: C number parsing as NCCL calls it (``strtol``/``strtoll``, ``atoi``, ``(int)``
  casts, ``strtof``) and ``ncclLoadParam``.
* :mod:`ncclctl.nccl.settings`: where a variable's value comes from (environment, user conf file,
  ``/etc/nccl.conf``), the conf line syntax and the precedence.
* :mod:`ncclctl.nccl.variables`: the table of variables each release reads.
* :mod:`ncclctl.nccl.values`: value syntaxes of particular variables (path levels, algorithm/protocol lists).
* :mod:`ncclctl.nccl.lists`: the ``NCCL_IB_HCA`` / ``NCCL_SOCKET_IFNAME`` list syntax and matching.
* :mod:`ncclctl.nccl.xml`: NCCL's XML reader (``graph/xml.cc``) byte for byte.
* :mod:`ncclctl.nccl.detect`: the topology NCCL's detection builds from a node, written as NCCL XML (what
  ``topo generate`` writes and ``topo predict --root`` reads).
* :mod:`ncclctl.nccl.railids`: rail/plane ids as NCCL 2.30.7+ reads them, and when they are written.
* :mod:`ncclctl.nccl.build`, :mod:`~ncclctl.nccl.system`, :mod:`~ncclctl.nccl.paths`,
  :mod:`~ncclctl.nccl.search`, :mod:`~ncclctl.nccl.connect`, :mod:`~ncclctl.nccl.tuning`,
  :mod:`~ncclctl.nccl.predict`: NCCL's model of a node (``topo.cc``, ``paths.cc``, ``search.cc`` ...).

This package sits below every judgement (``topo``, ``lint``, ``logs``, ``plan``, ``fabric``): it imports only the
model and the vocabulary below it (``[tool.importlinter]`` in pyproject.toml).

Modules here import nothing heavy at module level (the CLI imports :mod:`ncclctl.nccl.version` at start-up).
"""
