"""spawn_generators: the generators of numpy's SeedSequence.spawn, computed for all children at once."""

import numpy as np
import pytest

from dperm import rngs as seeds
from dperm.algorithms import draw_rngs
from dperm.rngs import FAST_SPAWN_MIN, spawn_generators


def numpy_children(rng, n):
    return [np.random.Generator(type(rng.bit_generator)(s)) for s in rng.bit_generator.seed_seq.spawn(n)]


def same_streams(ours, theirs):
    return len(ours) == len(theirs) and all(
        np.array_equal(a.integers(0, 2**63, 3), b.integers(0, 2**63, 3)) and np.array_equal(a.normal(size=2), b.normal(size=2))
        for a, b in zip(ours, theirs))


ENTROPIES = [0, 1, 2**32 - 1, 2**32, 2**63 - 1, 2**64 + 3, 10**30, [0], [1, 2, 3], [5, 2**63 - 1, 0, 7, 9, 11],
             [2**40, [3, 4]]]


@pytest.mark.parametrize("entropy", ENTROPIES, ids=str)
@pytest.mark.parametrize("bitgen", [np.random.PCG64, np.random.PCG64DXSM])
def test_the_same_generators_and_parent_as_numpy(entropy, bitgen):
    ours = np.random.Generator(bitgen(np.random.SeedSequence(entropy)))
    theirs = np.random.Generator(bitgen(np.random.SeedSequence(entropy)))
    for n in (FAST_SPAWN_MIN, 57, 3, 200):  # twice from one parent: the counter moves as numpy's
        assert same_streams(spawn_generators(ours, n), numpy_children(theirs, n))
        assert ours.bit_generator.seed_seq.n_children_spawned == theirs.bit_generator.seed_seq.n_children_spawned
    assert same_streams([ours], [theirs])  # the parent's own stream is untouched


def test_parents_with_spawn_keys_and_other_pool_sizes():
    for key, pool in [((3, 2**33), 4), ((0,), 8), ((), 5), ((1, 2, 3, 4, 5), 4)]:
        ours = np.random.default_rng(np.random.SeedSequence(7, spawn_key=key, pool_size=pool))
        theirs = np.random.default_rng(np.random.SeedSequence(7, spawn_key=key, pool_size=pool))
        assert same_streams(spawn_generators(ours, 40), numpy_children(theirs, 40))


def test_children_spawn_further_as_numpy_children_do():
    ours = spawn_generators(np.random.default_rng(11), 30)
    theirs = numpy_children(np.random.default_rng(11), 30)
    for _ in range(2):
        assert same_streams(spawn_generators(ours[4], 20), numpy_children(theirs[4], 20))
        assert same_streams(spawn_generators(ours[5], 2), numpy_children(theirs[5], 2))
    seq, real = ours[7].bit_generator.seed_seq, theirs[7].bit_generator.seed_seq
    assert np.array_equal(seq.generate_state(3), real.generate_state(3))  # other requests: numpy's
    assert np.array_equal(seq.pool, real.pool) and seq.spawn_key == real.spawn_key


def test_other_bit_generators_and_seeds_take_numpy_path(monkeypatch):
    monkeypatch.setattr(seeds, "_child_pools", lambda *a: pytest.fail("fast path taken"))
    word_array = np.array([3, 4], dtype=np.uint32)
    for make, n in [(lambda: np.random.Generator(np.random.Philox(3)), 20),
                    (lambda: np.random.default_rng(np.random.SeedSequence(word_array)), 20),
                    (lambda: np.random.default_rng(5), FAST_SPAWN_MIN - 1)]:
        assert same_streams(spawn_generators(make(), n), numpy_children(make(), n))


def test_a_wrong_fast_state_falls_back_to_numpy(monkeypatch):
    """The first child is checked against numpy's: a broken hash cannot change a stream."""
    real = seeds._states_u64
    monkeypatch.setattr(seeds, "_states_u64", lambda pools, n: real(pools, n) ^ np.uint64(1))
    ours, theirs = np.random.default_rng(9), np.random.default_rng(9)
    assert same_streams(spawn_generators(ours, 50), numpy_children(theirs, 50))
    assert ours.bit_generator.seed_seq.n_children_spawned == 50


def test_an_unsettable_counter_falls_back_to_numpy(monkeypatch):
    monkeypatch.setattr(seeds, "_COUNTER", None)
    ours, theirs = np.random.default_rng(9), np.random.default_rng(9)
    assert same_streams(spawn_generators(ours, 50), numpy_children(theirs, 50))
    assert ours.bit_generator.seed_seq.n_children_spawned == 50


def test_the_check_can_fail():
    """same_streams tells different children apart (the tests above could fail)."""
    a = spawn_generators(np.random.default_rng(1), 20)
    b = numpy_children(np.random.default_rng(2), 20)
    assert not same_streams(a, b)


def test_draw_rngs_uses_it():
    assert same_streams(draw_rngs(np.random.default_rng(4), 64), numpy_children(np.random.default_rng(4), 64))
    with pytest.raises(ValueError, match="draws must be >= 1"):
        draw_rngs(np.random.default_rng(4), 0)


@pytest.mark.parametrize("entropy", ENTROPIES, ids=str)
def test_the_fast_path_is_taken_and_every_childs_state_is_numpys(entropy):
    """The fallback above would hide a wrong hash: the common case must not need it."""
    rng = np.random.default_rng(np.random.SeedSequence(entropy))
    children = spawn_generators(rng, 300)
    assert all(isinstance(c.bit_generator.seed_seq, seeds._SpawnedSeed) for c in children)
    real = np.random.SeedSequence(entropy).spawn(300)
    ours = np.stack([c.bit_generator.seed_seq.generate_state(4, np.uint64) for c in children])
    assert np.array_equal(ours, np.stack([s.generate_state(4, np.uint64) for s in real]))


def test_a_fast_child_pickles_with_its_stream():
    import pickle

    child = spawn_generators(np.random.default_rng(3), 20)[5]
    child.normal(size=3)
    copy = pickle.loads(pickle.dumps(child))
    assert np.array_equal(child.normal(size=4), copy.normal(size=4))
