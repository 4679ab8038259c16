"""GPU interop (runs where the context is CUDA, e.g. `make test-gpu`; skipped on the CPU
backend): __cuda_array_interface__ v3 and DLPack both ways with PyTorch and CuPy, zero copy
out of kiln (same device pointer) and zero copy into kiln through DLPack (kn.from_dlpack,
kn.asarray: kiln_tensor_wrap over the producer's device memory, same device pointer, writes
seen both ways, the producer's memory held until kiln lets go, its pending writes ordered
before kiln's stream). kn.array copies, and so do __cuda_array_interface__-only producers
and dtypes kiln lacks."""
import gc

import numpy as np
import pytest

import kiln as kn
from conftest import close, make


@pytest.fixture
def cuda():
    if kn.context().device() != 2:
        pytest.skip("needs the CUDA backend (KILN_DEVICE=cuda)")


def test_cuda_array_interface(cuda, rng):
    t, tv = make(rng, (5, 7), kn.float32)
    cai = t.__cuda_array_interface__
    assert cai["version"] == 3 and cai["typestr"] == "<f4" and cai["shape"] == (5, 7)
    assert cai["data"][0] == t._data and cai["strides"] is None
    v = t[:, ::2]
    assert v.__cuda_array_interface__["strides"] == (28, 8)
    assert not hasattr(t, "__array_interface__")
    with pytest.raises(BufferError):
        memoryview(t)
    assert t.__dlpack_device__()[0] == 2
    np.testing.assert_array_equal(np.asarray(t), tv.astype(np.float32))   # __array__ copies to host


def test_torch(cuda, rng):
    torch = pytest.importorskip("torch")
    t, tv = make(rng, (4, 6), kn.float32)
    a = torch.as_tensor(t, device="cuda")               # via __cuda_array_interface__
    assert a.data_ptr() == t._data
    b = torch.from_dlpack(t[:, 1::2])                   # via DLPack, a strided view
    assert b.data_ptr() == t[:, 1::2]._data and b.stride() == (6, 2)
    a.mul_(2)                                           # torch writes kiln memory
    close(t, tv * 2, kn.float32)
    x = torch.arange(12, dtype=torch.float32, device="cuda").reshape(3, 4)
    k = kn.from_dlpack(x)
    assert k._data == x.data_ptr()                      # zero copy into kiln
    np.testing.assert_array_equal(k.get(), x.cpu().numpy())
    k2 = kn.array(x.T)                                  # kn.array copies
    assert k2._data != x.data_ptr()
    np.testing.assert_array_equal(k2.get(), x.T.cpu().numpy())
    h = kn.array(np.ones(3), dtype=kn.float16)
    assert torch.from_dlpack(h).dtype == torch.float16
    bf = kn.array(np.ones(3), dtype=kn.bfloat16)
    assert torch.from_dlpack(bf).dtype == torch.bfloat16


def _torch_roundtrip(torch, dev, dt, kdt):
    x = (torch.rand(6, 10, device=dev) * 20 + 1).to(dt)        # never zero
    for v in (x, x.T, x[1:5, ::3], x[::2].T):                   # contiguous and strided views
        k = kn.from_dlpack(v)
        assert k.dtype is kdt and k.shape == tuple(v.shape)
        assert k._data == v.data_ptr()                           # zero copy
        assert k._estrides == v.stride()
        np.testing.assert_array_equal(k.get().astype(np.float64), v.double().cpu().numpy())
    k = kn.asarray(x)                                            # asarray wraps too
    assert k._data == x.data_ptr()
    want = (x.double() * 2 + 1).to(dt)
    k[...] = k * 2 + 1                                           # kiln writes torch's memory
    kn.synchronize()
    np.testing.assert_array_equal(x.double().cpu().numpy(), want.double().cpu().numpy())
    x.fill_(3)                                                   # and reads torch's writes
    torch.cuda.synchronize()
    assert k[2, 3].item() == 3


def test_torch_zero_copy(cuda, rng):
    torch = pytest.importorskip("torch")
    dev = f"cuda:{kn.context().device_index()}"
    for dt, kdt in ((torch.float32, kn.float32), (torch.float16, kn.float16), (torch.bfloat16, kn.bfloat16),
                    (torch.float64, kn.float64), (torch.int32, kn.int32), (torch.int8, kn.int8),
                    (torch.uint8, kn.uint8)):
        _torch_roundtrip(torch, dev, dt, kdt)
    # the memory stays with kiln after `del x`, and goes back once kiln lets go
    gc.collect()
    torch.cuda.synchronize()
    m0 = torch.cuda.memory_allocated()
    x = torch.full((1 << 20,), 2.0, device=dev)
    m1 = torch.cuda.memory_allocated()
    u0 = kn.memory_in_use()
    k = kn.from_dlpack(x)[::2]
    del x
    gc.collect()
    assert torch.cuda.memory_allocated() == m1
    assert "external" in kn.memory_report() and kn.memory_in_use() == u0
    assert kn.sum(k).item() == 2.0 * (1 << 19)
    del k
    gc.collect()
    assert torch.cuda.memory_allocated() == m0
    # a producer's pending writes on its own stream are ordered before kiln's work
    s = torch.cuda.Stream(device=dev)
    with torch.cuda.stream(s):
        for i in range(8):
            y = torch.empty(1 << 24, device=dev)
            y.fill_(float(i + 1))
            k = kn.from_dlpack(y)                               # stream= kiln's, from the context
            assert kn.sum(k).item() == pytest.approx(float(i + 1) * (1 << 24), rel=1e-5)   # not i's
            del k, y
    # dtypes kiln lacks are copied, converted on the device by the host path's rules: int64 that
    # fits becomes int32, past int32 an OverflowError naming the value (float64 where a float dtype
    # is asked for), bool uint8, complex with zero imaginary parts float64
    k64 = kn.from_dlpack(torch.arange(-3, 4, device=dev))
    assert k64.dtype is kn.int32 and k64.get().tolist() == list(range(-3, 4))
    assert kn.asarray(torch.arange(5, device=dev)[::2]).get().tolist() == [0, 2, 4]
    with pytest.raises(OverflowError, match="2199023255552"):
        kn.from_dlpack(torch.tensor([1, 2**41], device=dev))
    with pytest.raises(OverflowError, match="-2147483649"):
        kn.array(torch.tensor([-2**31 - 1, 5], device=dev))
    wide = kn.array(torch.tensor([1, 2**41], device=dev), dtype=kn.float64)
    assert wide.dtype is kn.float64 and wide.get().tolist() == [1.0, 2.0**41]
    kb = kn.from_dlpack(torch.tensor([True, False, True], device=dev))
    assert kb.dtype is kn.uint8 and kb.get().tolist() == [1, 0, 1]
    kc = kn.from_dlpack(torch.tensor([1.5, -2.0], dtype=torch.complex64, device=dev))
    assert kc.dtype is kn.float64 and kc.get().tolist() == [1.5, -2.0]
    with pytest.raises(TypeError, match="imaginary"):
        kn.from_dlpack(torch.tensor([1 + 1j], dtype=torch.complex64, device=dev))
    assert kn.from_dlpack(torch.empty(0, dtype=torch.int64, device=dev)).dtype is kn.int32
    with pytest.raises(BufferError) as e:
        kn.from_dlpack(torch.ones(3, dtype=torch.complex64, device=dev), copy=False)
    assert "complex64" in str(e.value)
    # host memory in a CUDA context is copied (host to device)
    h = torch.arange(5, dtype=torch.float32)
    kh = kn.from_dlpack(h)
    assert kh.ctx.device() == 2
    np.testing.assert_array_equal(kh.get(), h.numpy())
    hb = torch.arange(5, dtype=torch.bfloat16)                  # numpy cannot read bf16: a CPU wrap reads it
    np.testing.assert_array_equal(kn.from_dlpack(hb).get(), hb.float().numpy())
    if torch.cuda.device_count() > 1:                           # another GPU: a copy
        other = (kn.context().device_index() + 1) % torch.cuda.device_count()
        z = torch.ones(4, device=f"cuda:{other}")
        kz = kn.from_dlpack(z)
        assert kz._data != z.data_ptr()
        np.testing.assert_array_equal(kz.get(), np.ones(4, np.float32))


def test_cupy(cuda, rng):
    cupy = pytest.importorskip("cupy")
    t, tv = make(rng, (4, 6), kn.float64)
    c = cupy.asarray(t)
    assert c.data.ptr == t._data
    d = cupy.from_dlpack(t.T)
    assert d.data.ptr == t._data and d.shape == (6, 4)
    c += 1
    # CuPy's kernel runs on CuPy's stream, kiln's read on kiln's: ordering a foreign
    # library's writes before kiln's work is the user's part (the array interface carries
    # the producer's stream, not the consumer's); without this the read raced the write and
    # failed once on the H100 under pytest -n 8 (2026-11-24)
    cupy.cuda.get_current_stream().synchronize()
    close(t, tv + 1, kn.float64)
    x = cupy.arange(10, dtype=cupy.float32)
    k = kn.from_dlpack(x)
    assert k._data == x.data.ptr                        # zero copy into kiln
    np.testing.assert_array_equal(k.get(), np.arange(10, dtype=np.float32))
    np.testing.assert_array_equal(kn.array(x[::2]).get(), np.arange(0, 10, 2, dtype=np.float32))
    r = kn.from_dlpack(x[1::3])                         # a strided view
    assert r._data == x[1::3].data.ptr and r._estrides == (3,)
    np.testing.assert_array_equal(r.get(), np.arange(10, dtype=np.float32)[1::3])
    r[...] = r * 10                                     # kiln writes CuPy's memory
    kn.synchronize()
    want = np.arange(10, dtype=np.float32)
    want[1::3] *= 10
    np.testing.assert_array_equal(cupy.asnumpy(x), want)
    # a CuPy dtype kiln lacks: converted on the device, as host data would be
    w = kn.array(cupy.arange(6, dtype=cupy.uint64)[::-1])
    assert w.dtype is kn.int32 and w.get().tolist() == [5, 4, 3, 2, 1, 0]
    with pytest.raises(OverflowError, match="4294967295"):
        kn.array(cupy.asarray([1, 2**32 - 1], dtype=cupy.uint32))
    assert kn.array(cupy.asarray([3, 2**40], dtype=cupy.int64), dtype=kn.float32).get().tolist() == [3.0, 2.0**40]
