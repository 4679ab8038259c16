"""Randomized forms: random ranks and sizes (1..9, including 1), random basic-slicing views
(steps, negative steps, dropped axes), random expression trees of operators, functions and
reductions, random dtypes; each compared with a float64 numpy evaluation of the same tree
on the same (dtype-rounded) inputs. The seed is printed (KILN_TEST_SEED replays it)."""
import numpy as np
import pytest

import kiln as kn
from conftest import RED_RTOL, close, make, poisoned

UN = [
    (kn.exp, np.exp, "bounded"), (kn.tanh, np.tanh, None), (kn.sigmoid, lambda x: 1 / (1 + np.exp(-x)), None),
    (kn.relu, lambda x: np.maximum(x, 0), None), (abs, np.abs, None), (lambda x: -x, lambda x: -x, None),
    (kn.square, np.square, "bounded"), (lambda x: kn.sqrt(abs(x) + 1), lambda x: np.sqrt(np.abs(x) + 1), None),
    (lambda x: kn.log(abs(x) + 1), lambda x: np.log(np.abs(x) + 1), None),
]
BIN = [
    (lambda a, b: a + b, np.add), (lambda a, b: a - b, np.subtract), (lambda a, b: a * b, np.multiply),
    (kn.maximum, np.maximum), (kn.minimum, np.minimum),
    (lambda a, b: a / (abs(b) + 1), lambda a, b: a / (np.abs(b) + 1)),
]
RED = [(kn.sum, np.sum), (kn.mean, np.mean), (kn.max, np.max), (kn.min, np.min), (kn.var, np.var)]


def random_view(rng, t, ref):
    """A random basic-slicing view of t (and the same view of ref)."""
    idx = []
    for n in t.shape:
        r = rng.random()
        if r < 0.15 and n > 1:
            idx.append(int(rng.integers(-n, n)))
        elif r < 0.6:
            step = int(rng.choice([1, 2, 3, -1, -2]))
            lo, hi = sorted(rng.integers(0, n + 1, size=2))
            if hi == lo:
                hi = min(n, lo + 1)
                lo = hi - 1
            idx.append(slice(lo, hi, step) if step > 0 else slice(hi - 1, (lo - 1) if lo > 0 else None, step))
        else:
            idx.append(slice(None))
    idx = tuple(idx)
    return t[idx], ref[idx]


def leaf(rng, shape, dt):
    base_shape = tuple(int(s + rng.integers(0, 3)) for s in shape)
    t, ref = make(rng, base_shape, dt, -2, 2)
    if rng.random() < 0.5:
        v, vref = random_view(rng, t, ref)
        if v.ndim >= 1 and v.size > 0:
            return v, vref
    return t, ref


def view_of_shape(rng, shape, dt):
    """A non-contiguous view of exactly `shape` (steps, negative steps, offsets, and
    sometimes a transpose), with its float64 values."""
    perm = rng.permutation(len(shape)) if rng.random() < 0.3 else np.arange(len(shape))
    pshape = tuple(shape[i] for i in perm)
    steps = [int(rng.choice([1, 2, -1, -3])) for _ in pshape]
    offs = [int(rng.integers(0, 2)) for _ in pshape]
    base_shape = tuple(n * abs(st) + o + 1 for n, st, o in zip(pshape, steps, offs))
    t, ref = make(rng, base_shape, dt, -2, 2)
    idx = []
    for n, st, o, bn in zip(pshape, steps, offs, base_shape):
        if st > 0:
            idx.append(slice(o, o + n * st, st))
        else:
            start = bn - 1 - o
            stop = start + n * st
            idx.append(slice(start, stop if stop >= 0 else None, st))
    idx = tuple(idx)
    v, vref = t[idx], ref[idx]
    inv = np.argsort(perm)
    v, vref = v.transpose(tuple(int(i) for i in inv)), vref.transpose(inv)
    assert v.shape == tuple(shape), (v.shape, shape)
    return v, vref


def tree(rng, shape, dt, depth):
    """(kiln expr, numpy value) of a random tree whose result has `shape` (or broadcasts to it)."""
    if depth == 0 or rng.random() < 0.25:
        if rng.random() < 0.15:
            c = float(np.round(rng.uniform(-2, 2), 2))
            return c, c
        t = view_of_shape(rng, shape, dt) if rng.random() < 0.5 else make(rng, shape, dt, -2, 2)
        if rng.random() < 0.3 and len(shape) > 0:
            # a broadcast operand: one axis of size 1
            s2 = list(shape)
            s2[int(rng.integers(0, len(shape)))] = 1
            t = make(rng, tuple(s2), dt, -2, 2)
        return t
    r = rng.random()
    if r < 0.35:
        f, g, _ = UN[int(rng.integers(0, len(UN)))]
        x, xv = tree(rng, shape, dt, depth - 1)
        if isinstance(x, float):
            return tree(rng, shape, dt, 0)
        return f(x), g(xv)
    if r < 0.8:
        f, g = BIN[int(rng.integers(0, len(BIN)))]
        a, av = tree(rng, shape, dt, depth - 1)
        b, bv = tree(rng, shape, dt, depth - 1)
        if isinstance(a, float) and isinstance(b, float):
            return tree(rng, shape, dt, 0)
        return f(a, b), g(av, bv)
    # a reduction over one axis, kept, so it broadcasts back
    if not shape:
        return tree(rng, shape, dt, 0)
    ax = int(rng.integers(0, len(shape)))
    f, g = RED[int(rng.integers(0, len(RED)))]
    x, xv = make(rng, shape, dt, -2, 2)
    return f(x, axis=ax, keepdims=True), g(xv, axis=ax, keepdims=True)


@pytest.mark.parametrize("dt", [kn.float32, kn.float64, kn.float16], ids=lambda d: d.name)
def test_random_trees(rng, dt):
    for _ in range(40):
        nd = int(rng.integers(1, 5))
        shape = tuple(int(rng.integers(1, 10)) for _ in range(nd))
        e, ev = tree(rng, shape, dt, 3)
        if isinstance(e, float):
            continue
        ev = np.broadcast_to(ev, shape)
        out = poisoned(shape, dt)
        out[...] = e
        tol = {"float32": 1e-4, "float64": 1e-10, "float16": 3e-2}[dt.name]
        if dt == kn.float16:
            # a tree's value may leave f16's range (exp of exp): there the result rounds to an
            # infinity of the reference's sign (the kernel computes in f32 and rounds once);
            # values within 1 % of the largest f16 are left out (either side may be right)
            got = np.asarray(out.get(), dtype=np.float64)
            big = np.abs(ev) >= 65520.0 * 1.01
            near = (np.abs(ev) >= 65504.0 * 0.99) & ~big
            assert np.array_equal(got[big], np.copysign(np.inf, ev[big])), (got[big], ev[big])
            keep = ~big & ~near
            close(got[keep], ev[keep], dt, rtol=tol, atol=tol)
            continue
        close(out, ev, dt, rtol=tol, atol=tol)


@pytest.mark.parametrize("dt", [kn.float32, kn.float64, kn.int32], ids=lambda d: d.name)
def test_random_views_reductions(rng, dt):
    for _ in range(30):
        nd = int(rng.integers(1, 5))
        shape = tuple(int(rng.integers(1, 10)) for _ in range(nd))
        t, ref = leaf(rng, shape, dt)
        k = int(rng.integers(0, t.ndim + 1))
        axes = tuple(sorted(rng.choice(t.ndim, size=k, replace=False).tolist())) if k else None
        keep = bool(rng.integers(0, 2))
        for f, g in RED:
            if dt.kind == "i" and f in (kn.var,):
                continue
            r = f(t, axis=axes, keepdims=keep)
            ref_r = g(ref, axis=axes, keepdims=keep)
            tol = RED_RTOL[dt.name] * 10 if dt.kind == "f" else 1e-6
            close(r, ref_r, r.dtype, rtol=tol, atol=tol)


def test_empty_reductions():
    z = kn.zeros(0, 3)
    assert kn.sum(z).item() == 0 and kn.sum(z, 0).get().tolist() == [0, 0, 0]
    for f in (kn.max, kn.min, kn.argmax, kn.argmin):
        with pytest.raises(ValueError) as e:
            f(z)
        assert "'a'" in str(e.value)
        with pytest.raises(ValueError):
            f(z, axis=0)
    assert kn.max(z, axis=1).shape == (0,)
