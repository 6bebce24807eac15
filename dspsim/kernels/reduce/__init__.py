"""The reduce family: MEAN (:mod:`.mean`), SUM (:mod:`.sum`), REDUCE_MAX and ARG_MAX (:mod:`.select`)."""
