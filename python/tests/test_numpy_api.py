"""numpy functions beyond the core set: isnan/isinf/nan_to_num, log10/sinh/cosh, logaddexp,
hypot, count_nonzero, isclose/allclose/array_equal, integer and float // and % and fmod, eye/identity/linspace,
flip/ravel/stack/split/tril/triu/outer/tile/repeat/diag. Each against numpy on random data,
several dtypes, odd shapes and non-contiguous views, with NaN/inf and empty edge cases,
lazy results assigned into poisoned outputs, and bad arguments named in the error."""
import math

import numpy as np
import pytest

import kiln as kn
from conftest import ALL, FLOATS, INTS, RTOL, close, make, poisoned

FMAX = {"float32": float(np.finfo(np.float32).max), "float16": 65504.0, "bfloat16": 3.3895313892515355e38,
        "float64": float(np.finfo(np.float64).max)}


def strided(rng, dt, lo=-3.0, hi=3.0):
    """A (5, 4) non-contiguous view (every other row, every third column reversed, transposed)
    and its values."""
    base, bref = make(rng, (9, 14), dt, lo, hi)
    return base[1::2, ::-3].T, bref[1::2, ::-3].T


def specials(rng, dt):
    """strided()'s view with NaN, inf, -inf and 0 among random values (floats)."""
    v = rng.uniform(-3, 3, size=(9, 14))
    flat = v.reshape(-1)
    idx = rng.choice(flat.size, size=20, replace=False)
    flat[idx] = rng.choice([np.nan, np.inf, -np.inf, 0.0], size=idx.size)
    v[1, 13], v[3, 10], v[5, 7], v[7, 4] = np.nan, np.inf, -np.inf, 0.0   # each one inside the view
    base = kn.array(v, dtype=dt)
    bref = base.get().astype(np.float64)
    return base[1::2, ::-3].T, bref[1::2, ::-3].T


def check(expr, ref, dt, rtol=None, atol=None):
    """expr is lazy; assigned into a poisoned tensor and used as a value, both match ref."""
    assert isinstance(expr, kn.Expr), type(expr)
    out = poisoned(np.shape(ref), expr.dtype)
    out[...] = expr
    close(out, ref, dt, rtol=rtol, atol=atol)
    close(expr, ref, dt, rtol=rtol, atol=atol)


# ---------------------------------------------------------------------------------------
# isnan, isinf, nan_to_num
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dt", ALL, ids=lambda d: d.name)
def test_isnan_isinf(rng, dt):
    x, xv = specials(rng, dt) if dt.kind == "f" else strided(rng, dt)
    for fn, ref in ((kn.isnan, np.isnan), (kn.isinf, np.isinf)):
        e = fn(x)
        assert e.dtype is dt                      # 0/1 in x's dtype, as comparisons give
        want = ref(xv).astype(np.float64)
        if dt.kind == "f":
            assert 0 < want.sum() < want.size
        check(e, want, dt, rtol=0, atol=0)
    assert kn.isnan(np.array([1.0, np.nan])).get().tolist() == [0, 1]
    assert kn.isinf([np.inf, 2.0, -np.inf]).get().tolist() == [1, 0, 1]


@pytest.mark.parametrize("dt", FLOATS, ids=lambda d: d.name)
def test_nan_to_num(rng, dt):
    x, xv = specials(rng, dt)
    m = FMAX[dt.name]
    e = kn.nan_to_num(x)
    assert e.dtype is dt
    check(e, np.nan_to_num(xv, posinf=m, neginf=-m), dt, rtol=0, atol=0)
    check(kn.nan_to_num(x, nan=-1.5, posinf=2.25, neginf=-7), np.nan_to_num(xv, nan=-1.5, posinf=2.25, neginf=-7),
          dt, rtol=0, atol=0)
    check(kn.nan_to_num(x, neginf=0.5), np.nan_to_num(xv, posinf=m, neginf=0.5), dt, rtol=0, atol=0)
    # copy=False writes into a Tensor and returns it
    y = kn.array(xv, dtype=dt)
    assert kn.nan_to_num(y, copy=False, nan=3.0) is y
    close(y, np.nan_to_num(xv, nan=3.0, posinf=m, neginf=-m), dt, rtol=0, atol=0)
    with pytest.raises(TypeError, match="'nan'"):
        kn.nan_to_num(x, nan="zero")
    with pytest.raises(TypeError, match="'posinf'"):
        kn.nan_to_num(x, posinf=[1.0])


@pytest.mark.parametrize("dt", INTS, ids=lambda d: d.name)
def test_nan_to_num_ints(rng, dt):
    x, xv = strided(rng, dt)
    e = kn.nan_to_num(x, nan=5)
    assert e.dtype is dt
    check(e, xv, dt)
    assert kn.nan_to_num(x, copy=False) is x


# ---------------------------------------------------------------------------------------
# log10, sinh, cosh, logaddexp, hypot
# ---------------------------------------------------------------------------------------

FLOAT_FNS = [("log10", kn.log10, np.log10, 0.001, 1000.0), ("sinh", kn.sinh, np.sinh, -30, 30),
             ("cosh", kn.cosh, np.cosh, -30, 30)]


@pytest.mark.parametrize("dt", FLOATS, ids=lambda d: d.name)
@pytest.mark.parametrize("name,fn,ref,lo,hi", FLOAT_FNS, ids=[f[0] for f in FLOAT_FNS])
def test_float_functions(rng, dt, name, fn, ref, lo, hi):
    if dt is kn.float16 and name != "log10":
        lo, hi = -10, 10                          # sinh, cosh pass float16's largest value from 11.8
    base, bv = make(rng, (7, 129), dt, lo, hi)
    for x, xv in ((base, bv), (base[::2, ::-5], bv[::2, ::-5]), (base[3], bv[3])):
        e = fn(x)
        assert e.dtype is dt
        check(e, ref(xv), dt, rtol=4 * RTOL[dt.name])


@pytest.mark.parametrize("dt", FLOATS, ids=lambda d: d.name)
def test_sinh_cosh_edges(dt):
    rt = 4 * RTOL[dt.name]
    # near 0: no cancellation (exp(x) - exp(-x) would lose every digit)
    x = kn.array(np.array([1e-7, -3e-5, 2e-3, -0.01, 0.3]), dtype=dt)
    xv = x.get().astype(np.float64)
    close(kn.sinh(x), np.sinh(xv), dt, rtol=rt, atol=0)
    close(kn.cosh(x), np.cosh(xv), dt, rtol=rt, atol=0)
    # near the top of the range: finite where exp(|x|) alone overflows
    top = {"float64": [700.0, -709.5, 710.4], "float32": [85.0, -88.5, 89.4], "float16": [10.5, -11.0, 11.7],
           "bfloat16": [80.0, -87.0, 88.0]}[dt.name]
    x = kn.array(np.array(top), dtype=dt)
    xv = x.get().astype(np.float64)
    for fn, ref in ((kn.sinh, np.sinh), (kn.cosh, np.cosh)):
        got = fn(x).get().astype(np.float64)
        assert np.isfinite(got).all(), (fn, got)
        close(got, ref(xv), dt, rtol=2 * rt)
    # past it, infinities and NaN as numpy
    sv = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1000.0, -1000.0])
    s = kn.array(sv, dtype=dt)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(kn.sinh(s).get().astype(np.float64), np.sinh(sv))
        np.testing.assert_array_equal(kn.cosh(s).get().astype(np.float64), np.cosh(sv))
    assert np.signbit(kn.sinh(s).get()[4])       # sinh(-0.0) is -0.0


def test_log10_exact_powers_of_ten():
    p = (10.0 ** np.arange(-37, 39)).astype(np.float32)
    got = kn.log10(kn.array(p)).get()
    np.testing.assert_array_equal(got, np.log10(p.astype(np.float64)).astype(np.float32))
    assert kn.log10(kn.array([10.0, 100.0, 1000.0])).get().tolist() == [1.0, 2.0, 3.0]
    v = np.array([0.0, -1.0, np.inf, np.nan])
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_array_equal(kn.log10(kn.array(v)).get(), np.log10(v))


@pytest.mark.parametrize("dt", INTS, ids=lambda d: d.name)
def test_float_functions_of_ints(rng, dt):
    x, xv = strided(rng, dt)
    y, yv = make(rng, (4,), dt)
    rt = 8 * RTOL["float32"]
    for e, want in ((kn.sinh(x), np.sinh(xv)), (kn.cosh(x), np.cosh(xv)),
                    (kn.log10(abs(x) + 1), np.log10(np.abs(xv) + 1)),
                    (kn.logaddexp(x, y), np.logaddexp(xv, yv)), (kn.hypot(x, y), np.hypot(xv, yv))):
        assert e.dtype is kn.float32              # kiln's rule for float functions of integers
        check(e, want, kn.float32, rtol=rt, atol=rt)


@pytest.mark.parametrize("dt", FLOATS, ids=lambda d: d.name)
def test_logaddexp(rng, dt):
    rt = 4 * RTOL[dt.name]
    x, xv = strided(rng, dt, -20, 20)
    y, yv = make(rng, (4,), dt, -20, 20)
    check(kn.logaddexp(x, y), np.logaddexp(xv, yv), dt, rtol=rt, atol=20 * rt)
    check(kn.logaddexp(y, x), np.logaddexp(yv, xv), dt, rtol=rt, atol=20 * rt)
    check(kn.logaddexp(x, x), xv + math.log(2), dt, rtol=rt, atol=20 * rt)
    e = kn.logaddexp(x, 1.5)
    assert e.dtype is dt                          # the scalar is weak
    check(e, np.logaddexp(xv, 1.5), dt, rtol=rt, atol=20 * rt)
    check(kn.logaddexp(-2.0, x), np.logaddexp(-2.0, xv), dt, rtol=rt, atol=20 * rt)
    # large values: no overflow of exp
    m = 1e4 if dt is kn.float16 else 1e30
    b, bv = make(rng, (3, 7), dt, -m, m)
    c, cv = make(rng, (3, 7), dt, -m, m)
    check(kn.logaddexp(b, c), np.logaddexp(bv, cv), dt, rtol=rt)
    # infinities and NaN exactly as numpy (equal infinities give themselves, not NaN)
    av = np.array([np.inf, -np.inf, np.inf, -np.inf, np.nan, 1.0, -np.inf, 2.0, np.nan])
    bv = np.array([np.inf, -np.inf, -np.inf, np.inf, 1.0, np.nan, 3.0, -np.inf, np.nan])
    got = kn.logaddexp(kn.array(av, dtype=dt), kn.array(bv, dtype=dt)).get().astype(np.float64)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(got, np.logaddexp(av, bv))


@pytest.mark.parametrize("dt", FLOATS, ids=lambda d: d.name)
def test_hypot(rng, dt):
    rt = 4 * RTOL[dt.name]
    x, xv = strided(rng, dt)
    y, yv = make(rng, (4,), dt)
    check(kn.hypot(x, y), np.hypot(xv, yv), dt, rtol=rt)
    e = kn.hypot(2.5, x)
    assert e.dtype is dt
    check(e, np.hypot(2.5, xv), dt, rtol=rt)
    # no overflow or underflow of the squares
    for scale in {"float64": (1e200, 1e-200), "float16": (1e4, 1e-3)}.get(dt.name, (1e30, 1e-30)):
        b = kn.array(rng.uniform(0.5, 3, (6,)) * scale * rng.choice([-1, 1], 6), dtype=dt)
        c = kn.array(rng.uniform(0.5, 3, (6,)) * scale, dtype=dt)
        bv, cv = b.get().astype(np.float64), c.get().astype(np.float64)
        check(kn.hypot(b, c), np.hypot(bv, cv), dt, rtol=rt, atol=0)
    # inf wins over NaN; both 0 gives 0
    av = np.array([np.inf, np.nan, -np.inf, 0.0, -0.0, np.nan, 3.0, 0.0])
    bv = np.array([np.nan, -np.inf, 1.0, 0.0, 0.0, 2.0, -4.0, -5.0])
    got = kn.hypot(kn.array(av, dtype=dt), kn.array(bv, dtype=dt)).get().astype(np.float64)
    np.testing.assert_array_equal(got, np.hypot(av, bv))


# ---------------------------------------------------------------------------------------
# count_nonzero, isclose, allclose, array_equal
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dt", ALL, ids=lambda d: d.name)
def test_count_nonzero(rng, dt):
    v = rng.integers(0 if dt is kn.uint8 else -2, 3, size=(4, 7, 6)).astype(np.float64)
    if dt.kind == "f":
        v[rng.random(v.shape) < 0.1] = np.nan      # NaN counts as non-zero
    base = kn.array(v, dtype=dt)
    x, xv = base[:, ::-2, 1:], v[:, ::-2, 1:]
    for axis in (None, 0, 1, -1, (0, 2)):
        for keepdims in (False, True):
            e = kn.count_nonzero(x, axis, keepdims=keepdims)
            assert isinstance(e, kn.Expr) and e.dtype is kn.int32
            want = np.count_nonzero(xv, axis=axis, keepdims=keepdims)
            assert e.shape == np.shape(want)
            np.testing.assert_array_equal(e.get(), want)
    assert kn.count_nonzero(kn.zeros((0, 3))).item() == 0
    np.testing.assert_array_equal(kn.count_nonzero(kn.zeros((0, 3)), axis=0).get(), [0, 0, 0])
    with pytest.raises(ValueError, match="axis"):
        kn.count_nonzero(x, axis=3)
    with pytest.raises(TypeError, match="'a'"):
        kn.count_nonzero("text")


CLOSE_TOL = {"float64": 1e-9, "float32": 1e-4, "float16": 1e-2, "bfloat16": 1e-1}


@pytest.mark.parametrize("dt", FLOATS, ids=lambda d: d.name)
def test_isclose(rng, dt):
    x, xv = strided(rng, dt, 0.5, 3)
    tol = CLOSE_TOL[dt.name]
    # b differs by 0.2 or 5 tolerances: some close, some not, none near the boundary
    y = kn.array(xv * (1 + rng.choice([0.2, -0.2, 5, -5], size=xv.shape) * tol), dtype=dt)
    yv = y.get().astype(np.float64)
    want = np.isclose(xv, yv, rtol=tol, atol=0)
    assert 0 < want.sum() < want.size
    e = kn.isclose(x, y, rtol=tol, atol=0)
    assert e.dtype is dt
    check(e, want.astype(np.float64), dt, rtol=0, atol=0)
    z = kn.array(xv + rng.choice([0.2, -0.2, 5, -5], size=xv.shape) * 2 * tol, dtype=dt)   # atol
    zv = z.get().astype(np.float64)
    want = np.isclose(xv, zv, rtol=0, atol=2 * tol)
    assert 0 < want.sum() < want.size
    check(kn.isclose(x, z, rtol=0, atol=2 * tol), want.astype(np.float64), dt, rtol=0, atol=0)
    # broadcasting and a scalar operand
    r, rv = make(rng, (4,), dt, 0.5, 3)
    check(kn.isclose(x, r, rtol=0.5), np.isclose(xv, rv, rtol=0.5).astype(np.float64), dt, rtol=0, atol=0)
    check(kn.isclose(x, 1.5, rtol=0.3), np.isclose(xv, 1.5, rtol=0.3).astype(np.float64), dt, rtol=0, atol=0)
    # not symmetric: the tolerance scales with |b|
    assert kn.isclose(kn.array([1.0], dtype=dt), 2.0, rtol=0.5, atol=0).item() == 1
    assert kn.isclose(kn.array([2.0], dtype=dt), 1.0, rtol=0.5, atol=0).item() == 0
    # infinities only close to themselves, NaN to NaN only with equal_nan
    av = np.array([np.inf, np.inf, -np.inf, np.nan, np.nan, 1.0, np.inf, 0.0])
    bv = np.array([np.inf, -np.inf, -np.inf, np.nan, 1.0, np.nan, 3.0, 0.0])
    a, b = kn.array(av, dtype=dt), kn.array(bv, dtype=dt)
    for equal_nan in (False, True):
        np.testing.assert_array_equal(kn.isclose(a, b, equal_nan=equal_nan).get(),
                                      np.isclose(av, bv, equal_nan=equal_nan))
    with pytest.raises(TypeError, match="'rtol'"):
        kn.isclose(x, y, rtol="loose")
    with pytest.raises(TypeError, match="'b'"):
        kn.isclose(x, "y")


@pytest.mark.parametrize("dt", INTS, ids=lambda d: d.name)
def test_isclose_ints(rng, dt):
    x, xv = strided(rng, dt)
    x = kn.array(xv + 20, dtype=dt)[::-1]
    xv = xv[::-1] + 20
    y = kn.array(xv + np.resize([0, 1, 6, -7, 3], xv.shape), dtype=dt)      # close, close, not, not, either
    yv = y.get()
    e = kn.isclose(x, y, rtol=0.1, atol=1)
    assert e.dtype is dt
    want = np.isclose(xv.astype(dt.np), yv, rtol=0.1, atol=1)
    assert 0 < want.sum() < want.size
    check(e, want.astype(np.float64), dt, rtol=0, atol=0)
    r, rv = make(rng, (4,), dt)
    check(kn.isclose(x, r, rtol=0.3, atol=1), np.isclose(xv, rv, rtol=0.3, atol=1).astype(np.float64), dt,
          rtol=0, atol=0)
    lo, hi = (0, 255) if dt is kn.uint8 else (-128, 127)
    # compared in float64: the difference of extreme values does not saturate
    ends = kn.array(np.array([lo, hi]), dtype=dt)
    np.testing.assert_array_equal(kn.isclose(ends, ends[::-1], rtol=0, atol=254).get(), [0, 0])
    np.testing.assert_array_equal(kn.isclose(ends, ends[::-1], rtol=0, atol=255).get(), [1, 1])


def test_allclose_array_equal(rng):
    x, xv = strided(rng, kn.float32)
    assert kn.allclose(x, x * (1 + 2e-6)) is True
    assert kn.allclose(x, x * (1 + 2e-5)) is False
    assert kn.allclose(xv, x) is True
    assert kn.allclose(x, x[:1], rtol=0.0) is False           # broadcasts, as numpy's
    nan = kn.array([1.0, np.nan])
    assert kn.allclose(nan, nan) is False and kn.allclose(nan, nan, equal_nan=True) is True
    assert kn.allclose(kn.zeros((0, 3)), kn.ones((0, 3))) is True
    assert kn.array_equal(x, x.copy()) is True
    assert kn.array_equal(x, xv) is True
    y = x.copy()
    y[2, 1] = 7.5
    assert kn.array_equal(x, y) is False
    assert kn.array_equal(x, x[:1]) is False                  # shapes differ: no broadcasting
    assert kn.array_equal(kn.ones((2, 3)), kn.ones(3)) is False
    assert kn.array_equal(nan, nan) is False and kn.array_equal(nan, nan, equal_nan=True) is True
    assert kn.array_equal(kn.zeros((0, 3)), np.zeros((0, 3))) is True
    i = kn.array(np.array([1, -2, 3], dtype=np.int8))
    assert kn.array_equal(i, kn.array([1.0, -2.0, 3.0])) is True
    assert kn.array_equal(i, [1, -2, 4]) is False
    with pytest.raises(TypeError, match="'a2'"):
        kn.array_equal(i, "abc")


# ---------------------------------------------------------------------------------------
# // and %
# ---------------------------------------------------------------------------------------


def int_operands(rng, dt):
    """(a, a's values, b, b's values): a a non-contiguous (5, 4) view, b a broadcast row with a 0."""
    lo = 0 if dt is kn.uint8 else -100
    av = rng.integers(lo, 100, size=(9, 14)).astype(dt.np)
    a, an = kn.array(av)[1::2, ::-3].T, av[1::2, ::-3].T
    bn = rng.integers(1 if dt is kn.uint8 else -9, 10, size=4).astype(dt.np)
    bn[1] = 0
    if dt is not kn.uint8:
        bn[2] = -abs(bn[2]) or -3
    return a, an, kn.array(bn), bn


@pytest.mark.parametrize("dt", INTS, ids=lambda d: d.name)
def test_int_floor_divide_mod(rng, dt):
    a, an, b, bn = int_operands(rng, dt)
    z = dt.np.type(0)
    with np.errstate(divide="ignore", invalid="ignore"):    # numpy's references divide by 0 too
        cases = [
            (a // b, an // bn), (a % b, an % bn), (kn.floor_divide(a, b), np.floor_divide(an, bn)),
            (kn.mod(a, b), np.mod(an, bn)), (kn.remainder(b, a), np.remainder(bn, an)), (b // a, bn // an),
            (a // 7, an // 7), (a % 7, an % 7), (97 // b, 97 // bn), (97 % b, 97 % bn),
            (a // 0, an // z), (a % 0, an % z),
            (kn.floor_divide(an, b), an // bn), (kn.mod(an, b), an % bn), (a // 1, an // 1),
        ]
        if dt is not kn.uint8:
            cases += [(a // -7, an // -7), (a % -7, an % -7), (-97 // b, -97 // bn), (-97 % b, -97 % bn)]
    for i, (got, want) in enumerate(cases):
        assert isinstance(got, kn.Expr), i
        assert got.dtype == want.dtype, (i, got.dtype, want.dtype)
        out = poisoned(want.shape, got.dtype)
        out[...] = got
        np.testing.assert_array_equal(out.get(), want, err_msg=str(i))
        np.testing.assert_array_equal(got.get(), want, err_msg=str(i))
    # an integer tensor with a float scalar stays integer (weak scalars): floor(a / b)
    e = a // 2.0
    assert e.dtype is dt
    np.testing.assert_array_equal(e.get(), np.floor_divide(an, 2.0).astype(dt.np))
    np.testing.assert_array_equal((a % 4.0).get(), np.mod(an, 4.0).astype(dt.np))
    # in place
    t = kn.array(an)
    ident = id(t)
    t //= 3
    t %= 4
    assert id(t) == ident
    np.testing.assert_array_equal(t.get(), (an // 3) % 4)
    # numpy's ufuncs stay in kiln
    assert isinstance(np.floor_divide(a, b), kn.Expr) and isinstance(np.remainder(an, b), kn.Expr)
    np.testing.assert_array_equal(np.remainder(a, 3).get(), an % 3)


def _bf16(v):
    """float32 values rounded to the nearest bfloat16 (ties to even), as float32."""
    v = np.atleast_1d(np.asarray(v, dtype=np.float32))
    w = v.view(np.uint32).astype(np.int64)
    w = ((w + 0x7FFF + ((w >> 16) & 1)) >> 16) << 16
    out = (w & 0xFFFFFFFF).astype(np.uint32).view(np.float32)
    return np.where(np.isnan(v), np.float32(np.nan), out)


@pytest.mark.parametrize("dt", FLOATS, ids=lambda d: d.name)
def test_float_floor_divide_mod_fmod(rng, dt):
    """Float //, %, divmod and fmod are lazy and give numpy's bits: the fmod-based rule (1 // 0.1
    is 9, not floor(10.0)), signed zeros, zero and infinite divisors, NaN; on a non-contiguous
    view, a broadcast row, Python floats on either side (rounded to the dtype first, as numpy)
    and numpy's ufuncs. bfloat16 (no numpy dtype) against numpy in float32, rounded."""
    edge_a = [5.5, -5.5, 5.5, -5.5, 1.0, 0.0, -0.0, np.inf, 3.0, -3.0, 1.0, -1.0, 0.3, 7.0, np.nan, 2.0, -2.0, 0.0]
    edge_b = [2, 2, -2, -2, 0, 3, -3, 2, np.inf, np.inf, 0.1, 0.1, -0.1, -0.0, 2, -np.inf, np.inf, -0.0]
    npdt = dt.np.type if dt.np is not None else np.float32
    av = np.concatenate([edge_a, rng.uniform(-9, 9, 9 * 14 - len(edge_a))]).reshape(9, 14).astype(npdt)
    bv = np.concatenate([edge_b, rng.uniform(-3, 3, 14 - len(edge_b) % 14)])[:14].astype(npdt)
    bv[rng.integers(0, 14)] = 0.25
    if dt is kn.bfloat16:
        av, bv = _bf16(av), _bf16(bv)
    a, b = kn.array(av, dtype=dt), kn.array(bv, dtype=dt)
    s = kn.array(av, dtype=dt)[1::2, ::-3]          # a (4, 5) view; its row operand b[:5]
    sn, bs, bsn = av[1::2, ::-3], b[:5], bv[:5]

    def fix(x):
        return _bf16(x) if dt is kn.bfloat16 else x

    def sc(x):                                       # a Python float as numpy sees it beside dt
        return float(_bf16(np.float32(x))[0]) if dt is kn.bfloat16 else npdt(x)

    with np.errstate(all="ignore"):
        cases = [
            ("a // b", a // b, np.floor_divide(av, bv)), ("a % b", a % b, np.remainder(av, bv)),
            ("fmod", kn.fmod(a, b), np.fmod(av, bv)), ("b // a", b // a, np.floor_divide(bv, av)),
            ("view // row", s // bs, np.floor_divide(sn, bsn)), ("view % row", s % bs, np.remainder(sn, bsn)),
            ("a // 0.1", a // 0.1, np.floor_divide(av, sc(0.1))), ("a % 0.1", a % 0.1, np.remainder(av, sc(0.1))),
            ("fmod(a, 0.1)", kn.fmod(a, 0.1), np.fmod(av, sc(0.1))),
            ("7.3 // b", 7.3 // b, np.floor_divide(sc(7.3), bv)), ("-7.3 % b", -7.3 % b, np.remainder(sc(-7.3), bv)),
            ("a // -0.0", a // -0.0, np.floor_divide(av, sc(-0.0))), ("a % 0", a % 0, np.remainder(av, sc(0))),
            ("divmod q", divmod(a, b)[0], np.divmod(av, bv)[0]), ("divmod r", divmod(a, b)[1], np.divmod(av, bv)[1]),
            ("np.floor_divide", np.floor_divide(a, b), np.floor_divide(av, bv)),
            ("np.remainder", np.remainder(a, 2.5), np.remainder(av, sc(2.5))), ("np.fmod", np.fmod(a, b), np.fmod(av, bv)),
        ]
    for name, got, want in cases:
        assert isinstance(got, kn.Expr), name
        assert got.dtype is dt, (name, got.dtype)
        want = fix(np.asarray(want, dtype=npdt))
        out = poisoned(want.shape, dt)
        out[...] = got
        for g in (out.get(), got.get()):
            g = np.asarray(g, dtype=np.float64)
            w = want.astype(np.float64)
            same = ((g == w) & (np.signbit(g) == np.signbit(w))) | (np.isnan(g) & np.isnan(w))
            assert same.all(), (name, g[~same][:5], w[~same][:5])
    assert (kn.array(np.array([1.0], dtype=np.float64)) // 0.1).get().tolist() == [9.0]
    t = kn.array(av, dtype=dt)
    ident = id(t)
    t //= 0.5
    t %= 3.0
    assert id(t) == ident
    with np.errstate(all="ignore"):
        want = fix(np.remainder(fix(np.floor_divide(av, sc(0.5))), sc(3.0)).astype(npdt))
    g, w = t.get().astype(np.float64), want.astype(np.float64)
    assert (((g == w) & (np.signbit(g) == np.signbit(w))) | (np.isnan(g) & np.isnan(w))).all()


@pytest.mark.parametrize("dt", INTS, ids=lambda d: d.name)
def test_int_fmod(rng, dt):
    """Integer fmod: C's (the dividend's sign), 0 for a zero divisor (numpy), the dtype kept."""
    a, an, b, bn = int_operands(rng, dt)
    with np.errstate(all="ignore"):
        for got, want in ((kn.fmod(a, b), np.fmod(an, bn)), (kn.fmod(b, a), np.fmod(bn, an)),
                          (kn.fmod(a, 7), np.fmod(an, dt.np.type(7))), (np.fmod(a, b), np.fmod(an, bn))):
            assert isinstance(got, kn.Expr) and got.dtype is dt
            np.testing.assert_array_equal(got.get(), want)


def test_int_floor_divide_mixed_dtypes_and_errors(rng):
    a8 = rng.integers(-100, 100, size=(3, 5)).astype(np.int8)
    b32 = rng.integers(-100000, 100000, size=(5,)).astype(np.int32)
    b32[0] = 0
    with np.errstate(divide="ignore"):
        for got, want in ((kn.array(a8) // kn.array(b32), a8 // b32), (kn.array(b32) % kn.array(a8), b32 % a8)):
            assert got.dtype is kn.int32 and want.dtype == np.int32
            np.testing.assert_array_equal(got.get(), want)
    x = kn.array(a8)
    with pytest.raises(TypeError, match="'x2'"):
        kn.floor_divide(x, "three")
    with pytest.raises(TypeError, match="'x1'"):
        kn.mod("three", x)
    with pytest.raises(ValueError):
        kn.floor_divide(x, kn.array(b32[:4]))    # shapes that do not broadcast


def test_int32_floor_divide_full_range(rng):
    """floor(a / b) in float64 is exact for every int32 pair (but -2**31 // -1)."""
    an = rng.integers(-2**31 + 1, 2**31, size=3000).astype(np.int32)
    an[:50] = -2**31
    bn = np.concatenate([rng.integers(-2**31 + 1, 2**31, size=1000), rng.integers(-1000, 1000, size=1000),
                         np.resize([1, -1, 2, -2, 3, -3, 7, 0, 2**31 - 1, -2**31 + 1], 1000)]).astype(np.int32)
    bn[:50] = rng.choice([2, -2, 3, 2**31 - 1, -7], size=50)        # a = -2**31 with divisors other than -1
    a, b = kn.array(an), kn.array(bn)
    with np.errstate(divide="ignore"):
        np.testing.assert_array_equal((a // b).get(), an // bn)
        np.testing.assert_array_equal((a % b).get(), an % bn)


def test_int_divide_documented_differences():
    """The edges python/README.md lists: results outside the dtype saturate (numpy wraps or
    widens); an integer tensor with a float scalar divides as floor(a / b)."""
    edge = kn.array(np.array([-2**31, 5], dtype=np.int32))
    assert (edge // -1).get().tolist() == [2**31 - 1, -5]
    assert (edge % -1).get().tolist() == [0, 0]
    assert (kn.array(np.array([-128], dtype=np.int8)) // -1).get().tolist() == [127]
    u = kn.array(np.array([5, 0, 200], dtype=np.uint8)) // -3
    assert u.dtype is kn.uint8 and u.get().tolist() == [0, 0, 0]
    assert (kn.array(np.array([-5], dtype=np.int8)) % 1000).get().tolist() == [127]
    assert (kn.array(np.array([1, 7], dtype=np.int32)) // 0.1).get().tolist() == [10, 70]


@pytest.mark.parametrize("dt", FLOATS, ids=lambda d: d.name)
def test_float_floor_divide_mod(rng, dt):
    """Float // and % go through numpy on the host; the result keeps kiln's promoted dtype."""
    a, av = strided(rng, dt, -20, 20)
    b, bv = make(rng, (4,), dt, 0.5, 3)
    nb = kn.array(-bv, dtype=dt)
    for got, want, exact in ((a // b, np.floor_divide(av, bv), True), (a // nb, np.floor_divide(av, -bv), True),
                             (a % b, np.mod(av, bv), False), (a % nb, np.mod(av, -bv), False),
                             (a // 2, av // 2, True), (7 // b, 7 // bv, True),
                             (kn.mod(7.5, b), np.mod(7.5, bv), False)):
        assert got.dtype is dt
        if exact:
            close(got, want, dt, rtol=0, atol=0)
        else:
            close(got, want, dt, rtol=2 * RTOL[dt.name], atol=8 * RTOL[dt.name])


# ---------------------------------------------------------------------------------------
# eye, identity, linspace
# ---------------------------------------------------------------------------------------

EYES = [(1, None, 0), (5, None, 0), (4, 7, 2), (7, 4, -3), (5, 5, 4), (5, 5, -4), (5, 5, 5), (3, 6, 9), (6, 3, -9),
        (0, 3, 0), (4, 0, 1), (5, None, -1)]


@pytest.mark.parametrize("N,M,k", EYES)
def test_eye(N, M, k):
    for dt in (None, kn.float64, kn.int8, kn.bfloat16):
        t = kn.eye(N, M, k, dtype=dt)
        assert isinstance(t, kn.Tensor) and t.dtype is (dt or kn.float32)
        np.testing.assert_array_equal(t.get(), np.eye(N, M, k))
    np.testing.assert_array_equal(kn.eye(N, M=M, k=k, dtype=np.int32).get(), np.eye(N, M, k, dtype=np.int32))


def test_identity_and_bad_arguments():
    t = kn.identity(4)
    assert t.dtype is kn.float32
    np.testing.assert_array_equal(t.get(), np.identity(4))
    assert kn.identity(3, dtype=kn.uint8).get().tolist() == np.identity(3, dtype=np.uint8).tolist()
    with pytest.raises(ValueError, match="'N'"):
        kn.eye(-1)
    with pytest.raises(ValueError, match="'M'"):
        kn.eye(3, -2)
    with pytest.raises(TypeError, match="'k'"):
        kn.eye(3, k=1.5)
    with pytest.raises(TypeError, match="'N'"):
        kn.eye(2.0)
    with pytest.raises(ValueError, match="'n'"):
        kn.identity(-3)


LINSPACES = [(0, 1, 5, True), (0, 1, 5, False), (-3.5, 7.25, 13, True), (7.25, -3.5, 13, False), (2, 2, 4, True),
             (1, 10, 1, True), (1, 10, 1, False), (0, 1, 0, True), (0, 1, 0, False), (-1e6, 1e-3, 1001, True),
             (5, -5, 2, True), (0, 1.5e-323, 10, True), (-7, 5, 50, True), (0.1, 0.7, 7, False)]


@pytest.mark.parametrize("start,stop,num,endpoint", LINSPACES)
def test_linspace(start, stop, num, endpoint):
    want, wstep = np.linspace(start, stop, num, endpoint, retstep=True)
    t, step = kn.linspace(start, stop, num, endpoint, retstep=True, dtype=kn.float64)
    assert isinstance(t, kn.Tensor) and t.dtype is kn.float64
    np.testing.assert_array_equal(t.get(), want)              # the same float64 operations as numpy
    assert step == wstep or (math.isnan(step) and math.isnan(wstep))
    if endpoint and num > 1:
        assert t.get()[-1] == stop
    f = kn.linspace(start, stop, num=num, endpoint=endpoint)
    assert f.dtype is kn.float32
    np.testing.assert_array_equal(f.get(), want.astype(np.float32))
    for dt in INTS:
        info = np.iinfo(dt.np)
        if info.min <= min(start, stop) and max(start, stop) <= info.max:
            got = kn.linspace(start, stop, num, endpoint, dtype=dt)
            assert got.dtype is dt
            np.testing.assert_array_equal(got.get(), np.linspace(start, stop, num, endpoint, dtype=dt.np))


def test_linspace_arrays_and_bad_arguments():
    want = np.linspace([0, 1], [10, 5], 4)
    np.testing.assert_allclose(kn.linspace([0, 1], kn.array([10.0, 5.0]), 4, dtype=kn.float64).get(), want, rtol=0)
    np.testing.assert_allclose(kn.linspace([0, 1], [10, 5], 4, axis=1, dtype=kn.float64).get(),
                               np.linspace([0, 1], [10, 5], 4, axis=1), rtol=0)
    with pytest.raises(ValueError, match="'num'"):
        kn.linspace(0, 1, -1)
    with pytest.raises(TypeError, match="'num'"):
        kn.linspace(0, 1, 2.5)
    with pytest.raises(TypeError, match="'start'"):
        kn.linspace(1j, 2, 3)


# ---------------------------------------------------------------------------------------
# flip, ravel, vstack, hstack, split
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dt", [kn.float32, kn.bfloat16, kn.int8], ids=lambda d: d.name)
def test_flip(rng, dt):
    base, bv = make(rng, (5, 6, 7), dt)
    x, xv = base[:, ::2, 1:], bv[:, ::2, 1:]
    for axis in (None, 0, 1, -1, (0, 2), (), (-1, 0)):
        np.testing.assert_array_equal(kn.flip(x, axis).get(), np.flip(xv, axis))
    np.testing.assert_array_equal(kn.fliplr(x).get(), np.fliplr(xv))
    np.testing.assert_array_equal(kn.flipud(x).get(), np.flipud(xv))
    np.testing.assert_array_equal(kn.flipud(base[0, 0]).get(), np.flipud(bv[0, 0]))
    np.testing.assert_array_equal(kn.flip(x * 2, 1).get(), np.flip(xv * 2, 1))
    r = kn.flip(x, (0, 2))                      # a view: writes show in x
    r[0, 1, 0] = 99
    assert x.get()[-1, 1, -1] == 99
    assert kn.fliplr(x)[0, 0, 0].item() == x[0, -1, 0].item()
    with pytest.raises(ValueError, match="'axis'"):
        kn.flip(x, 3)
    with pytest.raises(ValueError, match="'axis'"):
        kn.flip(x, (0, -3))
    with pytest.raises(TypeError, match="'axis'"):
        kn.flip(x, 1.5)
    with pytest.raises(ValueError, match="'m'"):
        kn.fliplr(base[0, 0])
    with pytest.raises(ValueError, match="'m'"):
        kn.flipud(base[0, 0, 0])


def test_ravel(rng):
    base, bv = make(rng, (4, 5), kn.float32)
    v = base[:, ::-2]
    np.testing.assert_array_equal(kn.ravel(v).get(), bv[:, ::-2].ravel())
    np.testing.assert_array_equal(kn.ravel(base * 2).get(), (bv * 2).ravel())
    assert kn.ravel([[1, 2], [3, 4]]).get().tolist() == [1, 2, 3, 4]
    r = kn.ravel(base)                          # contiguous: a view
    assert r.shape == (20,)
    r[7] = 42.0
    assert base.get()[1, 2] == 42.0
    np.testing.assert_array_equal(base.T.ravel().get(), base.get().T.ravel())


def test_vstack_hstack(rng):
    a, av = make(rng, (3, 5), kn.float32)
    b, bv = strided(rng, kn.float32)            # (5, 4)
    c, cv = make(rng, (5,), kn.int8)
    v = kn.vstack([a, b.T, c])
    assert isinstance(v, kn.Tensor) and v.dtype is kn.float32
    np.testing.assert_array_equal(v.get(), np.vstack([av, bv.T, cv]))
    np.testing.assert_array_equal(kn.vstack(a).get(), np.vstack(av))           # a tensor's rows
    np.testing.assert_array_equal(kn.vstack([kn.array(2.5), kn.array([1.5])]).get(), np.vstack([2.5, [1.5]]))
    h = kn.hstack((b.T[:3], a, av[:, :2]))
    np.testing.assert_array_equal(h.get(), np.hstack((bv.T[:3], av, av[:, :2])))
    np.testing.assert_array_equal(kn.hstack([c, kn.array(2.0), c[::-2]]).get(), np.hstack([cv, 2.0, cv[::-2]]))
    with pytest.raises(ValueError, match="'tup'"):
        kn.vstack([])
    with pytest.raises(TypeError, match="'tup'"):
        kn.hstack(5)
    with pytest.raises(ValueError):
        kn.vstack([a, b])


def test_split_array_split(rng):
    base, bv = make(rng, (6, 11, 4), kn.float32)
    x, xv = base[:, ::-1, 1:], bv[:, ::-1, 1:]            # (6, 11, 3)
    cases = [(3, 0), (4, 1), (11, 1), (13, 1), ([2, 5], 1), ([-3, 4, 100], 1), ([], 0), ([5, 2], 1), (2, -1),
             (np.array([1, 3]), 0), (np.int64(2), 0)]
    for ios, axis in cases:
        got, want = kn.array_split(x, ios, axis), np.array_split(xv, ios, axis)
        assert len(got) == len(want), (ios, axis)
        for g, w in zip(got, want):
            assert g.shape == w.shape, (ios, axis)
            np.testing.assert_array_equal(g.get(), w)
    for ios, axis in ((3, 0), (2, 0), (11, 1), ([2, 5], 1), (3, -1)):
        got, want = kn.split(x, ios, axis=axis), np.split(xv, ios, axis=axis)
        assert [g.shape for g in got] == [w.shape for w in want]
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.get(), w)
    parts = kn.split(base, 2)                               # views: writes show in base
    parts[1][0, 0, 0] = 7.0
    assert base.get()[3, 0, 0] == 7.0
    with pytest.raises(ValueError, match="'indices_or_sections'"):
        kn.split(x, 4, axis=1)                                # 11 is not 4 equal parts
    with pytest.raises(ValueError, match="'indices_or_sections'"):
        kn.array_split(x, 0)
    with pytest.raises(TypeError, match="'indices_or_sections'"):
        kn.array_split(x, 2.5)
    with pytest.raises(TypeError, match="'indices_or_sections'"):
        kn.array_split(x, [1, "a"])
    with pytest.raises(ValueError, match="'axis'"):
        kn.split(x, 2, axis=3)


# ---------------------------------------------------------------------------------------
# tril, triu, outer, tile, repeat, diag
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dt", ALL, ids=lambda d: d.name)
def test_tril_triu(rng, dt):
    v = (rng.uniform(-3, 3, (3, 11, 15)) if dt.kind == "f" else rng.integers(1, 11, (3, 11, 15))).astype(np.float64)
    if dt.kind == "f":
        v[:, 5, 2] = np.nan                      # NaN below the diagonal: tril keeps it, triu gives 0
    base = kn.array(v, dtype=dt)
    bv = base.get().astype(np.float64)
    views = [(base[0, :5, :7], bv[0, :5, :7]), (base[1, 1::2, ::-2], bv[1, 1::2, ::-2]),
             (base[2, :7, :5].T, bv[2, :7, :5].T), (base[:, 2:, 1::3], bv[:, 2:, 1::3]), (base[0, 0, :6], bv[0, 0, :6])]
    for x, xv in views:
        for k in (-8, -2, -1, 0, 1, 3, 9):
            for fn, ref in ((kn.tril, np.tril), (kn.triu, np.triu)):
                e = fn(x, k)
                assert e.dtype is dt
                check(e, ref(xv, k), dt, rtol=0, atol=0)
    assert kn.tril(kn.zeros((0, 3))).shape == (0, 3)
    with pytest.raises(ValueError, match="'m'"):
        kn.tril(kn.array(2.0))
    with pytest.raises(TypeError, match="'k'"):
        kn.triu(base, 0.5)


def test_outer(rng):
    a, av = strided(rng, kn.float32)
    b, bv = make(rng, (7,), kn.float16)
    e = kn.outer(a, b)
    assert e.dtype is kn.float32
    check(e, np.outer(av, bv), kn.float32, rtol=4 * RTOL["float32"])
    i, iv = make(rng, (6,), kn.int8)
    j, jv = make(rng, (3,), kn.int8)
    check(kn.outer(i[::-1], j), np.outer(iv[::-1], jv), kn.int8)
    check(kn.outer([1.5, 2.0], kn.array(3.0)), np.outer([1.5, 2.0], 3.0), kn.float64)


@pytest.mark.parametrize("reps", [2, (2,), (1, 1), (2, 3), (3, 1, 2), (0, 2), (1, 0, 1), ()], ids=str)
def test_tile(rng, reps):
    for dt in (kn.int32, kn.bfloat16):
        x, xv = strided(rng, dt)
        t = kn.tile(x, reps)
        assert isinstance(t, kn.Tensor) and t.dtype is dt
        np.testing.assert_array_equal(t.get(), np.tile(xv, reps))
        np.testing.assert_array_equal(kn.tile(x[0], reps).get(), np.tile(xv[0], reps))
    np.testing.assert_array_equal(kn.tile(kn.array(3.5), reps).get(), np.tile(3.5, reps))


def test_tile_bad_reps(rng):
    x, _ = strided(rng, kn.float32)
    with pytest.raises(ValueError, match="'reps'"):
        kn.tile(x, (2, -1))
    with pytest.raises(TypeError, match="'reps'"):
        kn.tile(x, (2, 1.5))
    with pytest.raises(TypeError, match="'reps'"):
        kn.tile(x, None)


def test_repeat(rng):
    for dt in (kn.float32, kn.int8, kn.bfloat16):
        x, xv = strided(rng, dt)                           # (5, 4)
        for reps, axis in ((2, None), (3, 0), (2, 1), (2, -1), (0, 1), (1, None), ([2], 0), ([1, 0, 2, 3, 1], 0),
                           ([3, 0, 1, 2], 1), (np.array([1, 2, 1, 0]), -1), (np.int64(2), 0)):
            r = kn.repeat(x, reps, axis)
            assert isinstance(r, kn.Tensor) and r.dtype is dt
            np.testing.assert_array_equal(r.get(), np.repeat(xv, reps, axis))
        np.testing.assert_array_equal(x.repeat(2, axis=0).get(), xv.repeat(2, axis=0))
    assert kn.repeat(kn.array(2.0), 3).get().tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(ValueError, match="'repeats'"):
        kn.repeat(x, -1)
    with pytest.raises(ValueError, match="'repeats'"):
        kn.repeat(x, [1, 2], axis=0)
    with pytest.raises(ValueError, match="'repeats'"):
        kn.repeat(x, [1, -1, 1, 1], axis=1)
    with pytest.raises(TypeError, match="'repeats'"):
        kn.repeat(x, 1.5)
    with pytest.raises(ValueError, match="'axis'"):
        kn.repeat(x, 2, axis=2)


def test_diag(rng):
    v, vv = make(rng, (5,), kn.float32)
    for k in (0, 1, -2, 6, -6):
        d = kn.diag(v[::-1], k)
        assert isinstance(d, kn.Tensor)
        np.testing.assert_array_equal(d.get(), np.diag(vv[::-1], k))
    m, mv = make(rng, (4, 6), kn.int32)
    for k in (-5, -4, -3, -1, 0, 2, 5, 6, 9):
        np.testing.assert_array_equal(kn.diag(m, k).get(), np.diag(mv, k))
        np.testing.assert_array_equal(kn.diag(m.T, k).get(), np.diag(mv.T, k))
        np.testing.assert_array_equal(kn.diag(m[::2, ::-1], k).get(), np.diag(mv[::2, ::-1], k))
        np.testing.assert_array_equal(kn.diag(m * 2, k).get(), np.diag(mv * 2, k))
    d = kn.diag(m, 1)                           # contiguous: a view, writes show in m
    d[2] = 99
    assert m.get()[2, 3] == 99
    d = kn.diag(m.T, -1)                        # the transpose of a contiguous tensor: a view too
    d[0] = -99
    assert m.get()[0, 1] == -99
    with pytest.raises(ValueError, match="'v'"):
        kn.diag(kn.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match="'v'"):
        kn.diag(kn.array(1.0))
    with pytest.raises(TypeError, match="'k'"):
        kn.diag(m, 1.5)


def test_numpy_ufuncs_stay_in_kiln(rng):
    x, xv = strided(rng, kn.float32, 0.5, 3)
    for uf in (np.isnan, np.isinf, np.log10, np.sinh, np.cosh):
        r = uf(x)
        assert isinstance(r, kn.Expr), uf
        close(r, uf(xv).astype(np.float64), kn.float32, rtol=8 * RTOL["float32"])
    for uf in (np.logaddexp, np.hypot):
        r = uf(x, x[::-1])
        assert isinstance(r, kn.Expr), uf
        close(r, uf(xv, xv[::-1]), kn.float32, rtol=8 * RTOL["float32"])


def test_binary_function_errors(rng):
    x, _ = strided(rng, kn.float32)
    with pytest.raises(TypeError, match="'x2'"):
        kn.hypot(x, "a")
    with pytest.raises(TypeError, match="'x1'"):
        kn.logaddexp(["a"], x)
    with pytest.raises(TypeError, match="'x'"):
        kn.sinh("a")
    with pytest.raises(ValueError):
        kn.hypot(x, kn.ones(3))


def test_divmod_squeeze_diagonal_axis_types(rng):
    av = rng.integers(-50, 50, size=(4, 5)).astype(np.int32)
    a = kn.array(av)
    q, r = divmod(a, 7)
    np.testing.assert_array_equal(q.get(), av // 7)
    np.testing.assert_array_equal(r.get(), av % 7)
    q, r = divmod(100, a + 60)                               # __rdivmod__, positive divisors
    np.testing.assert_array_equal(q.get(), 100 // (av + 60))
    np.testing.assert_array_equal(r.get(), 100 % (av + 60))
    x = kn.array(rng.standard_normal((3, 1, 5)).astype(np.float32))
    assert x.squeeze().shape == (3, 5) and x.squeeze(1).shape == (3, 5)
    m, mv = kn.array(rng.standard_normal((4, 6))), None
    mv = m.get()
    for k in (0, 2, -1):
        np.testing.assert_array_equal(m.diagonal(k).get(), np.diagonal(mv, k))
    with pytest.raises(kn.ShapeError, match="diagonal"):
        x.diagonal()
    with pytest.raises(TypeError, match="axis"):
        kn.sum(x, axis=(0, 1.5))
    with pytest.raises(TypeError, match="axis"):
        x.max(axis=(True,))


def test_numpy_reduction_functions_stay_in_kiln(rng):
    """np.sum(t) and its kin call the tensor's methods with numpy's out= (and dtype= for var/std)."""
    xv = rng.uniform(0.5, 2.0, size=(4, 6)).astype(np.float32)
    x = kn.array(xv)
    for name in ("sum", "prod", "mean", "max", "min", "std", "var", "argmax", "argmin", "any", "all"):
        for axis in (None, 1):
            got = getattr(np, name)(x, axis=axis)
            assert kn._is_kiln(got), name
            close(got, getattr(np, name)(xv.astype(np.float64), axis=axis), kn.float32, rtol=1e-5, atol=1e-6)
    close(np.std(x, axis=0, ddof=1), np.std(xv.astype(np.float64), axis=0, ddof=1), kn.float32, rtol=1e-5)
    close(np.round(x, 1), np.round(xv, 1), kn.float32)
    out = kn.zeros((4,))
    assert np.sum(x, axis=1, out=out) is out
    close(out, xv.astype(np.float64).sum(axis=1), kn.float32, rtol=1e-5)
    with pytest.raises(TypeError, match="'out'"):
        x.sum(out=np.zeros(1))


# ---------------------------------------------------------------------------------------
# numpy's functions on kiln operands (__array_function__)
# ---------------------------------------------------------------------------------------


def test_array_function_dispatch(rng):
    """numpy functions kiln has run kiln's (lazy where kiln's are), with numpy's arguments;
    arguments kiln's function lacks, or a numpy out=, take numpy's own implementation; numpy
    functions kiln lacks still work (numpy converts the operands) and np.sum stays lazy."""
    av = rng.uniform(-2, 2, size=(5, 6)).astype(np.float32)
    a = kn.array(av)
    n = np.ones((5, 6), dtype=np.float32)
    lazy = [
        (np.where(a > 0, a, 0), np.where(av > 0, av, 0)), (np.clip(a, -1, 0.5), np.clip(av, -1, 0.5)),
        (np.tril(a, -1), np.tril(av, -1)), (np.round(a, 1), np.round(av, 1)),
        (np.nan_to_num(a), np.nan_to_num(av)), (np.sum(a, axis=1), av.sum(1)), (np.outer(a[0], a[1]), np.outer(av[0], av[1])),
    ]
    for i, (got, want) in enumerate(lazy):
        assert isinstance(got, kn.Expr), i
        np.testing.assert_allclose(got.get(), want, rtol=1e-6, err_msg=str(i))
    kiln_values = [
        (np.concatenate([a, n], axis=1), np.concatenate([av, n], axis=1)), (np.stack([a, a]), np.stack([av, av])),
        (np.reshape(a, (6, 5)), av.reshape(6, 5)), (np.transpose(a), av.T), (np.flip(a, 0), av[::-1]),
        (np.zeros_like(a), np.zeros_like(av)), (np.dot(a, a.T), av @ av.T),
    ]
    for i, (got, want) in enumerate(kiln_values):
        assert isinstance(got, (kn.Tensor, kn.Expr)), i
        np.testing.assert_allclose(got.get(), want, rtol=1e-5, atol=1e-6, err_msg=str(i))
    o = kn.empty(10, 6)
    assert np.concatenate([a, a], out=o) is o
    np.testing.assert_array_equal(o.get(), np.concatenate([av, av]))
    assert np.allclose(a, av) is True and np.array_equal(a, a) is True
    # numpy's way: a numpy out=, an argument kiln lacks, a form kiln lacks, functions kiln lacks
    on = np.zeros((5, 5), dtype=np.float32)
    assert np.dot(a, a.T, out=on) is on
    np.testing.assert_allclose(on, av @ av.T, rtol=1e-5, atol=1e-6)
    s64 = np.stack([a, a], dtype=np.float64)
    assert isinstance(s64, np.ndarray) and s64.dtype == np.float64
    np.testing.assert_array_equal(s64, np.stack([av, av]).astype(np.float64))
    rows, cols = np.where(a > 0)
    wr, wc = np.where(av > 0)
    np.testing.assert_array_equal(rows, wr)
    np.testing.assert_array_equal(cols, wc)
    np.testing.assert_array_equal(np.sort(a, axis=1), np.sort(av, axis=1))
    np.testing.assert_allclose(np.linalg.norm(a), np.linalg.norm(av), rtol=1e-6)
    np.testing.assert_allclose(np.cumsum(a, axis=0), np.cumsum(av, axis=0), rtol=1e-6)


def test_expand_dims_tuple_and_concatenate_flat(rng):
    """expand_dims takes numpy's tuple of result positions (a view, also of a transposed
    tensor); concatenate with axis=None joins the arrays flattened; bad axes are named."""
    av = rng.uniform(-1, 1, size=(3, 4)).astype(np.float32)
    a, an = kn.array(av).T, av.T
    for ax in (0, -1, 2, (0, 1), (0, -1), (1, 3), (-1, -2), ()):
        got, want = kn.expand_dims(a, ax), np.expand_dims(an, ax)
        assert isinstance(got, kn.Tensor) and got.shape == want.shape, ax
        np.testing.assert_array_equal(got.get(), want)
        assert np.expand_dims(a, ax).shape == want.shape
    with pytest.raises(kn.ArgumentError, match="'axis'"):
        kn.expand_dims(a, (0, 0))
    with pytest.raises(kn.ShapeError, match="'axis'"):
        kn.expand_dims(a, (0, 4))
    for got in (kn.concatenate([a, av], axis=None), np.concatenate([a, av], axis=None)):
        assert isinstance(got, kn.Tensor) and got.shape == (24,)
        np.testing.assert_array_equal(got.get(), np.concatenate([an, av], axis=None))
    with pytest.raises(TypeError, match="'axis'"):
        kn.concatenate([a, a], axis=1.0)


def test_swapaxes_moveaxis_diff_atleast_copy(rng):
    """swapaxes and moveaxis are views with numpy's axis rules, diff numpy's n-th difference
    (lazy; integers stay integers), atleast_1d/2d/3d numpy's shapes, copy a new tensor; numpy's
    functions of the same names reach them; bad axes and orders are named."""
    av = rng.uniform(-3, 3, size=(3, 4, 5)).astype(np.float32)
    a = kn.array(av)
    for src, dst in ((0, 2), (-1, 0), ((0, 1), (2, 0)), ([2], [0])):
        for got in (kn.moveaxis(a, src, dst), np.moveaxis(a, src, dst)):
            assert isinstance(got, kn.Tensor)
            np.testing.assert_array_equal(got.get(), np.moveaxis(av, src, dst))
    np.testing.assert_array_equal(kn.swapaxes(a, 0, -1).get(), np.swapaxes(av, 0, -1))
    np.testing.assert_array_equal(a.swapaxes(2, 1).get(), av.swapaxes(2, 1))
    for n in (0, 1, 2, 3):
        for ax in (0, 1, -1):
            got = kn.diff(a, n, ax)
            assert got.shape == np.diff(av, n, ax).shape
            np.testing.assert_allclose(got.get(), np.diff(av, n, ax), atol=1e-5)
    assert isinstance(kn.diff(a), kn.Expr)
    iv = rng.integers(-50, 50, size=(4, 6)).astype(np.int32)
    got = np.diff(kn.array(iv), 2)
    assert got.dtype is kn.int32
    np.testing.assert_array_equal(got.get(), np.diff(iv, 2))
    for name in ("atleast_1d", "atleast_2d", "atleast_3d"):
        for x in (np.float32(3), av[0, 0], av[0], av):
            got = getattr(kn, name)(kn.array(x))
            np.testing.assert_array_equal(got.get(), getattr(np, name)(x))
            assert got.shape == getattr(np, name)(x).shape
        both = getattr(np, name)(kn.array(av[0]), kn.array(av))
        assert isinstance(both, list) and [t.shape for t in both] == [w.shape for w in getattr(np, name)(av[0], av)]
    c = np.copy(a)
    assert isinstance(c, kn.Tensor)
    c[0] = 0
    np.testing.assert_array_equal(a.get(), av)
    with pytest.raises(kn.ShapeError, match="'axis2'"):
        kn.swapaxes(a, 0, 3)
    with pytest.raises(TypeError, match="'axis1'"):
        kn.swapaxes(a, 0.5, 1)
    with pytest.raises(kn.ArgumentError, match="'source'"):
        kn.moveaxis(a, (0, 0), (1, 2))
    with pytest.raises(kn.ArgumentError, match="'destination'"):
        kn.moveaxis(a, 0, (1, 2))
    with pytest.raises(kn.ArgumentError, match="'n'"):
        kn.diff(a, -1)
    with pytest.raises(kn.ShapeError, match="'axis'"):
        kn.diff(a, 1, 5)


@pytest.mark.parametrize("dt", [kn.float32, kn.float16, kn.float64], ids=lambda d: d.name)
def test_softmax_log_softmax(rng, dt):
    """softmax and log_softmax against an f64 reference over every axis form, without overflow
    for large inputs; integers give float32."""
    av = rng.uniform(-4, 4, size=(3, 4, 5)).astype(dt.np)
    a = kn.array(av)
    x = av.astype(np.float64)
    tol = 2e-3 if dt is kn.float16 else 1e-5
    for ax in (None, 0, 1, -1, (0, 2)):
        m = x.max(axis=ax, keepdims=True)
        e = np.exp(x - m)
        ref = e / e.sum(axis=ax, keepdims=True)
        got = kn.softmax(a, axis=ax)
        assert isinstance(got, kn.Expr) and got.dtype is dt
        np.testing.assert_allclose(got.get().astype(np.float64), ref, rtol=tol, atol=tol * 1e-2)
        np.testing.assert_allclose(kn.log_softmax(a, axis=ax).get().astype(np.float64), np.log(ref),
                                   rtol=tol, atol=tol)
    big = kn.array(np.array([[1000.0, 1001.0, 999.0]], dtype=dt.np))
    assert np.isfinite(kn.softmax(big, axis=1).get()).all() and np.isfinite(kn.log_softmax(big, axis=1).get()).all()
    assert kn.softmax(kn.array(np.array([1, 2, 3], dtype=np.int32))).dtype is kn.float32


def test_array_function_dot_rule_and_clip_arrays(rng):
    """np.dot reaches kiln's dot only where numpy's dot is a matrix product (1-D and 2-D
    operands); N-D and scalar operands keep numpy's dot. clip takes array bounds (numpy's
    broadcasting), lazily, through kn.clip and np.clip."""
    t3 = rng.uniform(-1, 1, size=(2, 3, 4)).astype(np.float32)
    t3b = np.ascontiguousarray(t3.transpose(0, 2, 1))
    m2, v1 = t3[0], t3[1, 0]
    got = np.dot(kn.array(t3), kn.array(t3b))
    assert isinstance(got, np.ndarray) and got.shape == (2, 3, 2, 3)
    np.testing.assert_allclose(got, np.dot(t3, t3b), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.dot(kn.array(v1), 2.0), v1 * 2)
    mv = np.dot(kn.array(m2), kn.array(v1))
    assert isinstance(mv, kn.Tensor)
    np.testing.assert_allclose(mv.get(), m2 @ v1, rtol=1e-5, atol=1e-6)
    lo = np.full((3, 4), -0.2, dtype=np.float32)
    for got, want in ((kn.clip(kn.array(m2), lo, 0.6), np.clip(m2, lo, 0.6)),
                      (np.clip(kn.array(m2), kn.array(lo), None), np.clip(m2, lo, None)),
                      (kn.clip(kn.array(m2), None, kn.array(v1)), np.clip(m2, None, v1)),
                      (np.clip(kn.array(m2), np.float32(-0.5), 0.5), np.clip(m2, -0.5, 0.5))):
        assert isinstance(got, kn.Expr)
        np.testing.assert_array_equal(got.get(), want)


def test_tensordot_inner(rng):
    """tensordot over numpy's axes forms (an int, a pair of lists or of ints, views, 0 for an
    outer product, an empty contraction) through kiln's matrix product; inner over the last axes
    (a 0-d operand multiplies); numpy's functions reach them; mismatches are named."""
    a = rng.uniform(-1, 1, size=(3, 4, 5)).astype(np.float32)
    b = rng.uniform(-1, 1, size=(4, 5, 6)).astype(np.float32)
    c = rng.uniform(-1, 1, size=(5, 3, 2)).astype(np.float32)
    d = rng.uniform(-1, 1, size=(5, 6)).astype(np.float32)
    for x, y, ax in ((a, b, 2), (a, d, 1), (a, b, 0), (a, c, ([2, 0], [0, 1])), (a, c, (2, 0)),
                     (a[:, ::-1], b, ([1], [0])), (a.transpose(2, 0, 1), c, ([0], [0]))):
        want = np.tensordot(x, y, ax)
        for got in (kn.tensordot(kn.array(x), kn.array(y), ax), np.tensordot(kn.array(x), kn.array(y), ax)):
            assert isinstance(got, kn.Tensor) and got.shape == want.shape, ax
            np.testing.assert_allclose(got.get(), want, rtol=1e-5, atol=1e-5)
    for x, y in ((a, rng.uniform(-1, 1, size=(2, 5)).astype(np.float32)), (a[0, 0], a[1, 1]), (np.float32(2), a)):
        want = np.inner(x, y)
        got = np.inner(kn.array(x), kn.array(y))
        assert got.shape == np.shape(want)
        np.testing.assert_allclose(got.get(), want, rtol=1e-5, atol=1e-5)
    z = kn.tensordot(kn.zeros(3, 0), kn.zeros(0, 2), 1)
    assert z.shape == (3, 2) and (z.get() == 0).all()
    with pytest.raises(kn.ShapeError, match="'axes'"):
        kn.tensordot(kn.array(a), kn.array(b), 4)
    with pytest.raises(kn.ShapeError, match="'axes'"):
        kn.tensordot(kn.array(a), kn.array(b), ([0], [0]))
    with pytest.raises(kn.ShapeError, match="'axes'"):
        kn.tensordot(kn.array(a), kn.array(b), ([0, 1], [0]))
    with pytest.raises(TypeError, match="'axes'"):
        kn.tensordot(kn.array(a), kn.array(b), "x")
    with pytest.raises(kn.ArgumentError, match="'axes'"):
        kn.tensordot(kn.array(a), kn.array(c), ([2, 2], [0, 1]))


@pytest.mark.parametrize("dt", [kn.float32, kn.float16, kn.int32], ids=lambda d: d.name)
def test_pad_meshgrid_take(rng, dt):
    """pad in modes 'constant' and 'edge' over numpy's pad_width forms (other modes: np.pad runs
    numpy's); meshgrid in both indexings, dense and sparse, for 1-3 arrays; take along an axis
    or flattened with any index shape; numpy's functions reach them; bad arguments are named."""
    a, m = make(rng, (3, 4), dt)
    at, t = make(rng, (2, 3, 4), dt)
    for xk, x, forms in ((a, m, (1, (1, 2), ((1, 0), (2, 1)), [[2]], 0)), (at, t, (1, ((0, 1), (2, 0), (1, 1))))):
        for pw in forms:
            for mode, kw in (("constant", {"constant_values": 7}), ("constant", {}), ("edge", {})):
                want = np.pad(x, pw, mode=mode, **kw)
                for got in (kn.pad(xk, pw, mode=mode, **kw), np.pad(xk, pw, mode=mode, **kw)):
                    assert isinstance(got, kn.Tensor) and got.dtype is dt and got.shape == want.shape
                    np.testing.assert_array_equal(got.get(), want)
    r = np.pad(a, 1, mode="reflect")
    np.testing.assert_array_equal(r, np.pad(m, 1, mode="reflect"))
    x1, y1, z1 = np.arange(3.0), np.arange(4.0), np.arange(2.0)
    for indexing in ("xy", "ij"):
        for sparse in (False, True):
            for args in ((x1,), (x1, y1), (x1, y1, z1)):
                want = np.meshgrid(*args, indexing=indexing, sparse=sparse)
                for got in (kn.meshgrid(*[kn.array(a) for a in args], indexing=indexing, sparse=sparse),
                            np.meshgrid(*[kn.array(a) for a in args], indexing=indexing, sparse=sparse)):
                    assert len(got) == len(want)
                    for g, w in zip(got, want):
                        assert isinstance(g, kn.Tensor) and g.shape == w.shape
                        np.testing.assert_array_equal(g.get(), w)
    for ind, ax in (([0, 2, -1], 1), (np.array([[1, 0], [2, 2]]), 0), ([5, 0, 11], None), (np.array(2), 1), ([], 0)):
        want = np.take(m, ind, axis=ax)
        for got in (kn.take(a, ind, axis=ax), np.take(a, ind, axis=ax)):
            assert isinstance(got, kn.Tensor) and got.dtype is dt and got.shape == want.shape
            np.testing.assert_array_equal(got.get(), want)
    with pytest.raises(kn.BoundsError, match="'indices'"):
        kn.take(a, [4], axis=1)
    with pytest.raises(TypeError, match="'indices'"):
        kn.take(a, [0.5])
    with pytest.raises(kn.ArgumentError, match="'pad_width'"):
        kn.pad(a, -1)
    with pytest.raises(kn.ShapeError, match="'pad_width'"):
        kn.pad(a, ((1, 1), (1, 1), (1, 1)))
    with pytest.raises(kn.ArgumentError, match="'mode'"):
        kn.pad(a, 1, mode="wrap")
    with pytest.raises(TypeError, match="'constant_values'"):
        kn.pad(a, 1, constant_values=(1, 2))
    with pytest.raises(kn.ArgumentError, match="'indexing'"):
        kn.meshgrid(a[0], indexing="xx")


@pytest.mark.parametrize("dt", [kn.float32, kn.float16, kn.int32], ids=lambda d: d.name)
def test_roll_broadcast_arrays_logical(rng, dt):
    """roll over numpy's shift / axis forms (ints, tuples that broadcast, an axis twice, None,
    shifts past the length and negative), on views and lazy inputs; broadcast_arrays as views
    of the common shape; logical_and / or / xor / not as lazy 0/1 with NaN counting as true;
    numpy's namesakes and ufuncs reach them; bad arguments are named."""
    a, m = make(rng, (5, 6), dt)
    for x, xm in ((a, m), (a[::2, ::-1], m[::2, ::-1]), (a.T, m.T)):
        for sh, ax in ((1, 1), (-2, 0), (8, 1), ((1, 2), (0, 1)), (7, None), ((1, 1), (1, 1)), (3, (0, 1)),
                       (0, 0), (-13, None)):
            want = np.roll(xm, sh, ax)
            for got in (kn.roll(x, sh, ax), np.roll(x, sh, ax)):
                assert isinstance(got, kn.Tensor) and got.dtype is dt and got.shape == want.shape
                np.testing.assert_array_equal(got.get(), want)
    np.testing.assert_array_equal(kn.roll(a + a, 2, 1).get(), np.roll(m + m, 2, 1))
    assert kn.roll(kn.zeros((0, 3), dtype=dt), 1, 1).shape == (0, 3)
    col = a[:, :1]
    got = kn.broadcast_arrays(a, col, a[0], kn.array(np.float32(2)))
    assert isinstance(got, tuple) and [g.shape for g in got] == [(5, 6)] * 4
    np.testing.assert_array_equal(got[1].get(), np.broadcast_to(m[:, :1], (5, 6)))
    np.testing.assert_array_equal(got[2].get(), np.broadcast_to(m[0], (5, 6)))
    assert [g.shape for g in np.broadcast_arrays(col, a[0])] == [(5, 6)] * 2
    x, xm = make(rng, (4, 7), kn.float32)
    x[1, 2] = float("nan")
    xm[1, 2] = np.nan
    y, ym = make(rng, (7,), kn.float32)
    xz, yz = x * (abs(x) > 1), y * (abs(y) > 1)           # zeros in both
    xzm, yzm = xm * (np.abs(xm) > 1), ym * (np.abs(ym) > 1)
    for kf, nf in ((kn.logical_and, np.logical_and), (kn.logical_or, np.logical_or),
                   (kn.logical_xor, np.logical_xor)):
        for p, q, pm, qm in ((xz, yz, xzm, yzm), (xz, 0.0, xzm, 0.0), (2, yz, 2, yzm)):
            want = nf(pm, qm).astype(np.float64)
            for got in (kf(p, q), nf(kn.evaluate(p) if not np.isscalar(p) else p, q)):
                np.testing.assert_array_equal(np.asarray(got.get() if hasattr(got, "get") else got), want)
    np.testing.assert_array_equal(kn.logical_not(xz).get(), np.logical_not(xzm).astype(np.float32))
    np.testing.assert_array_equal(np.logical_not(kn.evaluate(xz)).get(), np.logical_not(xzm))
    with pytest.raises(kn.ShapeError, match="'shift'"):
        kn.roll(a, (1, 2, 3), (0, 1))
    with pytest.raises(kn.ShapeError, match="'axis'"):
        kn.roll(a, 1, 2)
    with pytest.raises(TypeError, match="'shift'"):
        kn.roll(a, 1.5, 0)
    with pytest.raises(kn.ShapeError, match="'args'"):
        kn.broadcast_arrays(a, a[:2, :2])
