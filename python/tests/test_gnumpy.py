"""kiln.gnumpy: gnumpy's names on kiln, and the report's RBM program (examples/rbm_gnumpy.py)
running on a small generated data set with a falling reconstruction error."""
import io
import os
import runpy
import sys
from contextlib import redirect_stdout

import numpy as np

import kiln as kn
import kiln.gnumpy as gpu
from conftest import close

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")


def test_garray_and_functions(rng):
    a = rng.standard_normal((6, 5))
    g = gpu.garray(a)
    assert isinstance(g, kn.Tensor) and g.dtype is kn.float32
    assert g.shape == (6, 5) and g.shape[0] / 4 == 1 and isinstance(g.shape[0] / 4, int)   # Python 2 division
    assert g.shape[0] / 4. == 1.5
    close(g, a, kn.float32)
    rows = g[1:4]
    rows[...] = 0                                   # a first-axis slice is a view
    assert (g.get()[1:4] == 0).all()
    close(gpu.logistic(g), 1 / (1 + np.exp(-g.get())), kn.float32, rtol=1e-6)
    close(g.logistic(), 1 / (1 + np.exp(-g.get())), kn.float32, rtol=1e-6)
    close(gpu.dot(g, g.T), g.get() @ g.get().T, kn.float32, rtol=1e-5, atol=1e-6)
    close(g.sum(0), g.get().sum(0), kn.float32, rtol=1e-5, atol=1e-6)
    close(gpu.sum(g, 1), g.get().sum(1), kn.float32, rtol=1e-5, atol=1e-6)
    assert abs(g.euclid_norm() - np.linalg.norm(g.get())) < 1e-4
    assert abs(gpu.euclid_norm(g * 2) - 2 * np.linalg.norm(g.get())) < 1e-4
    np.testing.assert_array_equal(gpu.as_numpy_array(g), g.get())
    r = g.rand()
    assert r.shape == (6, 5) and 0 <= r.get().min() and r.get().max() < 1
    assert gpu.zeros((2, 3)).shape == (2, 3) and gpu.ones(4).get().sum() == 4
    assert gpu.randn(3, 4).shape == (3, 4) and gpu.rand(5).shape == (5,)
    assert gpu.memory_in_use() > 0
    assert "test_gnumpy.py" in gpu.memory_allocators(print_it=False)


def run_example(name, env=None):
    old = dict(os.environ)
    os.environ.update(env or {})
    buf = io.StringIO()
    try:
        with redirect_stdout(buf):
            runpy.run_path(os.path.join(EXAMPLES, name), run_name="__main__")
    finally:
        os.environ.clear()
        os.environ.update(old)
    return buf.getvalue()


def test_rbm_example_error_falls():
    out = run_example("rbm_gnumpy.py", {"KILN_RBM_EXAMPLES": "640", "KILN_RBM_EPOCHS": "3"})
    errs = [float(line.split(":")[1]) for line in out.splitlines() if line.startswith("Mean squared error")]
    assert len(errs) == 3, out
    assert errs[0] > errs[1] > errs[2], errs


def test_other_examples_run():
    assert "max relative error" in run_example("gemm_fp16.py")
    assert "batch norm" in run_example("variance_batchnorm.py")
    sys.stdout.flush()
