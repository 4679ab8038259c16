"""Shared pytest setup for kiln's Python tests: the device (KILN_DEVICE, cpu unless set),
a seeded numpy generator printed for replay (KILN_TEST_SEED), per-dtype tolerances and a
comparison helper against float64 numpy references."""
import os
import time

import numpy as np
import pytest

os.environ.setdefault("KILN_DEVICE", "cpu")

import kiln as kn  # noqa: E402

# The device every test runs on: KILN_DEVICE (cpu unless set; `make test-gpu` sets cuda).
DEVICE = os.environ["KILN_DEVICE"]

FLOATS = [kn.float32, kn.float16, kn.bfloat16, kn.float64]
INTS = [kn.int8, kn.uint8, kn.int32]
ALL = FLOATS + INTS
# relative tolerance of one element-wise result (inputs already rounded to the dtype)
RTOL = {"float32": 2e-6, "float16": 2e-3, "bfloat16": 1.6e-2, "float64": 1e-13, "int8": 0, "uint8": 0, "int32": 0}
# reductions accumulate: looser
RED_RTOL = {"float32": 2e-5, "float16": 4e-3, "bfloat16": 2e-2, "float64": 1e-12, "int8": 0, "uint8": 0,
            "int32": 0}


@pytest.fixture(autouse=True)
def fresh_context():
    """Each test starts in a new context of DEVICE and leaves the current one as it was."""
    prev = kn._kiln.set_current(kn._kiln.Context(device=kn._DEVICES[DEVICE]))
    yield
    kn._kiln.set_current(prev)


@pytest.fixture
def rng(request):
    seed = int(os.environ.get("KILN_TEST_SEED", time.time_ns() % (2**32)))
    print(f"KILN_TEST_SEED={seed} ({request.node.name})")
    return np.random.default_rng(seed)


def values(rng, shape, dt, lo=-3.0, hi=3.0):
    """Random host data for dtype dt (ints in a small range so no op overflows)."""
    if dt.kind == "f":
        return rng.uniform(lo, hi, size=shape)
    if dt.kind == "u":
        return rng.integers(0, 11, size=shape).astype(np.float64)
    return rng.integers(-10, 11, size=shape).astype(np.float64)


def make(rng, shape, dt, lo=-3.0, hi=3.0):
    """(kiln tensor, its values as float64 numpy) — the reference sees the rounded values."""
    t = kn.array(values(rng, shape, dt, lo, hi), dtype=dt)
    return t, t.get().astype(np.float64)


def close(got, ref, dt, rtol=None, atol=None):
    """Compare a kiln result (any kiln object or numpy) with a float64 reference."""
    g = np.asarray(got.get() if hasattr(got, "get") else got, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    assert g.shape == ref.shape, f"shape {g.shape} != {ref.shape}"
    name = dt.name if hasattr(dt, "name") else str(dt)
    rt = RTOL[name] if rtol is None else rtol
    at = (rt if atol is None else atol)
    if rt == 0 and atol is None:
        at = 0
    np.testing.assert_allclose(g, ref, rtol=rt, atol=at)


def poisoned(shape, dt):
    """An output tensor full of garbage (NaN for floats) so unwritten elements show."""
    return kn.full(shape, float("nan") if dt.kind == "f" else 77, dtype=dt)
