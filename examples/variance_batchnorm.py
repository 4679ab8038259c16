"""examples/variance_batchnorm.py — nervanagpu's element-wise examples in kiln: the variance
along an axis, and the batch-norm normalisation of A by its own mean and variance. Each
right-hand side is one lazy expression that kiln evaluates in one plan on assignment; the
two mean(A, axis=1) subtrees are computed once. Runs on the GPU when one answers, else on
the CPU backend, and checks against numpy.

    python examples/variance_batchnorm.py
"""
import numpy as np

import kiln as kn

kn.use(device="auto", seed=1)

# variance along an axis (reductions keep the axis, as in nervanagpu, so they broadcast)
cpuA = np.random.randn(128, 32)
devA = kn.array(cpuA, dtype=np.float32)
devC = kn.empty((128, 1), dtype=np.float32)
devC[:] = kn.mean(kn.square(devA - kn.mean(devA, axis=1, keepdims=True)), axis=1, keepdims=True)
err = np.abs(devC.get()[:, 0] - cpuA.var(axis=1)).max()
print(f"variance along axis 1: max abs error vs numpy {err:.2e}")
assert err < 1e-4

# batch normalisation in fp16
eps = .001
A = kn.empty((128, 32), dtype=np.float16)
A[:] = kn.rand()  # uniform random on the device, in [0, 1)
before = A.get().astype(np.float64)

# Normalize batch data by batch mean and variance: one plan
A[:] = kn.reciprocal(kn.sqrt(kn.var(A, axis=1, keepdims=True) + eps)) * (A - kn.mean(A, axis=1, keepdims=True))

ref = (before - before.mean(1, keepdims=True)) / np.sqrt(before.var(1, keepdims=True) + eps)
err = np.abs(A.get() - ref).max()
print(f"batch norm (fp16): rows now have mean {float(kn.mean(A, axis=1).max()):+.1e} (max) and "
      f"std {float(kn.std(A, axis=1).min()):.3f} (min); max abs error vs numpy {err:.2e}")
assert err < 2e-2
