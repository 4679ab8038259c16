"""kn.dot / @ against numpy matmul: shapes (vectors, batches), transposed and strided views,
dtypes, out= with alpha/beta, relu and bias epilogue."""
import numpy as np
import pytest

import kiln as kn
from conftest import close, make, poisoned

TOL = {"float32": 1e-4, "float64": 1e-11, "float16": 2e-2, "bfloat16": 6e-2}


@pytest.mark.parametrize("dt", [kn.float32, kn.float64, kn.float16, kn.bfloat16], ids=lambda d: d.name)
@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (7, 13, 5), (33, 129, 17)])
def test_dot_shapes(rng, dt, m, k, n):
    a, av = make(rng, (m, k), dt, -1, 1)
    b, bv = make(rng, (k, n), dt, -1, 1)
    r = kn.dot(a, b)
    assert r.dtype is dt and r.shape == (m, n)
    close(r, av @ bv, dt, rtol=TOL[dt.name], atol=TOL[dt.name] * np.sqrt(k))
    close(a @ b, av @ bv, dt, rtol=TOL[dt.name], atol=TOL[dt.name] * np.sqrt(k))


def test_dot_views_and_vectors(rng):
    dt = kn.float32
    a, av = make(rng, (20, 9), dt, -1, 1)
    b, bv = make(rng, (11, 20), dt, -1, 1)
    close(kn.dot(a.T, b.T), av.T @ bv.T, dt, rtol=1e-4, atol=1e-5)
    close(kn.dot(a[::2, 1:], b[1::3, ::2].T[1:9, :]), av[::2, 1:] @ bv[1::3, ::2].T[1:9, :], dt, rtol=1e-4,
          atol=1e-5)
    x, xv = make(rng, (9,), dt, -1, 1)
    close(kn.dot(a, x), av @ xv, dt, rtol=1e-4, atol=1e-5)
    close(kn.dot(xv[:9] @ np.eye(9), x), xv @ xv, dt, rtol=1e-4, atol=1e-5)
    close(x @ a.T, xv @ av.T, dt, rtol=1e-4, atol=1e-5)
    # lazy operands are evaluated first
    close(kn.dot((a * 2).T, kn.sigmoid(b).T), (av * 2).T @ (1 / (1 + np.exp(-bv))).T, dt, rtol=1e-4, atol=1e-5)
    # numpy operands
    close(kn.dot(av.T.astype(np.float32), b.T), av.T @ bv.T, dt, rtol=1e-4, atol=1e-5)


def test_dot_batched(rng):
    dt = kn.float32
    a, av = make(rng, (3, 4, 6), dt, -1, 1)
    b, bv = make(rng, (6, 5), dt, -1, 1)
    close(kn.dot(a, b), np.matmul(av, bv), dt, rtol=1e-4, atol=1e-5)
    c, cv = make(rng, (3, 6, 2), dt, -1, 1)
    close(a @ c, np.matmul(av, cv), dt, rtol=1e-4, atol=1e-5)


def test_dot_out_alpha_beta_relu_bias(rng):
    dt = kn.float32
    a, av = make(rng, (8, 12), dt, -1, 1)
    b, bv = make(rng, (12, 10), dt, -1, 1)
    bias, biasv = make(rng, (10,), dt, -1, 1)
    out = poisoned((8, 10), dt)
    r = kn.dot(a, b, out=out)
    assert r is out
    close(out, av @ bv, dt, rtol=1e-4, atol=1e-5)
    prev = out.get().astype(np.float64)
    kn.dot(a, b, out=out, alpha=0.5, beta=2.0)
    close(out, 0.5 * (av @ bv) + 2.0 * prev, dt, rtol=1e-4, atol=1e-5)
    out2 = poisoned((8, 10), dt)
    kn.dot(a, b, out=out2, relu=True, bias=bias)
    close(out2, np.maximum(av @ bv + biasv, 0), dt, rtol=1e-4, atol=1e-5)
    # out of another dtype: computed in out's dtype
    o16 = poisoned((8, 10), kn.float16)
    kn.dot(a, b, out=o16)
    close(o16, av @ bv, kn.float16, rtol=2e-2, atol=2e-2)
    # out as a strided view
    big = poisoned((10, 20), dt)
    kn.dot(a, b, out=big[1:9, ::2])
    close(big[1:9, ::2], av @ bv, dt, rtol=1e-4, atol=1e-5)
    assert np.isnan(big[0].get()).all()


def test_dot_mixed_and_int(rng):
    a, av = make(rng, (4, 5), kn.float16, -1, 1)
    b, bv = make(rng, (5, 3), kn.float32, -1, 1)
    r = kn.dot(a, b)
    assert r.dtype is kn.float32
    close(r, av @ bv, kn.float32, rtol=1e-4, atol=1e-5)
    i, iv = make(rng, (4, 5), kn.int32)
    j, jv = make(rng, (5, 3), kn.int32)
    r = kn.dot(i, j)
    assert r.dtype is kn.int32
    np.testing.assert_array_equal(r.get(), (iv @ jv).astype(np.int32))


def test_dot_errors(rng):
    a, _ = make(rng, (4, 5), kn.float32)
    b, _ = make(rng, (4, 5), kn.float32)
    with pytest.raises(ValueError) as e:
        kn.dot(a, b)
    assert "'a'" in str(e.value) and "'b'" in str(e.value)
    with pytest.raises(ValueError) as e:
        kn.dot(a, b.T, out=kn.empty(3, 3))
    assert "'out'" in str(e.value)
    with pytest.raises(TypeError) as e:
        kn.dot(a, b.T, out=np.zeros((4, 4)))
    assert "'out'" in str(e.value)
    with pytest.raises(ValueError):
        kn.dot(kn.array(1.0), a)
    with pytest.raises(ValueError) as e:
        kn.dot(a, b.T, out=kn.empty(4, 4), bias=kn.zeros(7))
    assert "bias" in str(e.value)


@pytest.mark.parametrize("dt", [kn.float32, kn.float64, kn.float16, kn.bfloat16], ids=lambda d: d.name)
def test_dot_bias_rows_and_stats(rng, dt):
    a, av = make(rng, (9, 12), dt, -1, 1)
    b, bv = make(rng, (12, 6), dt, -1, 1)
    rb, rbv = make(rng, (9,), dt, -1, 1)
    out = poisoned((9, 6), dt)
    stats = kn.full(2, np.nan, dtype=kn.float64)
    kn.dot(a, b, out=out, relu=True, bias=rb, bias_rows=True, stats=stats)
    want = np.maximum(av @ bv + rbv[:, None], 0)
    close(out, want, dt, rtol=TOL[dt.name], atol=TOL[dt.name] * 4)
    got = out.get().astype(np.float64)
    np.testing.assert_array_equal(stats.get(), [np.abs(got).max(), 0.0])
    # without out=, and with non-finite values: rows of inf and NaN are counted, not measured
    av2 = av.astype(np.float64)
    av2[2, 0], av2[5, 3] = np.inf, np.nan
    s32 = kn.zeros(2, dtype=kn.float32)
    r = kn.dot(kn.array(av2, dtype=dt), b, stats=s32)
    rv = r.get().astype(np.float64)
    fin = np.isfinite(rv)
    assert s32.get()[1] == (~fin).sum() == 12
    assert s32.get()[0] == np.float32(np.abs(rv[fin]).max())


def test_dot_bias_rows_and_stats_errors(rng):
    a, _ = make(rng, (4, 5), kn.float32)
    b, _ = make(rng, (5, 3), kn.float32)
    with pytest.raises(ValueError) as e:
        kn.dot(a, b, bias=kn.zeros(3), bias_rows=True)
    assert "'bias'" in str(e.value) and "(M,)" in str(e.value)
    with pytest.raises(ValueError) as e:
        kn.dot(a, b, stats=kn.zeros(3))
    assert "'stats'" in str(e.value)
    with pytest.raises(TypeError) as e:
        kn.dot(a, b, stats=kn.zeros(2, dtype=kn.int32))
    assert "'stats'" in str(e.value)
    with pytest.raises(TypeError) as e:
        kn.dot(a, b, stats=np.zeros(2))
    assert "'stats'" in str(e.value)
