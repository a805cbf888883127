"""Plans derived from the node model: GPU/NIC paths (:mod:`.paths`), rails (:mod:`.rails`), rail-pinned graph
files (:mod:`.rings`), and the comparison with ``nvidia-smi topo -m`` (:mod:`.smi`)."""
