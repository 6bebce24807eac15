"""The quantize family: accumulators and codes requantized (:mod:`.requantize`: the one place accumulators
become codes, and TFLite's Requantize of codes), CAST (:mod:`.cast`), XNNPACK's QUANTIZE converts (:mod:`.xnnpack`).
The float <-> int quantizers of TensorFlow, PyTorch and ONNX are :mod:`dspsim.quantize`."""
