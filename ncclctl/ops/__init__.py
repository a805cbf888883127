"""Operations around the model: Ansible facts (:mod:`.facts`), fleet inventories (:mod:`.inventory`) and the one
atomic, idempotent file writer (:mod:`.fileio`)."""
