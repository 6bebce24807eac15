"""The MAC family: FULLY_CONNECTED (:mod:`.dense`), CONV_2D and DEPTHWISE_CONV_2D (:mod:`.conv`), TRANSPOSE_CONV,
BATCH_MATMUL, and their cores: the exact int32 GEMM and conv on packed weights (:mod:`.gemm`) and the depthwise
tap-pair core (:mod:`.depthwise_core`)."""
