"""The wave anchors are trusted only where the sampled programs bear them out."""

from kernelfoundry.evaluate.trace.counts import ProgramCounts, unanchored


def program(firsts: dict[int, list[tuple[int, int]]], loaded: dict[int, list[int]]) -> ProgramCounts:
    c = ProgramCounts(2)
    for tensor, sites in firsts.items():
        c.firsts[tensor] = list(sites)
    for tensor, sectors in loaded.items():
        c.signatures[tensor] = hash(tuple(sorted(sectors)))
    return c


def test_same_anchor_same_data_is_sharing():
    # two programs of one GEMM row read the same A panel: same first sector, same sectors
    a = program({0: [(7, 100)]}, {0: [100, 101, 102]})
    b = program({0: [(7, 100)]}, {0: [100, 101, 102]})
    assert unanchored([a, b], 2) == set()


def test_same_anchor_different_data_is_a_collapsed_anchor():
    # every program first reads element 0 through one helper, then its own row
    a = program({0: [(7, 0)]}, {0: [0, 10, 11]})
    b = program({0: [(7, 0)]}, {0: [0, 20, 21]})
    c = program({0: [(7, 30)], 1: [(9, 5)]}, {0: [30, 31], 1: [5]})
    assert unanchored([a, b, c], 2) == {0}


def test_different_anchors_claim_nothing():
    a = program({0: [(7, 10)]}, {0: [10, 11]})
    b = program({0: [(7, 20)]}, {0: [20, 21]})
    assert unanchored([a, b], 2) == set()

