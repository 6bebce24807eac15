"""The nonlinear family: table lookups, LOGISTIC / TANH, HARD_SWISH, PRELU, RSQRT (:mod:`.pointwise`), the int16
LOGISTIC / TANH (:mod:`.int16`), SOFTMAX and LOG_SOFTMAX (:mod:`.softmax`), L2_NORMALIZATION (:mod:`.normalization`)."""
