"""Operations on top of everything else: Ansible facts (:mod:`.facts`: the probe, the model, a lint summary in one
document). The fleet inventory is :mod:`ncclctl.inventory`, the one file writer :mod:`ncclctl.fileio`."""
