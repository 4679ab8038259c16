"""kiln tensors against numpy: constructors, dtypes, attributes, views and indexing with
numpy's view rules, host transfer, repr, len, iteration, pickling, numpy interop (buffer
protocol, __array_interface__, DLPack) on the CPU backend; on the GPU (make test-gpu) the
same tests check the CUDA forms, the consumers being in test_interop_gpu.py."""
import pickle

import numpy as np
import pytest

import kiln as kn
from conftest import DEVICE, ALL, FLOATS, INTS, close, make, values


@pytest.mark.parametrize("dt", ALL, ids=lambda d: d.name)
def test_array_roundtrip(rng, dt):
    for shape in [(), (1,), (7,), (3, 129), (2, 3, 5)]:
        v = values(rng, shape, dt)
        t = kn.array(v, dtype=dt)
        assert t.shape == shape and t.ndim == len(shape) and t.size == int(np.prod(shape))
        assert t.dtype == dt and t.dtype is dt
        ref = v if dt.np is None else v.astype(dt.np)
        if dt is kn.bfloat16:
            close(t, v, dt)
        else:
            np.testing.assert_array_equal(t.get(), ref)
            assert t.get().dtype == dt.np


def test_dtype_spellings():
    assert kn.float32 == np.float32 and kn.float32 == "float32" and kn.float32 == "f32"
    assert kn.float16 == np.dtype("float16") and kn.int8 == "int8" and kn.uint8 == np.uint8
    assert kn.array([1.0], dtype="bfloat16").dtype is kn.bfloat16
    assert kn.zeros(3, dtype=np.int32).dtype is kn.int32
    assert kn.zeros(3, dtype="half").dtype is kn.float16
    assert pickle.loads(pickle.dumps(kn.float16)) is kn.float16


def test_array_inference():
    assert kn.array([1.5, 2]).dtype is kn.float64
    assert kn.array([1, 2]).dtype is kn.int32          # int64 becomes int32
    assert kn.array([True, False]).dtype is kn.uint8   # bool becomes uint8
    assert kn.array(np.zeros(3, np.float32)).dtype is kn.float32
    assert kn.array(2.5).shape == () and float(kn.array(2.5)) == 2.5
    np.testing.assert_array_equal(kn.array([[1, 2], [3, 4]]).get(), [[1, 2], [3, 4]])


def test_byte_order_and_broadcast_to():
    for dt in (">f4", ">i4", ">f8", ">i8", ">u2"):
        a = np.arange(-2, 4).astype(dt)
        t = kn.array(a)
        assert t.dtype is kn.array(a.astype(a.dtype.newbyteorder("="))).dtype, dt
        np.testing.assert_array_equal(t.get(), a, err_msg=dt)
    assert kn.array(np.arange(3, dtype=">f4")).dtype is kn.float32   # not widened to float64
    b = kn.broadcast_to(kn.array(np.arange(4, dtype=np.float32)), (3, 4))
    assert b.shape == (3, 4) and b.get().tolist() == [[0, 1, 2, 3]] * 3
    assert kn.broadcast_to(np.arange(2.0), (2, 2)).get().tolist() == [[0, 1], [0, 1]]
    with pytest.raises(ValueError):
        b[...] = 1.0                                    # a broadcast view is read-only
    with pytest.raises(ValueError):
        kn.broadcast_to(kn.zeros(3), (2, 4))


def test_wide_integers_and_complex_not_lost():
    big = np.array([1, -5, 2**40], np.int64)            # astype(int32) would make 2**40 a 0
    for make_it in (lambda: kn.array(big), lambda: kn.array(2**40), lambda: kn.array(big, dtype=kn.int8),
                    lambda: kn.array(np.array([2**32], np.uint64))):
        with pytest.raises(OverflowError) as e:
            make_it()
        assert "does not fit int32" in str(e.value) and "'obj'" in str(e.value)
    assert str(2**40) in str(pytest.raises(OverflowError, kn.array, big).value)
    f = kn.array(big, dtype=kn.float64)                 # a float dtype keeps them
    np.testing.assert_array_equal(f.get(), big.astype(np.float64))
    assert kn.array(np.array([-2**31, 2**31 - 1], np.int64)).get().tolist() == [-2**31, 2**31 - 1]
    t = kn.zeros(3, dtype=kn.float32)
    t[:] = big                                          # into a float tensor: as floats
    np.testing.assert_array_equal(t.get(), big.astype(np.float32))
    i = kn.zeros(3, dtype=kn.int32)
    with pytest.raises(OverflowError) as e:
        i[:] = big
    assert "'value'" in str(e.value)
    with pytest.raises(OverflowError):
        i[[0, 1, 2]] = big                              # the advanced path too
    with pytest.raises(TypeError) as e:
        kn.array(np.array([1 + 2j]))
    assert "imaginary" in str(e.value)
    assert kn.array(np.array([1.5 + 0j, 2])).get().tolist() == [1.5, 2.0]


def test_constructors(rng):
    np.testing.assert_array_equal(kn.zeros((2, 3)).get(), np.zeros((2, 3), np.float32))
    np.testing.assert_array_equal(kn.ones(4, 5).get(), np.ones((4, 5), np.float32))
    np.testing.assert_array_equal(kn.full((3,), 7.5, dtype=kn.float64).get(), np.full(3, 7.5))
    assert kn.empty((2, 7), dtype=kn.float16).shape == (2, 7)
    assert kn.zeros(0).shape == (0,) and kn.zeros(0).get().shape == (0,)
    np.testing.assert_array_equal(kn.arange(10).get(), np.arange(10))
    assert kn.arange(10).dtype is kn.int32
    close(kn.arange(0.5, 3.0, 0.25), np.arange(0.5, 3.0, 0.25), kn.float32)
    np.testing.assert_array_equal(kn.arange(10, 0, -3).get(), np.arange(10, 0, -3))
    t, _ = make(rng, (3, 4), kn.float16)
    for like, val in ((kn.zeros_like, 0), (kn.ones_like, 1)):
        r = like(t)
        assert r.shape == (3, 4) and r.dtype is kn.float16
        np.testing.assert_array_equal(r.get(), np.full((3, 4), val, np.float16))
    r = kn.full_like(t, 3, dtype=kn.int32)
    assert r.dtype is kn.int32 and (r.get() == 3).all()
    assert kn.empty_like(t).shape == t.shape


def test_random():
    kn.use(device=DEVICE, seed=5)
    a = kn.rand(1000, 7)
    b = kn.randn((1000, 7))
    av, bv = a.get(), b.get()
    assert a.dtype is kn.float32 and av.shape == (1000, 7)
    assert av.min() >= 0 and av.max() < 1 and abs(av.mean() - 0.5) < 0.02
    assert abs(bv.mean()) < 0.05 and abs(bv.std() - 1) < 0.05
    kn.use(device=DEVICE, seed=5)
    np.testing.assert_array_equal(kn.rand(1000, 7).get(), av)    # same seed, same numbers
    assert not np.array_equal(kn.rand(1000, 7).get(), av)        # the counter moves on
    c = kn.empty(64, 33)
    c[...] = kn.rand()                                          # shapeless generator
    assert 0 <= c.get().min() and c.get().max() < 1 and c.get().std() > 0.2


def test_attributes(rng):
    t, ref = make(rng, (3, 5, 7), kn.float32)
    assert t.strides == np.zeros((3, 5, 7), np.float32).strides
    assert t.itemsize == 4 and t.nbytes == 3 * 5 * 7 * 4
    assert t.T.shape == (7, 5, 3) and t.T.strides == ref.astype(np.float32).T.strides
    np.testing.assert_array_equal(t.T.get(), ref.T)
    assert len(t) == 3
    with pytest.raises(TypeError):
        len(kn.array(1.0))
    rows = list(t)
    assert len(rows) == 3
    for i, r in enumerate(rows):
        np.testing.assert_array_equal(r.get(), ref[i])
    assert t.device == DEVICE
    t.name = "weights"
    assert t.name == "weights"


INDEXES = [
    (1,), (-1,), (slice(None),), (slice(1, None),), (slice(None, None, -1),), (slice(None, None, 2),),
    (slice(5, 0, -2),), (Ellipsis, 1), (1, Ellipsis), (None,), (slice(None), None, 2), (Ellipsis, None),
    (0, 1, 2), (slice(-100, 100), slice(1, -1), slice(None, None, -3)), (2, slice(None), -1), (-3,),
    (slice(3, 1),),
]


@pytest.mark.parametrize("index", INDEXES, ids=str)
def test_indexing_views(rng, index):
    t, ref = make(rng, (4, 6, 9), kn.float64)
    v = t[index]
    expect = ref[index]
    assert v.shape == expect.shape
    np.testing.assert_array_equal(v.get(), expect)
    # a view: writing through it shows in the base
    if v.size:
        v[...] = 42.0
        base = ref.copy()
        base[index] = 42.0
        np.testing.assert_array_equal(t.get(), base)


def test_view_of_view_and_negative_strides(rng):
    t, ref = make(rng, (8, 10), kn.float32)
    v = t[::-2, 1::3][1:, ::-1]
    e = ref[::-2, 1::3][1:, ::-1]
    np.testing.assert_array_equal(v.get(), e)
    np.testing.assert_array_equal(np.asarray(v), e)   # buffer protocol with negative strides
    np.testing.assert_array_equal(v.T.get(), e.T)
    np.testing.assert_array_equal(v.copy().get(), e)
    assert v.copy()._is_contiguous and not v._is_contiguous
    if DEVICE != "cpu":          # GPU memory: __cuda_array_interface__ (test_interop_gpu.py)
        assert v.__cuda_array_interface__["strides"] == (-80, -12)
        return
    ai = v.__array_interface__
    assert ai["strides"] == np.asarray(v).strides and ai["data"][0] == v._data

    class OnlyInterface:  # numpy through __array_interface__ alone (no buffer protocol)
        __array_interface__ = ai
    np.testing.assert_array_equal(np.asarray(OnlyInterface()), e)


def test_advanced_indexing_copies(rng):
    t, ref = make(rng, (5, 4), kn.float32)
    np.testing.assert_array_equal(t[[0, 3, 3]].get(), ref[[0, 3, 3]])
    np.testing.assert_array_equal(t[ref > 0].get(), ref[ref > 0])
    t[[1, 2]] = 0.0
    ref[[1, 2]] = 0.0
    np.testing.assert_array_equal(t.get(), ref)


def test_index_errors(rng):
    t, _ = make(rng, (4, 6), kn.float32)
    with pytest.raises(IndexError) as e:
        t[4]
    assert "index" in str(e.value)
    with pytest.raises(IndexError):
        t[0, 0, 0]
    with pytest.raises(IndexError):
        t[..., ...]
    with pytest.raises(IndexError):
        t[:, -7]
    with pytest.raises(IndexError) as e:                # past int64: out of bounds, not an OverflowError
        t[10**30]
    assert "index" in str(e.value)


def test_slices_with_any_python_int(rng):
    t, ref = make(rng, (4, 6), kn.float32)
    for index in (np.s_[::2**63 - 1], np.s_[::2**63], np.s_[::-2**63], np.s_[::-(2**63 - 1)], np.s_[::-10**30],
                  np.s_[-2**63::-1], np.s_[-2**63:], np.s_[:-2**63:-1], np.s_[2**70:], np.s_[-10**30:10**30:3],
                  np.s_[1, ::-2**63], np.s_[:, 2**64::-2]):
        np.testing.assert_array_equal(t[index].get(), ref[index], err_msg=str(index))


def test_setitem(rng):
    t, ref = make(rng, (5, 6), kn.float32)
    t[1] = 3.0
    ref[1] = 3.0
    t[:, 2] = np.arange(5)
    ref[:, 2] = np.arange(5)
    t[2:4, 1:3] = np.ones((2, 2)) * 9
    ref[2:4, 1:3] = 9
    row = kn.array(np.arange(6.0), dtype=kn.float32)
    t[4] = row * 2
    ref[4] = np.arange(6.0) * 2
    t[0, ::2] = [1, 2, 3]
    ref[0, ::2] = [1, 2, 3]
    np.testing.assert_array_equal(t.get(), ref)
    t.fill(-1)
    assert (t.get() == -1).all()


def test_reshape_and_transpose(rng):
    t, ref = make(rng, (4, 6), kn.float32)
    np.testing.assert_array_equal(t.reshape(3, 8).get(), ref.reshape(3, 8))
    np.testing.assert_array_equal(t.reshape((2, -1, 3)).get(), ref.reshape(2, -1, 3))
    np.testing.assert_array_equal(t.T.reshape(-1).get(), ref.T.reshape(-1))   # needs a copy
    np.testing.assert_array_equal(t.ravel().get(), ref.ravel())
    np.testing.assert_array_equal(t.flatten().get(), ref.flatten())
    s, sref = make(rng, (2, 3, 4), kn.float32)
    np.testing.assert_array_equal(s.transpose(1, 2, 0).get(), sref.transpose(1, 2, 0))
    np.testing.assert_array_equal(s.transpose((2, 0, 1)).get(), sref.transpose(2, 0, 1))
    np.testing.assert_array_equal(s.swapaxes(0, 2).get(), sref.swapaxes(0, 2))
    np.testing.assert_array_equal(s[:, :1].broadcast_to((2, 5, 4)).get(),
                                  np.broadcast_to(sref[:, :1], (2, 5, 4)))
    with pytest.raises(ValueError) as e:
        t.reshape(5, 5)
    assert "shape" in str(e.value)


@pytest.mark.parametrize("dt", ALL, ids=lambda d: d.name)
def test_astype_copy(rng, dt):
    t, ref = make(rng, (3, 7), kn.float32, -100, 100)
    c = t[:, ::2].astype(dt)
    assert c.dtype is dt
    expect = ref[:, ::2]
    if dt.kind in "iu":
        expect = np.clip(np.trunc(expect), -128 if dt is kn.int8 else (0 if dt is kn.uint8 else -2**31),
                         127 if dt is kn.int8 else (255 if dt is kn.uint8 else 2**31 - 1))
    close(c, expect, dt, rtol=4e-3 if dt.kind == "f" and dt.itemsize == 2 else None)
    d = t.copy()
    d[...] = 0
    np.testing.assert_array_equal(t.get(), ref.astype(np.float32))


def test_repr_str_scalars(rng):
    t = kn.array(np.array([[1.5, 2.0], [3.0, 4.25]]), dtype=kn.float32)
    r = repr(t)
    assert r.startswith("kiln.Tensor(") and "1.5" in r and "4.25" in r and "float32" in r
    assert "1.5" in str(t)
    assert repr(t + 1).startswith("kiln.Tensor(")       # an expression prints its value
    s = kn.array(3.25)
    assert float(s) == 3.25 and int(s) == 3 and s.item() == 3.25 and bool(s)
    with pytest.raises(ValueError):
        bool(t)
    with pytest.raises(TypeError):
        float(t)
    assert t.tolist() == [[1.5, 2.0], [3.0, 4.25]]
    assert f"{kn.array(0.5):.2f}" == "0.50"


@pytest.mark.parametrize("dt", ALL, ids=lambda d: d.name)
def test_pickle(rng, dt):
    t, ref = make(rng, (3, 4), dt)
    u = pickle.loads(pickle.dumps(t[:, 1:]))
    assert u.dtype is dt and u.shape == (3, 3)
    np.testing.assert_array_equal(u.get(), t[:, 1:].get())
    e = pickle.loads(pickle.dumps(t[:, 1:] * 1))
    np.testing.assert_array_equal(e.get(), t[:, 1:].get())


@pytest.mark.parametrize("dt", [d for d in ALL if d is not kn.bfloat16], ids=lambda d: d.name)
def test_numpy_zero_copy(rng, dt):
    if kn.context().device() != 1:
        pytest.skip("buffer protocol: CPU backend only")
    t, ref = make(rng, (4, 5), dt)
    a = np.asarray(t)
    assert a.dtype == dt.np and not a.flags["OWNDATA"]
    a[1, 2] = 3
    assert t[1, 2].item() == 3                     # zero copy: numpy writes into kiln memory
    m = memoryview(t[:, 1::2])
    assert m.shape == (4, 2) and m.strides == (5 * dt.itemsize, 2 * dt.itemsize)
    ai = t.__array_interface__
    assert ai["data"][0] == t._data and ai["version"] == 3
    assert np.asarray(t[::-1]).base is not None


def test_bf16_to_numpy(rng):
    t, ref = make(rng, (3, 3), kn.bfloat16)
    a = np.asarray(t)                              # no numpy bf16: a float32 copy
    assert a.dtype == np.float32
    np.testing.assert_array_equal(a, ref)


@pytest.mark.parametrize("dt", ALL, ids=lambda d: d.name)
def test_dlpack_export(rng, dt):
    t, ref = make(rng, (4, 6), dt)
    if DEVICE != "cpu":          # kDLCUDA, device 0; the GPU consumers are in test_interop_gpu.py
        assert t.__dlpack_device__() == (2, 0)
        assert type(t[:, ::-2].__dlpack__()).__name__ == "PyCapsule"
        return
    assert t.__dlpack_device__() == (1, 0)
    if dt is kn.bfloat16:
        cap = t.__dlpack__()          # numpy has no bf16; the capsule itself is fine
        assert type(cap).__name__ == "PyCapsule"
        return
    v = t[:, ::-2]
    a = np.from_dlpack(v)
    np.testing.assert_array_equal(a, v.get())
    del t, v
    np.testing.assert_array_equal(a, ref[:, ::-2].astype(dt.np))   # the capsule keeps the memory alive


def test_from_dlpack(rng):
    a = rng.standard_normal((3, 5)).astype(np.float32)
    t = kn.from_dlpack(a)
    np.testing.assert_array_equal(t.get(), a)
    t2, _ = make(rng, (2, 2), kn.float32)
    assert kn.from_dlpack(t2) is t2
    assert hasattr(t2, "__cuda_array_interface__") == (DEVICE != "cpu")


def test_not_constructible():
    with pytest.raises(TypeError):
        kn.Tensor()
    with pytest.raises(TypeError):
        kn.array(np.array(["a", "b"], dtype=object))
    with pytest.raises(TypeError) as e:
        kn.zeros(3, dtype="complex64")
    assert "dtype" in str(e.value)


def test_kiln_masks_and_index_arrays(rng):
    t, ref = make(rng, (6, 5), kn.float32)
    np.testing.assert_array_equal(t[t > 0].get(), ref[ref > 0])          # comparison as a mask
    idx = kn.argmax(t, axis=1)                                             # int32 indices
    np.testing.assert_array_equal(t[idx].get(), ref[ref.argmax(1)])
    t[t < 0] = 0.0
    np.testing.assert_array_equal(t.get(), np.where(ref < 0, 0, ref))


def test_shape_functions(rng):
    a, av = make(rng, (3, 4), kn.float32)
    b, bv = make(rng, (3, 2), kn.float64)
    c = kn.concatenate([a, b[:, ::-1]], axis=1)
    assert c.dtype is kn.float64
    np.testing.assert_array_equal(c.get(), np.concatenate([av, bv[:, ::-1]], axis=1))
    np.testing.assert_array_equal(kn.concatenate([a, a * 2], axis=-2).get(), np.concatenate([av, av * 2]))
    np.testing.assert_array_equal(kn.stack([a, a.T.T], axis=1).get(), np.stack([av, av], axis=1))
    np.testing.assert_array_equal(kn.expand_dims(a, -1).get(), av[:, :, None])
    np.testing.assert_array_equal(kn.squeeze(kn.expand_dims(a, 0)).get(), av)
    np.testing.assert_array_equal(kn.squeeze(a[:1], axis=0).get(), av[0])
    np.testing.assert_array_equal(kn.transpose(a).get(), av.T)
    np.testing.assert_array_equal(kn.reshape(a, (2, 6)).get(), av.reshape(2, 6))
    with pytest.raises(ValueError) as e:
        kn.concatenate([a, b], axis=0)
    assert "'arrays'" in str(e.value)
    with pytest.raises(ValueError) as e:
        kn.squeeze(a, axis=0)
    assert "'axis'" in str(e.value)
    with pytest.raises(ValueError) as e:
        kn.concatenate([])
    with pytest.raises(ValueError) as e:
        kn.expand_dims(a, 5)
    assert "'axis'" in str(e.value)
    for bad in (5, -3, (0, 7)):                           # out of range, not wrapped onto another axis
        with pytest.raises(ValueError) as e:
            kn.squeeze(a[:1], axis=bad)
        assert "out of range" in str(e.value)
    with pytest.raises(ValueError) as e:
        kn.stack([a, a.T])
    assert "stack needs one shape" in str(e.value) and str(a.T.shape) in str(e.value)


def test_buffer_flags_and_dlpack_copy(rng):
    if kn.context().device() != 1:
        pytest.skip("buffer protocol: CPU backend only")
    t, ref = make(rng, (4, 6), kn.float32)
    v = t[:, ::2]
    m = memoryview(v)
    assert not m.c_contiguous and m.strides == (24, 8)
    with pytest.raises((BufferError, ValueError)):
        np.frombuffer(v, dtype=np.float32)     # asks for a plain (contiguous) buffer
    assert memoryview(t).c_contiguous
    b = t[:1].broadcast_to((3, 6))
    a = np.asarray(b)                         # read-only view of the broadcast
    assert not a.flags["WRITEABLE"]
    np.testing.assert_array_equal(a, np.broadcast_to(ref[:1], (3, 6)))
    cap_copy = np.from_dlpack(_DL(t, copy=True))
    cap_view = np.from_dlpack(_DL(t))
    t[0, 0] = 99.0
    assert cap_view[0, 0] == 99.0 and cap_copy[0, 0] == np.float32(ref[0, 0])


class _DL:
    """Passes copy= through to kiln's __dlpack__ (numpy's from_dlpack takes no copy here)."""

    def __init__(self, t, copy=None):
        self.t, self.copy = t, copy

    def __dlpack__(self, **kw):
        kw["copy"] = self.copy
        return self.t.__dlpack__(**{k: v for k, v in kw.items() if k in ("stream", "copy")})

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()
