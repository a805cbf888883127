"""Plans derived from the node model: GPU/NIC paths (:mod:`.paths`), rails (:mod:`.rails`), rail-pinned graph
files (:mod:`.rings`), the ``nccl.conf`` of ``conf generate`` (:mod:`.confgen`), and the comparison with ``nvidia-smi topo -m`` (:mod:`.smi`)."""
