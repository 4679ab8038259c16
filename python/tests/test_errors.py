"""Every error path of the package: kiln statuses become ValueError / TypeError /
IndexError / MemoryError / kiln.Error carrying kiln's message (which names the argument),
argument checks of the Python layer name their argument too."""
import numpy as np
import pytest

import kiln as kn
from conftest import DEVICE, make


def test_shape_mismatch_raises_at_build(rng):
    a, _ = make(rng, (3, 4), kn.float32)
    b, _ = make(rng, (5,), kn.float32)
    with pytest.raises(ValueError) as e:
        a + b
    assert isinstance(e.value, kn.ShapeError) and e.value.status == "KILN_ERR_SHAPE"
    assert "(3, 4)" in str(e.value) and "(5)" in str(e.value).replace(",)", ")")


def test_assign_shape_error(rng):
    a, _ = make(rng, (3, 4), kn.float32)
    with pytest.raises(ValueError) as e:
        a[...] = kn.ones(2, 4) * 2
    assert e.value.status == "KILN_ERR_SHAPE"
    with pytest.raises(ValueError):
        a[:, 1] = np.ones(4)


def test_axis_errors(rng):
    a, _ = make(rng, (3, 4), kn.float32)
    with pytest.raises(ValueError) as e:
        kn.sum(a, axis=2)
    assert e.value.status == "KILN_ERR_AXIS" and "axis" in str(e.value)
    with pytest.raises(ValueError):
        kn.mean(a, axis=(0, 0))
    with pytest.raises(TypeError) as e:
        kn.sum(a, axis="x")
    assert "'axis'" in str(e.value)


def test_dtype_errors(rng):
    with pytest.raises(TypeError) as e:
        kn.zeros(3, dtype="int64x")
    assert "'dtype'" in str(e.value)
    with pytest.raises(TypeError) as e:
        kn.array([1, 2], dtype=np.complex64)
    assert "'dtype'" in str(e.value)
    a, _ = make(rng, (3,), kn.float32)
    with pytest.raises(TypeError) as e:
        a + "text"
    with pytest.raises(TypeError) as e:
        kn.sqrt(object())
    assert "'x'" in str(e.value)


def test_clip_bounds_error(rng):
    a, _ = make(rng, (3,), kn.float32)
    with pytest.raises(ValueError) as e:
        kn.clip(a, 2, 1)
    assert e.value.status is not None


def test_bad_arguments():
    with pytest.raises(ValueError) as e:
        kn.zeros(-1)
    assert "shape" in str(e.value)
    with pytest.raises(ValueError) as e:
        kn.zeros((1,) * 9)
    assert "'shape'" in str(e.value)
    with pytest.raises(TypeError) as e:
        kn.zeros((2, "a"))
    assert "'shape'" in str(e.value)
    with pytest.raises(ValueError) as e:
        kn.arange(0, 5, 0)
    assert "step" in str(e.value)
    with pytest.raises(ValueError) as e:
        kn.dropout(kn.ones(3), 1.5)
    with pytest.raises(ValueError) as e:
        kn.use(device="tpu")
    assert "'device'" in str(e.value)
    with pytest.raises(ValueError) as e:
        kn.use(memory_limit=-5)
    assert "'memory_limit'" in str(e.value)
    with pytest.raises(ValueError) as e:
        kn.set_memory_limit(-1)
    assert "'limit'" in str(e.value)
    with pytest.raises(TypeError):
        kn.use(seed="x")


def test_broadcast_view_is_read_only(rng):
    a, _ = make(rng, (1, 4), kn.float32)
    v = a.broadcast_to((3, 4))
    with pytest.raises(ValueError) as e:
        v[...] = 1.0
    assert e.value.status == "KILN_ERR_ALIAS"
    with pytest.raises(ValueError) as e:
        v += 1
    assert e.value.status == "KILN_ERR_ALIAS"


def test_expr_not_assignable(rng):
    a, _ = make(rng, (3,), kn.float32)
    with pytest.raises(TypeError) as e:
        (a + 1)[0] = 2
    assert "'self'" in str(e.value)


def test_contexts_do_not_mix(rng):
    a = kn.ones(3)
    with kn.use(device=DEVICE):
        b = kn.ones(3)
        with pytest.raises(ValueError) as e:
            c = kn.empty(3)
            c[...] = a + b
        assert e.value.status == "KILN_ERR_CONTEXT"


def test_no_device():
    if kn.context().device() == 2:
        pytest.skip("a GPU answers here")
    import os
    if os.environ.get("KILN_DEVICE", "cpu") != "cpu":
        pytest.skip("KILN_DEVICE is not cpu")
    try:
        kn.use(device="cuda")
    except kn.Error as e:
        assert e.status == "KILN_ERR_NO_DEVICE" and isinstance(e, RuntimeError) and str(e)
    else:
        kn.use(device=DEVICE)
        pytest.skip("the CUDA backend answered")
    finally:
        kn.use(device=DEVICE)


def test_out_of_memory_cap():
    with kn.use(device=DEVICE, memory_limit=1 << 20):
        keep = kn.zeros(1000, 100, dtype=kn.float32)   # 400 kB
        keep.name = "big_one"
        with pytest.raises(MemoryError) as e:
            kn.zeros(1000, 1000)
        assert isinstance(e.value, kn.OutOfMemoryError) and e.value.status == "KILN_ERR_OOM"
        assert str(e.value)
        del keep
    with pytest.raises(MemoryError):
        with kn.use(device=DEVICE):
            kn.set_memory_limit(1000)
            kn.ones(10, 1000)
