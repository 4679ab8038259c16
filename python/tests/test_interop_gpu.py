"""GPU interop (runs where the context is CUDA, e.g. `make test-gpu`; skipped on the CPU
backend): __cuda_array_interface__ v3 and DLPack both ways with PyTorch and CuPy, zero copy
out of kiln (same device pointer), copies into kiln (the C API has no call that wraps
foreign memory)."""
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
    np.testing.assert_array_equal(k.get(), x.cpu().numpy())
    k2 = kn.array(x.T)
    np.testing.assert_array_equal(k2.get(), x.T.cpu().numpy())
    h = kn.array(np.ones(3), dtype=kn.float16)
    assert torch.from_dlpack(h).dtype == torch.float16
    bf = kn.array(np.ones(3), dtype=kn.bfloat16)
    assert torch.from_dlpack(bf).dtype == torch.bfloat16


def test_cupy(cuda, rng):
    cupy = pytest.importorskip("cupy")
    t, tv = make(rng, (4, 6), kn.float64)
    c = cupy.asarray(t)
    assert c.data.ptr == t._data
    d = cupy.from_dlpack(t.T)
    assert d.data.ptr == t._data and d.shape == (6, 4)
    c += 1
    close(t, tv + 1, kn.float64)
    x = cupy.arange(10, dtype=cupy.float32)
    np.testing.assert_array_equal(kn.from_dlpack(x).get(), np.arange(10, dtype=np.float32))
    np.testing.assert_array_equal(kn.array(x[::2]).get(), np.arange(0, 10, 2, dtype=np.float32))
