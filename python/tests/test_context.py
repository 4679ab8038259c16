"""Contexts: kn.use as a call and as a with-block, seeds, stochastic rounding, the default
context from KILN_DEVICE."""
import numpy as np
import pytest

import kiln as kn
from conftest import DEVICE


def test_with_block_restores():
    outer = kn.context()
    with kn.use(device=DEVICE, seed=7) as c:
        assert kn.context() is c and c is not outer
        t = kn.ones(3)
        assert t.ctx is c
    assert kn.context() is outer
    assert t.ctx is c                                  # tensors keep their context
    assert (t.get() == 1).all()


def test_use_call_switches():
    a = kn.use(device=DEVICE, seed=1)
    assert kn.context() is a.ctx
    assert kn.context().backend() in ("cpu", "cuda")
    assert kn.context().description()


def test_seed_reproducible():
    with kn.use(device=DEVICE, seed=11):
        x = kn.randn(100).get()
    with kn.use(device=DEVICE, seed=11):
        y = kn.randn(100).get()
    with kn.use(device=DEVICE, seed=12):
        z = kn.randn(100).get()
    np.testing.assert_array_equal(x, y)
    assert not np.array_equal(x, z)
    with kn.use(device=DEVICE, seed=11):
        kn.randn(100)
        kn.seed(11)                                    # reseeding restarts the stream
        np.testing.assert_array_equal(kn.randn(100).get(), x)


def test_stochastic_rounding():
    x = 1.0 + 2.0 ** -12                               # a quarter of an fp16 ulp above 1
    with kn.use(device=DEVICE, stochastic_round=False):
        src = kn.full(20000, x, dtype=kn.float32)
        h = kn.empty(20000, dtype=kn.float16)
        h[...] = src
        assert (h.get() == 1.0).all()                  # nearest: always 1
    with kn.use(device=DEVICE, stochastic_round=True, seed=3):
        src = kn.full(20000, x, dtype=kn.float32)
        h = kn.empty(20000, dtype=kn.float16)
        h[...] = src
        v = h.get().astype(np.float64)
        assert set(np.unique(v)) <= {1.0, 1.0 + 2.0 ** -10}
        assert abs(v.mean() - x) < 2e-5                # unbiased on average


def test_default_context_device():
    c = kn._kiln.Context(device=0)                     # from KILN_DEVICE
    assert c.backend() == ("cuda" if DEVICE == "cuda" else "cpu")


def test_context_errors():
    with pytest.raises(ValueError) as e:
        kn._kiln.Context(device=9)
    assert "device" in str(e.value)
    with pytest.raises(TypeError):
        kn._kiln.set_current(5)


def test_threads_do_not_change_results(rng):
    """threads= picks the CPU context's thread count; the values are the same bit for bit."""
    a = rng.uniform(-2, 2, size=(300, 700)).astype(np.float32)
    outs = []
    for n in (1, 3):
        with kn.use(device="cpu", seed=5, threads=n) as c:
            assert c.threads() == n
            A = kn.array(a)
            A[...] = kn.rsqrt(kn.var(A, axis=1, keepdims=True) + 1e-5) * (A - kn.mean(A, axis=1, keepdims=True))
            r = kn.rand(300, 700)
            outs.append((A.get(), kn.sum(A * r).get(), kn.evaluate(r).get()))
    for x, y in zip(outs[0], outs[1]):
        assert np.array_equal(x, y)
    for bad in (-1, 257, 2.5):
        with pytest.raises(ValueError) as e:
            kn.use(device="cpu", threads=bad)
        assert "threads" in str(e.value)
