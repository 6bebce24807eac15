"""The arithmetic family: ADD, MUL (:mod:`.elementwise`, with XNNPACK's ADD), SUB, SQUARED_DIFFERENCE, MAXIMUM,
MINIMUM (:mod:`.binary`), and the int16 power-of-two ADD / SUB of the 16x8 kernels (:mod:`.pot_add`)."""
