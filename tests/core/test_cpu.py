"""dspsim.simd.cpu: the peers' accumulator on this CPU."""
import pytest

from dspsim.simd.cpu import host_has_vnni, peer_accumulator


@pytest.mark.parametrize("engine", ["fbgemm", "onnxruntime"])
def test_peer_accumulator_saturates_pairs_exactly_when_the_cpu_lacks_vnni(engine):
    acc = peer_accumulator(engine)
    assert acc.bits == 32 and acc.pair_saturation == (not host_has_vnni(engine))


def test_peer_accumulator_names_the_engines_it_knows():
    with pytest.raises(ValueError, match="peer_accumulator: engine must be"):
        peer_accumulator("xnnpack")
