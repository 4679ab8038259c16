"""bench/rbm.py — times one epoch of the gnumpy report's RBM (784 visible, 4096 hidden,
batch 128, momentum 0.9, epsilon 0.1, f32) in kiln and, where PyTorch is importable, the same
program in PyTorch eager on the same device, in the same run, and prints the ratio.

Three programs: kiln written for kiln (fused expressions, GEMM epilogue with beta), the
report's gnumpy program run as written through kiln.gnumpy, and PyTorch eager (in place).
Method: the data are generated (examples/rbm_gnumpy.py's load), one warm-up epoch, then
REPEATS timed epochs; the context (and CUDA) is synchronized before every clock stop; the
median is reported. Target on the H100: kiln <= 0.5x PyTorch eager.

    python bench/rbm.py [--examples N] [--repeats R] [--device auto|cpu|cuda] [--profile]
Defaults: 60000 examples on a GPU, 1280 on the CPU backend; 3 repeats.
--profile (a GPU and PyTorch needed): one more epoch of each program under PyTorch's profiler
(CUPTI sees every kernel of the process, kiln's included): the GPU's busy time (the sum of
kernel and copy times), the kernel count and the largest kernels. Busy time well below the
epoch's time means the program waits on the host (launch and bookkeeping), not the GPU.
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

import kiln as kn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from rbm_gnumpy import load  # noqa: E402  (the generated data set)

EPS, MOM, BS, NHID = 0.1, 0.9, 128, 4096


def kiln_epoch(dat, state):
    """One epoch, written as the gnumpy program (lazy kiln expressions, kn.dot)."""
    w_vh, w_v, w_h, wu_vh, wu_v, wu_h = state
    nb = dat.shape[0] // BS
    err = 0.0
    for b in range(nb):
        v1 = dat[b * BS:(b + 1) * BS]
        h1 = kn.sigmoid(kn.dot(v1, w_vh) + w_h).evaluate()
        hs = (kn.rand() < h1).evaluate()  # the lazy generator fuses into the comparison: one kernel
        v2 = kn.sigmoid(kn.dot(hs, w_vh.T) + w_v).evaluate()
        h2 = kn.sigmoid(kn.dot(v2, w_vh) + w_h).evaluate()
        # wu_vh = momentum*wu_vh + v1'h1 - v2'h2, with the GEMM epilogue doing the blend
        kn.dot(v1.T, h1, out=wu_vh, beta=MOM)
        kn.dot(v2.T, h2, out=wu_vh, alpha=-1.0, beta=1.0)
        wu_v[...] = wu_v * MOM + kn.sum(v1, 0) - kn.sum(v2, 0)
        wu_h[...] = wu_h * MOM + kn.sum(h1, 0) - kn.sum(h2, 0)
        w_vh += wu_vh * (EPS / BS)
        w_v += wu_v * (EPS / BS)
        w_h += wu_h * (EPS / BS)
        if b == nb - 1:
            err = float(kn.sum(kn.square(v2 - v1))) / (BS * dat.shape[1])
    return err


def gnumpy_epoch(gpu, dat, state):
    """One epoch of the report's program as written for gnumpy (through kiln.gnumpy)."""
    w_vh, w_v, w_h, wu_vh, wu_v, wu_h = state
    epsilon, momentum, batch_size, num_vis = EPS, MOM, BS, dat.shape[1]
    for batch in range(dat.shape[0] // batch_size):
        v1 = dat[batch*batch_size : (batch + 1)*batch_size]
        h1 = (gpu.dot(v1, w_vh) + w_h).logistic()
        hSampled = h1.rand() < h1
        v2 = (gpu.dot(hSampled, w_vh.T) + w_v).logistic()
        h2 = (gpu.dot(v2, w_vh) + w_h).logistic()
        wu_vh = wu_vh * momentum + gpu.dot(v1.T, h1) - gpu.dot(v2.T, h2)
        wu_v = wu_v * momentum + v1.sum(0) - v2.sum(0)
        wu_h = wu_h * momentum + h1.sum(0) - h2.sum(0)
        w_vh += wu_vh * (epsilon/batch_size)
        w_v += wu_v * (epsilon/batch_size)
        w_h += wu_h * (epsilon/batch_size)
    state[:] = [w_vh, w_v, w_h, wu_vh, wu_v, wu_h]
    return (v2-v1).euclid_norm()**2/(num_vis*batch_size)


def torch_epoch(torch, dat, state):
    w_vh, w_v, w_h, wu_vh, wu_v, wu_h = state
    nb = dat.shape[0] // BS
    for b in range(nb):
        v1 = dat[b * BS:(b + 1) * BS]
        h1 = torch.sigmoid(v1 @ w_vh + w_h)
        hs = (torch.rand_like(h1) < h1).float()
        v2 = torch.sigmoid(hs @ w_vh.T + w_v)
        h2 = torch.sigmoid(v2 @ w_vh + w_h)
        wu_vh.mul_(MOM).add_(v1.T @ h1).sub_(v2.T @ h2)
        wu_v.mul_(MOM).add_(v1.sum(0)).sub_(v2.sum(0))
        wu_h.mul_(MOM).add_(h1.sum(0)).sub_(h2.sum(0))
        w_vh.add_(wu_vh, alpha=EPS / BS)
        w_v.add_(wu_v, alpha=EPS / BS)
        w_h.add_(wu_h, alpha=EPS / BS)


def timed(fn, sync, repeats):
    fn()  # warm-up
    sync()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        sync()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def gpu_profile(torch, label, fn, sync):
    """One epoch under torch.profiler: prints the GPU's busy time and the largest kernels."""
    from torch.profiler import ProfilerActivity, profile
    sync()
    t0 = time.perf_counter()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        sync()
    wall = time.perf_counter() - t0
    rows = []
    for e in prof.key_averages():
        us = getattr(e, "self_device_time_total", None)
        if us is None:
            us = getattr(e, "self_cuda_time_total", 0.0)
        if us > 0:
            rows.append((us, e.count, e.key))
    rows.sort(reverse=True)
    busy = sum(r[0] for r in rows) / 1e3
    print(f"profile {label}: wall {wall * 1e3:.1f} ms (with the profiler), GPU busy {busy:.1f} ms in "
          f"{sum(r[1] for r in rows)} kernels and copies")
    for us, count, key in rows[:8]:
        print(f"    {us / 1e3:8.2f} ms {count:6d} x  {key[:90]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--profile", action="store_true", help="GPU busy time per program (torch.profiler)")
    args = ap.parse_args()
    kn.use(device=args.device, seed=0)
    ctx = kn.context()
    gpu = ctx.backend() == "cuda"
    n = args.examples or (60000 if gpu else 1280)
    os.environ["KILN_RBM_EXAMPLES"] = str(n)
    host = np.ascontiguousarray(load("mnist_cudaTest").T / 255.0, dtype=np.float32)
    nvis = host.shape[1]

    dat = kn.array(host, dtype=kn.float32)
    rng = np.random.default_rng(0)
    w0 = (0.1 * rng.standard_normal((nvis, NHID))).astype(np.float32)
    state = [kn.array(w0), kn.zeros(nvis), kn.full(NHID, -4.0), kn.zeros(nvis, NHID), kn.zeros(nvis),
             kn.zeros(NHID)]
    t_kiln = timed(lambda: kiln_epoch(dat, state), ctx.synchronize, args.repeats)
    print(f"kiln ({ctx.backend()}, {ctx.description()}): one epoch of {n // BS} batches: "
          f"{t_kiln * 1e3:.1f} ms (median of {args.repeats})")
    import kiln.gnumpy as gpu
    gstate = [kn.array(w0), kn.zeros(nvis), kn.full(NHID, -4.0), kn.zeros(nvis, NHID), kn.zeros(nvis),
              kn.zeros(NHID)]
    t_gnumpy = timed(lambda: gnumpy_epoch(gpu, dat, gstate), ctx.synchronize, args.repeats)
    print(f"kiln.gnumpy, the report's program as written: {t_gnumpy * 1e3:.1f} ms")

    try:
        import torch
    except ImportError:
        print("PyTorch is not importable here: no ratio")
        return
    dev = "cuda" if gpu and torch.cuda.is_available() else "cpu"
    torch.backends.cuda.matmul.allow_tf32 = False
    tdat = torch.from_numpy(host).to(dev)
    tstate = [torch.from_numpy(w0).to(dev), torch.zeros(nvis, device=dev), torch.full((NHID,), -4.0, device=dev),
              torch.zeros(nvis, NHID, device=dev), torch.zeros(nvis, device=dev), torch.zeros(NHID, device=dev)]
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
    t_torch = timed(lambda: torch_epoch(torch, tdat, tstate), sync, args.repeats)
    print(f"PyTorch {torch.__version__} eager ({dev}): {t_torch * 1e3:.1f} ms")
    print(f"ratio kiln / PyTorch eager: {t_kiln / t_torch:.2f} (target <= 0.5 on the H100); "
          f"kiln.gnumpy / PyTorch eager: {t_gnumpy / t_torch:.2f}")
    if args.profile and dev == "cuda":
        gpu_profile(torch, "kiln", lambda: kiln_epoch(dat, state), ctx.synchronize)
        gpu_profile(torch, "PyTorch eager", lambda: torch_epoch(torch, tdat, tstate), sync)


if __name__ == "__main__":
    main()
