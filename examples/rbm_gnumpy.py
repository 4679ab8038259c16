"""examples/rbm_gnumpy.py — the RBM program of the gnumpy report (Tieleman 2010, section 2.2),
run on kiln through kiln.gnumpy. The function test_gnumpy below is the report's program with
only its import line and its print calls (Python 3) changed. (The report prints the error
as euclid_norm()**2/(...): the squared norm, "mean squared error"; the scanned text lost
one '*'.) 784 visible units, 4096 hidden, batch 128, momentum 0.9, epsilon 0.1.

The data are generated, never downloaded: load('mnist_cudaTest') returns a 784 x N array of
28x28 "digit-like" images in 0..255 (ten prototype shapes made of strokes, each example a
prototype shifted by a pixel or two with pixel noise), so the RBM has structure to learn
and its reconstruction error falls epoch by epoch.

Size: N = 60000 as in the report on a GPU; on the CPU backend 2560 examples (20 batches) so
that an epoch takes seconds. Set KILN_RBM_EXAMPLES and KILN_RBM_EPOCHS to change them.

    python examples/rbm_gnumpy.py
"""
import os
import sys
import time

import numpy as np
from numpy import mean

import kiln as kn


def load(name):
    """A synthetic stand-in for the report's MNIST file: (784, N) floats in [0, 255]."""
    n = int(os.environ.get("KILN_RBM_EXAMPLES", "0")) or (60000 if kn.context().backend() == "cuda" else 2560)
    rng = np.random.default_rng(1234)
    protos = np.zeros((10, 28, 28))
    for p in range(10):
        for _ in range(4):  # four strokes per prototype
            r0, c0 = rng.integers(4, 24, size=2)
            dr, dc = rng.integers(-1, 2, size=2)
            if dr == 0 and dc == 0:
                dr = 1
            for s in range(12):
                r, c = r0 + dr * s, c0 + dc * s
                if 2 <= r < 26 and 2 <= c < 26:
                    protos[p, r - 1:r + 2, c - 1:c + 2] = 1.0
    labels = rng.integers(0, 10, size=n)
    shifts = rng.integers(-2, 3, size=(n, 2))
    data = np.empty((n, 28, 28), dtype=np.float32)
    for i in range(n):
        data[i] = np.roll(protos[labels[i]], tuple(shifts[i]), axis=(0, 1))
    flip = rng.random(data.shape) < 0.03
    data = np.where(flip, 1.0 - data, data)
    return (data.reshape(n, 784).T * 255.0).astype(np.float32)


def test_gnumpy(num_epochs):
    import kiln.gnumpy as gpu
    # load data. <dat> is 2 dimensional: 60000 X 784
    dat = gpu.garray(load('mnist_cudaTest').T/255.)
    # training parameters
    epsilon = 0.1
    momentum = 0.9
    batch_size = 128
    num_batches = dat.shape[0]/batch_size
    # model parameters
    num_vis = dat.shape[1]
    num_hid = 4096
    # initialize weights
    w_vh = 0.1 * gpu.randn(num_vis, num_hid)
    w_v = gpu.zeros(num_vis)
    w_h = -4. * gpu.ones(num_hid)
    # initialize weight updates
    wu_vh = gpu.zeros((num_vis, num_hid))
    wu_v = gpu.zeros(num_vis)
    wu_h = gpu.zeros(num_hid)
    for epoch in range(num_epochs):
        err = []
        for batch in range(num_batches):
            # positive phase
            v1 = dat[batch*batch_size : (batch + 1)*batch_size]
            h1 = (gpu.dot(v1, w_vh) + w_h).logistic()
            # sample hiddens
            hSampled = h1.rand() < h1
            # negative phase
            v2 = (gpu.dot(hSampled, w_vh.T) + w_v).logistic()
            h2 = (gpu.dot(v2, w_vh) + w_h).logistic()
            # update weights
            wu_vh = wu_vh * momentum + gpu.dot(v1.T, h1) - gpu.dot(v2.T, h2)
            wu_v = wu_v * momentum + v1.sum(0) - v2.sum(0)
            wu_h = wu_h * momentum + h1.sum(0) - h2.sum(0)

            w_vh += wu_vh * (epsilon/batch_size)
            w_v += wu_v * (epsilon/batch_size)
            w_h += wu_h * (epsilon/batch_size)
            # calculate reconstruction error
            err.append((v2-v1).euclid_norm()**2/(num_vis*batch_size))
        print("Mean squared error: " + str(mean(err)))
    return w_vh, w_v, w_h


if __name__ == "__main__":
    kn.use(device="auto", seed=0)
    epochs = int(os.environ.get("KILN_RBM_EPOCHS", "0")) or (10 if kn.context().backend() == "cuda" else 3)
    print(f"kiln {kn.__version__} on {kn.context().backend()}: RBM, {epochs} epochs", file=sys.stderr)
    t0 = time.time()
    test_gnumpy(epochs)
    print(f"{time.time() - t0:.1f} s", file=sys.stderr)
