"""examples/gemm_fp16.py — nervanagpu's "basic GEMM operation using 16-bit float" example,
in kiln: make fp16 matrices from numpy, multiply them on the device (GPU when one answers,
else the CPU backend), bring the product back and compare it with numpy.

    python examples/gemm_fp16.py
"""
import numpy as np

import kiln as kn

# initialize the context (nervanagpu's NervanaGPU(stochastic_round=False))
kn.use(device="auto", stochastic_round=False)

m, n, k = 10, 20, 10
dtype = np.float16

# create matrices on host
cpuA = np.random.randn(k, m)
cpuB = np.random.randn(k, n)

# transfer to device
devA = kn.array(cpuA, dtype=dtype)
devB = kn.array(cpuB, dtype=dtype)
devC = kn.empty((m, n), dtype=dtype)

# do GEMM operation: C = A^T B (a transposed view, no copy)
kn.dot(devA.T, devB, out=devC, relu=False)

# get from device
cpuC = devC.get()

ref = cpuA.astype(np.float16).astype(np.float64).T @ cpuB.astype(np.float16).astype(np.float64)
err = np.abs(cpuC - ref).max() / np.abs(ref).max()
print(f"kiln {kn.__version__} on {kn.context().backend()}: C = A.T @ B in fp16, shape {cpuC.shape}, "
      f"max relative error vs numpy {err:.2e}")
assert err < 1e-2, err
