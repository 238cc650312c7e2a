"""Child generators, many at a time: :func:`spawn_generators`, the generators of numpy's
``SeedSequence.spawn`` computed for all children of a parent together (the block comment below).
numpy only; the bottom layer, so algorithms and the protocol alike can use it.
"""

from __future__ import annotations

import numpy as np

# ``draw_rngs`` gives each draw of a fit its own generator, spawned from the fit's. numpy builds a
# child in about 12 µs (``SeedSequence.spawn`` 7 µs, ``PCG64``'s seeding 5 µs), and the privacy
# audit spawns one per release: 26 million of them, a quarter of the audit's CPU time. The
# children of one parent differ only in the last word of their entropy, so all of the hash of
# ``SeedSequence`` (O'Neill's seed_seq_fe, which numpy documents as stable across versions) but its
# final round is the same for every child, and that round and the state generation are a few
# uint32 operations on arrays. :func:`spawn_generators` computes them that way and hands each ``PCG64`` its state
# words, the same streams as ``SeedSequence.spawn``; it checks its first child against numpy's own
# on every call and uses numpy's path when they differ or the parent is not one it knows.

_INIT_A, _MULT_A = 0x43B0D7E5, 0x931E8875
_INIT_B, _MULT_B = 0x8B51F9DD, 0x58F38DED
_MIX_L, _MIX_R = 0xCA01F9DD, 0x4973F715
_M32 = 0xFFFFFFFF
FAST_SPAWN_MIN = 16  # fewer children than this: numpy's own spawn (the check costs one child)


def _words(value) -> list[int] | None:
    """numpy's uint32 words of a seed (non-negative ints, or nested sequences of them), least
    significant first; None for anything else (strings, arrays, floats)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = int(value)
        if value < 0:
            return None
        words = [value & _M32]
        value >>= 32
        while value:
            words.append(value & _M32)
            value >>= 32
        return words
    if isinstance(value, (list, tuple)):
        out: list[int] = []
        for v in value:
            w = _words(v)
            if w is None:
                return None
            out.extend(w)
        return out
    return None


class _Hash:
    """The running hash constant of seed_seq_fe's mixing (the same for every child)."""

    def __init__(self, init: int):
        self.const = init

    def mix_in(self, value):
        """hashmix: ``value`` (an int or a uint64 array of uint32 values) with the next constant."""
        value = value ^ self.const
        self.const = (self.const * _MULT_A) & _M32
        value = (value * self.const) & _M32
        return value ^ (value >> 16)


def _mix(x, y):
    r = (_MIX_L * x - _MIX_R * y) & _M32
    return r ^ (r >> 16)


def _child_pools(prefix: list[int], last: np.ndarray, pool_size: int) -> list:
    """The pools of seed sequences whose entropy words are ``prefix`` + [one of ``last``]: the
    mixing of the shared words once, the final word's round on arrays (uint64 holding uint32)."""
    h = _Hash(_INIT_A)
    pool = [h.mix_in(prefix[i] if i < len(prefix) else 0) for i in range(pool_size)]
    for src in range(pool_size):
        for dst in range(pool_size):
            if src != dst:
                pool[dst] = _mix(pool[dst], h.mix_in(pool[src]))
    for word in prefix[pool_size:]:
        for dst in range(pool_size):
            pool[dst] = _mix(pool[dst], h.mix_in(word))
    return [_mix(pool[dst], h.mix_in(last)) for dst in range(pool_size)]


def _states_u64(pools: list, n_words: int) -> np.ndarray:
    """``generate_state(n_words, np.uint64)`` of every child, shape (children, n_words)."""
    const = _INIT_B
    halves = []
    for i in range(2 * n_words):
        value = pools[i % len(pools)] ^ np.uint64(const)
        const = (const * _MULT_B) & _M32
        value = (value * np.uint64(const)) & np.uint64(_M32)
        halves.append(value ^ (value >> np.uint64(16)))
    return np.stack([halves[2 * j] | (halves[2 * j + 1] << np.uint64(32)) for j in range(n_words)], axis=1)


class _SpawnedSeed(np.random.bit_generator.ISpawnableSeedSequence):
    """A child seed sequence whose PCG64 state words were computed with its siblings'. It answers
    that request itself; anything else (other state sizes, ``spawn``, ``pool``) goes to the
    ``SeedSequence`` it stands for, built for the request (with the children it has spawned).
    It pickles with its generator."""

    def __init__(self, entropy, spawn_key: tuple, pool_size: int, words: np.ndarray):
        self.entropy, self.spawn_key, self.pool_size = entropy, spawn_key, pool_size
        self.n_children_spawned = 0
        self._words = words

    def _seq(self) -> np.random.SeedSequence:
        return np.random.SeedSequence(self.entropy, spawn_key=self.spawn_key, pool_size=self.pool_size,
                                      n_children_spawned=self.n_children_spawned)

    def generate_state(self, n_words, dtype=np.uint32):
        if n_words == len(self._words) and np.dtype(dtype) == np.dtype(np.uint64):
            return self._words.copy()
        return self._seq().generate_state(n_words, dtype)

    def spawn(self, n_children):
        children = self._seq().spawn(n_children)
        self.n_children_spawned += n_children
        return children

    @property
    def pool(self):
        return self._seq().pool

    @property
    def state(self):
        return self._seq().state


_FAST_BITGENS = (np.random.PCG64, np.random.PCG64DXSM)  # each seeds from generate_state(4, uint64)


def _counter_index() -> int | None:
    """Where ``SeedSequence``'s pickled state holds ``n_children_spawned`` (None if not found)."""
    state = np.random.SeedSequence(1, n_children_spawned=987_654).__reduce__()[2]
    found = [i for i, v in enumerate(state) if isinstance(v, int) and v == 987_654]
    return found[0] if len(found) == 1 else None


_COUNTER = _counter_index()


def _advance(seq, n: int) -> bool:
    """Count ``n`` more children as spawned from ``seq``, as ``seq.spawn(n)`` does; False when
    that cannot be done here (the caller then spawns through numpy). A ``SeedSequence`` keeps its
    counter read-only, so it is set through its pickled state and checked."""
    if isinstance(seq, _SpawnedSeed):
        seq.n_children_spawned += n
        return True
    if type(seq) is not np.random.SeedSequence or _COUNTER is None:
        return False
    state = seq.__reduce__()[2]
    expected = seq.n_children_spawned + n
    kept = (seq.entropy, seq.spawn_key, seq.pool_size, seq.pool.copy())
    try:
        seq.__setstate__(state[:_COUNTER] + (expected,) + state[_COUNTER + 1:])
        if (seq.n_children_spawned == expected and seq.entropy == kept[0] and seq.spawn_key == kept[1]
                and seq.pool_size == kept[2] and np.array_equal(seq.pool, kept[3])):
            return True
    except Exception:  # noqa: BLE001 - numpy's pickling changed: restore it, spawn through numpy
        pass
    seq.__setstate__(state)
    return False


def numpy_spawn(rng: np.random.Generator, n: int) -> list[np.random.Generator]:
    """numpy's own way: one generator of ``rng``'s kind per child of its seed sequence."""
    kind = type(rng.bit_generator)
    return [np.random.Generator(kind(s)) for s in rng.bit_generator.seed_seq.spawn(n)]


def spawn_generators(rng: np.random.Generator, n: int) -> list[np.random.Generator]:
    """:func:`numpy_spawn`'s generators, and the same parent afterwards, computed for all children
    at once when the parent's seed is a plain integer seed of a PCG64 (block comment above)."""
    bitgen = rng.bit_generator
    kind, seq = type(bitgen), bitgen.seed_seq
    if n < FAST_SPAWN_MIN or kind not in _FAST_BITGENS:
        return numpy_spawn(rng, n)
    entropy, key, pool_size = seq.entropy, tuple(seq.spawn_key), int(seq.pool_size)
    run_words, key_words = _words(entropy), _words(list(key))
    start = int(seq.n_children_spawned)
    if run_words is None or key_words is None or start + n > _M32 + 1:
        return numpy_spawn(rng, n)
    prefix = run_words + [0] * max(0, pool_size - len(run_words)) + key_words
    last = np.arange(start, start + n, dtype=np.uint64)
    states = _states_u64(_child_pools(prefix, last, pool_size), 4)
    check = np.random.SeedSequence(entropy, spawn_key=key + (start,), pool_size=pool_size)
    if not np.array_equal(check.generate_state(4, np.uint64), states[0]) or not _advance(seq, n):
        return numpy_spawn(rng, n)
    return [np.random.Generator(kind(_SpawnedSeed(entropy, key + (start + i,), pool_size, states[i])))
            for i in range(n)]
