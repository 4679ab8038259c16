"""Zero-copy import into kiln (kn.from_dlpack, kn.asarray) of host memory, in a CPU context
(so these run on every backend): numpy arrays of every kiln dtype become views of their
memory (same data pointer; writes show both ways), strided / reversed / transposed views,
the owner kept alive and released exactly once, the memory report's "external" listing,
the copy fallbacks (dtypes kiln lacks, read-only arrays, copy=True) and their errors, and a
hand-made DLPack producer (ctypes) for bfloat16, byte offsets, dtypes nobody can copy and
the deleter count. The GPU side (PyTorch / CuPy device tensors) is in test_interop_gpu.py."""
import ctypes
import gc
import weakref

import numpy as np
import pytest

import kiln as kn

NP_DTYPES = [np.float32, np.float16, np.float64, np.int8, np.uint8, np.int32]


@pytest.fixture(autouse=True)
def cpu_context():
    """Host memory is wrapped in a CPU context, whatever KILN_DEVICE says."""
    prev = kn._kiln.set_current(kn._kiln.Context(device=1))
    yield
    kn._kiln.set_current(prev)


def rand(rng, shape, dt):
    """Random values of numpy dtype dt, never 0."""
    dt = np.dtype(dt)
    if dt.kind == "f":
        v = rng.uniform(0.25, 4.0, size=shape) * rng.choice([-1.0, 1.0], size=shape)
    elif dt.kind == "u":
        v = rng.integers(1, 40, size=shape)
    else:
        v = rng.integers(1, 40, size=shape) * rng.choice([-1, 1], size=shape)
    return v.astype(dt)


@pytest.mark.parametrize("npdt", NP_DTYPES, ids=lambda d: np.dtype(d).name)
def test_zero_copy_every_dtype(rng, npdt):
    a = rand(rng, (5, 7), npdt)
    t = kn.from_dlpack(a)
    assert t._data == a.ctypes.data                     # the same memory
    assert t.dtype == np.dtype(npdt) and t.shape == a.shape and t.strides == a.strides
    np.testing.assert_array_equal(t.get(), a)
    before = a.copy()
    t[1:3] = t[1:3] * 2 + 1                             # kiln writes land in numpy's memory
    want = before.copy()
    want[1:3] = (before[1:3].astype(np.float64) * 2 + 1).astype(npdt)
    np.testing.assert_array_equal(a, want)
    a[0, 0] = 3                                         # numpy's writes are seen by kiln
    assert t[0, 0].item() == 3
    s = kn.sum(kn.cast(t, kn.float64))                 # lazy: reads the memory when evaluated
    a[4, 6] = 5
    assert s.item() == pytest.approx(a.astype(np.float64).sum())


def test_strided_views(rng):
    base = rand(rng, (6, 8), np.float32)
    for v in (base[:, ::2], base[::-1, ::-3], base.T, base[1:5, 2:7].T[::-1], base[2]):
        t = kn.from_dlpack(v)
        assert t._data == v.ctypes.data, v.strides      # address of element [0, ..., 0]
        assert t.strides == v.strides
        np.testing.assert_array_equal(t.get(), v)
    ref = base.copy()
    v = base[::-1, ::-3]
    t = kn.from_dlpack(v)
    t[...] = -t                                         # only the viewed elements change
    ref[::-1, ::-3] *= -1
    np.testing.assert_array_equal(base, ref)
    # a reversed view assigned into its own base goes through a temporary
    a = rand(rng, (40, 50), np.float32)                 # several CPU blocks
    want = a[::-1, ::-1].copy()
    ka, kr = kn.from_dlpack(a), kn.from_dlpack(a[::-1, ::-1])
    ka[...] = kr
    np.testing.assert_array_equal(a, want)
    # dot into numpy memory
    x, y, out = rand(rng, (4, 3), np.float64), rand(rng, (3, 5), np.float64), np.zeros((5, 4))
    kn.dot(kn.from_dlpack(y).T, kn.from_dlpack(x).T, out=kn.from_dlpack(out))
    np.testing.assert_allclose(out, (x @ y).T, rtol=1e-13)


def test_owner_kept_alive_and_released_once(rng):
    a = rand(rng, (300, 10), np.float32)
    ref = a.copy()
    alive = weakref.ref(a)
    used = kn.memory_in_use()
    t = kn.from_dlpack(a)
    assert kn.memory_in_use() == used                   # foreign memory is not counted
    report = kn.memory_report()
    assert "external" in report and "test_dlpack_import.py" in report
    v = t[::2]
    e = v + 1                                           # a lazy expression holds it too
    del a, t
    gc.collect()
    assert alive() is not None
    np.testing.assert_array_equal(v.get(), ref[::2])
    del v
    gc.collect()
    assert alive() is not None                          # the expression still reads it
    np.testing.assert_array_equal(e.get(), ref[::2] + 1)
    del e
    gc.collect()
    assert alive() is None                              # released with the last reference
    assert "external" not in kn.memory_report()


def test_memory_cap_does_not_apply(rng):
    kn.set_memory_limit(1024)
    a = rand(rng, (1000, 100), np.float32)              # 400 KB, far past the cap
    t = kn.from_dlpack(a)
    assert t._data == a.ctypes.data
    assert kn.memory_in_use() == 0
    with pytest.raises(MemoryError):
        kn.empty(1000, 100)                             # kiln's own allocations are capped


def test_asarray_and_array(rng):
    a = rand(rng, (4, 6), np.float32)
    assert kn.asarray(a)._data == a.ctypes.data         # numpy's asarray: no copy
    assert kn.array(a, copy=False)._data == a.ctypes.data
    c = kn.array(a)                                     # array copies
    assert c._data != a.ctypes.data
    np.testing.assert_array_equal(c.get(), a)
    d = kn.asarray(a, dtype=kn.float64)                 # another dtype: a copy
    assert d.dtype is kn.float64 and d._data != a.ctypes.data
    np.testing.assert_array_equal(d.get(), a.astype(np.float64))
    r = kn.asarray(np.array(2.5))                       # rank 0
    assert r.shape == () and r.item() == 2.5
    cp = kn.from_dlpack(a, copy=True)
    assert cp._data != a.ctypes.data
    a[0, 0] = 9
    assert cp[0, 0].item() != 9


def test_copy_fallbacks(rng):
    i64 = rng.integers(-50, 50, size=(3, 4))
    t = kn.from_dlpack(i64)                             # no int64 in kiln: an int32 copy
    assert t.dtype is kn.int32 and t._data != i64.ctypes.data
    np.testing.assert_array_equal(t.get(), i64)
    b = rng.integers(0, 2, size=(5,)).astype(bool)
    assert kn.from_dlpack(b).dtype is kn.uint8
    ro = rand(rng, (3, 3), np.float32)
    ro.setflags(write=False)                            # numpy's DLPack refuses read-only arrays
    r = kn.from_dlpack(ro)
    assert r._data != ro.ctypes.data
    np.testing.assert_array_equal(r.get(), ro)
    assert kn.asarray(np.broadcast_to(ro[:1], (4, 3))).shape == (4, 3)
    with pytest.raises(BufferError) as e:
        kn.from_dlpack(i64, copy=False)
    assert "int64" in str(e.value)
    with pytest.raises(BufferError):
        kn.from_dlpack(ro, copy=False)


def test_broadcast_and_overlapping_strides_read_only(rng):
    base = rand(rng, (10,), np.float32)
    bc = np.lib.stride_tricks.as_strided(base, shape=(3, 10), strides=(0, 4))
    t = kn.from_dlpack(bc)
    assert t._data == base.ctypes.data
    np.testing.assert_array_equal(t.get(), np.broadcast_to(base, (3, 10)))
    with pytest.raises(ValueError) as e:
        t[...] = 1.0
    assert e.value.status == "KILN_ERR_ALIAS"
    t[0] = t[0] * 2                                     # one row of it does not alias
    ov = np.lib.stride_tricks.as_strided(base, shape=(3, 3), strides=(4, 4))
    o = kn.from_dlpack(ov)
    np.testing.assert_array_equal(o.get(), ov)
    with pytest.raises(ValueError) as e:
        o[0] = 1.0                                      # every view of an overlapping wrap
    assert "wrapped memory" in str(e.value)


# ---- a hand-made DLPack producer ---------------------------------------------------------


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensor))
_DLManagedTensor._fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER)]

_NAME = b"dltensor"
_api = ctypes.PyDLL(None)                                # the interpreter's C API, GIL held
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_PRODUCERS = {}                                          # DLManagedTensor address -> producer


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _capsule_destructor(cap):
    """As producers do: an unconsumed capsule calls the deleter; a renamed one does not."""
    if _api.PyCapsule_IsValid(cap, _NAME):
        p = _api.PyCapsule_GetPointer(cap, _NAME)
        _PRODUCERS[p]._delete(p)


class Producer:
    """A DLPack producer over a numpy buffer with any DLPack dtype (bfloat16 included),
    counting the deleter calls of the tensors it hands out."""

    def __init__(self, buf, code, bits, shape, strides=None, byte_offset=0, device=(1, 0), destructor=True):
        self.buf, self.code, self.bits, self.destructor = buf, code, bits, destructor
        self.shape, self.strides, self.byte_offset, self.device = shape, strides, byte_offset, device
        self.deleted = 0
        self._keep = {}
        self._deleter = _DELETER(lambda m: self._delete(ctypes.addressof(m.contents)))

    def _delete(self, addr):
        self.deleted += 1
        self._keep.pop(addr, None)
        _PRODUCERS.pop(addr, None)

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, stream=None, **newer):         # (the legacy capsule whatever is asked)
        m = _DLManagedTensor()
        n = len(self.shape)
        shape = (ctypes.c_int64 * max(n, 1))(*self.shape)
        strides = (ctypes.c_int64 * max(n, 1))(*self.strides) if self.strides is not None else None
        m.dl_tensor.data = self.buf.ctypes.data
        m.dl_tensor.device = _DLDevice(*self.device)
        m.dl_tensor.ndim = n
        m.dl_tensor.dtype = _DLDataType(self.code, self.bits, 1)
        m.dl_tensor.shape = shape
        m.dl_tensor.strides = strides
        m.dl_tensor.byte_offset = self.byte_offset
        m.deleter = self._deleter
        addr = ctypes.addressof(m)
        self._keep[addr] = (m, shape, strides)
        _PRODUCERS[addr] = self
        # (a ctypes destructor cannot run while an exception is pending: destructor=False then)
        return _api.PyCapsule_New(addr, _NAME, ctypes.cast(_capsule_destructor, ctypes.c_void_p)
                                  if self.destructor else None)


def bf16_bits(x):
    """bfloat16 bit patterns of float32 values (round to nearest even)."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def test_bfloat16_producer_and_deleter(rng):
    vals = rand(rng, (4, 6), np.float32)
    bits = bf16_bits(vals)
    want = (bits.astype(np.uint32) << 16).view(np.float32)
    # byte_offset skips the first row; strides None = row-major
    p = Producer(bits, code=4, bits=16, shape=(3, 6), byte_offset=12)
    t = kn.from_dlpack(p)
    assert t.dtype is kn.bfloat16 and t.shape == (3, 6)
    assert t._data == bits.ctypes.data + 12
    np.testing.assert_array_equal(t.get(), want[1:])
    t[0] = t[0] * 2                                     # exact in bf16
    np.testing.assert_array_equal((bits[1].astype(np.uint32) << 16).view(np.float32), want[1] * 2)
    v = t.T[::-1]
    del t
    gc.collect()
    assert p.deleted == 0                               # the view keeps it
    T = want[1:].copy()
    T[0] *= 2
    np.testing.assert_array_equal(v.get(), T.T[::-1])
    del v
    gc.collect()
    assert p.deleted == 1                               # exactly once: kiln, not the capsule too
    # explicit strides (elements): a transposed view
    q = Producer(bits, code=4, bits=16, shape=(6, 4), strides=(1, 6))
    np.testing.assert_array_equal(kn.from_dlpack(q).get(), (bits.T.astype(np.uint32) << 16).view(np.float32))
    gc.collect()
    assert q.deleted == 1


@pytest.mark.parametrize("code,bits,name", [(5, 64, "complex64"), (10, 8, "float8"), (0, 64, "int64"),
                                            (6, 8, "bool"), (2, 8, "float8")])
def test_producer_dtypes_kiln_lacks(code, bits, name):
    buf = np.arange(1, 17, dtype=np.uint8)
    p = Producer(buf, code=code, bits=bits, shape=(2,))
    with pytest.raises(BufferError) as e:
        kn.from_dlpack(p, copy=False)
    assert name in str(e.value)
    gc.collect()
    assert p.deleted == 1                               # the unconsumed capsule freed it
    if name == "float8":                                # neither wrapped nor copied: named
        with pytest.raises(TypeError) as e:
            kn.from_dlpack(Producer(buf, code=code, bits=bits, shape=(2,), destructor=False))
        assert name in str(e.value)
    elif name == "complex64":                           # these bytes have imaginary parts: not dropped
        with pytest.raises(TypeError) as e:
            kn.from_dlpack(p)
        assert "imaginary" in str(e.value)
        real = np.array([1.5, -2.25], np.float32)         # x + 0j twice: the real parts, as float64
        pairs = np.stack([real, np.zeros(2, np.float32)], axis=1).view(np.uint8).ravel()
        t = kn.from_dlpack(Producer(pairs, code=code, bits=bits, shape=(2,)))
        assert t.dtype is kn.float64 and t.get().tolist() == [1.5, -2.25]
    elif name == "int64":                               # these bytes are int64s past int32: not wrapped
        with pytest.raises(OverflowError) as e:
            kn.from_dlpack(p)
        assert "does not fit int32" in str(e.value)
        small = np.array([7, -3], np.int64).view(np.uint8)
        t = kn.from_dlpack(Producer(small, code=code, bits=bits, shape=(2,)))
        assert t.dtype is kn.int32 and t.get().tolist() == [7, -3]
    else:                                               # copied as kn.array copies numpy's
        t = kn.from_dlpack(p)
        assert t._data != buf.ctypes.data and t.shape == (2,)
        assert t.dtype is {"bool": kn.uint8}[name]


def test_producer_on_a_gpu_in_a_cpu_context():
    p = Producer(np.zeros(4, np.float32), code=2, bits=32, shape=(4,), device=(2, 0))
    with pytest.raises(kn.Error) as e:
        kn.from_dlpack(p)
    assert "CPU context" in str(e.value)
    assert p.deleted == 0                               # nothing was asked of it


def test_wrap_dlpack_argument_errors():
    c = kn.context()
    assert c.stream() == 0                              # no stream on the CPU (DLPack's stream=None)
    with pytest.raises(TypeError) as e:
        kn._kiln.wrap_dlpack(c, object())
    assert "'capsule'" in str(e.value)
    p = Producer(np.zeros(8, np.float32), code=2, bits=32, shape=(2,), byte_offset=2)
    assert "aligned" in kn._kiln.wrap_dlpack(c, p.__dlpack__())
    gc.collect()
    assert p.deleted == 1
    neg = Producer(np.zeros(8, np.float32), code=2, bits=32, shape=(2, -1))
    with pytest.raises(ValueError) as e:
        kn.from_dlpack(neg)
    assert "negative" in str(e.value)
    del e                                               # its traceback holds the capsule
    gc.collect()
    assert neg.deleted == 1                             # a failed wrap leaves it to the capsule
