"""NCCL's own semantics, in one place: what NCCL (NVIDIA/nccl, 2.30.7 unless a version is given) does with the
text an administrator writes, so that every command judges a setting the same way.

* :mod:`ncclctl.nccl.version`: release numbers (:class:`~ncclctl.nccl.version.Version`, the default release, the
  release list) and the one parser for them.
* :mod:`ncclctl.nccl.params`: C integer parsing as NCCL calls it (``strtol``/``strtoll``, ``atoi``, ``(int)``
  casts) and ``ncclLoadParam``.
* :mod:`ncclctl.nccl.settings`: where a variable's value comes from (environment, user conf file,
  ``/etc/nccl.conf``), the conf line syntax and the precedence.
* :mod:`ncclctl.nccl.variables`: the table of variables each release reads.
* :mod:`ncclctl.nccl.values`: value syntaxes of particular variables (path levels, algorithm/protocol lists).
* :mod:`ncclctl.nccl.lists`: the ``NCCL_IB_HCA`` / ``NCCL_SOCKET_IFNAME`` list syntax and matching.
* :mod:`ncclctl.nccl.confgen`: an ``nccl.conf`` derived from the node model.

Modules here import nothing heavy at module level (the CLI imports :mod:`ncclctl.nccl.version` at start-up).
"""
