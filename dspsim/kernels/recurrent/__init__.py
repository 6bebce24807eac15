"""The recurrent family: UNIDIRECTIONAL_SEQUENCE_LSTM (:mod:`.lstm`) and SVDF (:mod:`.svdf`)."""
