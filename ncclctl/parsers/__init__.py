"""Pure text parsers for the command outputs ncclctl reads (live or from fixtures).

One module per tool: :mod:`.ibstat`, :mod:`.ibv_devinfo`, :mod:`.ibdev2netdev`, :mod:`.show_gids`,
:mod:`.mlnx_qos`, :mod:`.dcb`, :mod:`.iplink`, :mod:`.smi_topo`, :mod:`.lldp`.

Every public ``parse_*`` function takes the output as ``str`` plus a keyword-only ``source`` (the argv
or fixture path used in error messages), does no I/O, and returns frozen dataclasses (or tuples of
them). Anything it cannot interpret raises :class:`ncclctl.errors.ParseError` with ``path``, ``line``
and ``fix`` set; no other exception escapes. Only the standard library is imported, so importing a
parser module costs next to nothing at CLI start-up.
"""
