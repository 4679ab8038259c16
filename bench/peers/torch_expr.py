#!/usr/bin/env python3
"""bench/peers/torch_expr.py — the peer of `kiln-gpu-bench` (tools/kiln-gpu-bench.c): the same
fused expressions, shapes and dtypes through PyTorch eager and torch.compile on the same GPU,
with a device-to-device copy of the same bytes measured in the same run.

Timing: CUDA events around batches of back-to-back calls after warm-up (3 calls, and
torch.compile's compilation), the median of 7 batches divided by the batch size, as
kiln-gpu-bench does. GB/s counts the bytes that must move (inputs read once, output
written once); copy/x is the fraction of copy bandwidth reached.
Usage: python3 bench/peers/torch_expr.py [--quick] [--no-compile] [--only NAME,NAME] [--sizes RxC,RxC]
       [--dtype f32|f16|bf16]
(--quick: 8192 x 8192 only; --no-compile: eager only; --only: the cases of those names,
split at the commas outside parentheses, so --only 'sum(A,0),sum(A)' names two; --sizes: those
shapes, as kiln-gpu-bench's --sizes; --dtype: that dtype alone, as kiln-gpu-bench's --dtype: f32 and
f16 by default, bf16 only so asked)
"""
import sys
import torch


def split_names(text):
    """Names separated by commas at parenthesis depth 0."""
    names, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            names.append(cur)
            cur = ""
            continue
        depth += (ch == "(") - (ch == ")")
        cur += ch
    return names + [cur]


def option_value(name):
    """The value after option name, None where it is absent; an exit naming it where it ends the line."""
    if name not in sys.argv:
        return None
    if sys.argv.index(name) == len(sys.argv) - 1:
        sys.exit(f"torch_expr.py: argument '{name}': no value follows it")
    return sys.argv[sys.argv.index(name) + 1]


QUICK = "--quick" in sys.argv
NO_COMPILE = "--no-compile" in sys.argv
ONLY = split_names(option_value("--only")) if "--only" in sys.argv else None
SIZES = option_value("--sizes")
DTYPE = option_value("--dtype")
dev = "cuda"


def bn(A, B, bias, out, rowout):
    A.copy_(torch.rsqrt(A.var(1, keepdim=True, unbiased=False) + 1e-5) * (A - A.mean(1, keepdim=True)))


def bn_pure(A):
    return torch.rsqrt(A.var(1, keepdim=True, unbiased=False) + 1e-5) * (A - A.mean(1, keepdim=True))


def bn_columns_pure(A):
    return torch.rsqrt(A.var(0, keepdim=True, unbiased=False) + 1e-5) * (A - A.mean(0, keepdim=True))


def relu_ab(A, B, bias):
    return torch.relu(A * B + bias)


def chain(A, B):
    return torch.sigmoid(A) * B + (A - B) ** 2 * 0.5


def variance(A):
    return ((A - A.mean(1, keepdim=True)) ** 2).mean(1, keepdim=True)


def colsum(A):
    return A.sum(0)


def total(A):
    return A.sum(dtype=torch.float32)


def minus_max(A):
    return A - A.max()


def softmax_rows(A):
    return torch.softmax(A, 1)


def gelu(A):
    return torch.nn.functional.gelu(A)


def softplus(A):
    return torch.nn.functional.softplus(A)


def rowprod(A):
    return A.prod(1, keepdim=True)


def parse_sizes(text):
    """'RxC,RxC' as [(R, C), ...]; a malformed shape names itself."""
    out = []
    for part in text.split(","):
        r, sep, c = part.partition("x")
        if not sep or not r.isdigit() or not c.isdigit() or int(r) < 1 or int(c) < 1:
            sys.exit(f"torch_expr.py: argument '--sizes': '{part}' is not ROWSxCOLS")
        out.append((int(r), int(c)))
    return out


def timed(fn, reps):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(7):
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(reps):
            fn()
        e1.record()
        e1.synchronize()
        ts.append(e0.elapsed_time(e1) / reps)
    ts.sort()
    return ts[3]


ALL_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def main():
    if DTYPE is not None and DTYPE not in ALL_DTYPES:
        sys.exit(f"torch_expr.py: argument '--dtype': '{DTYPE}' is not f32, f16 or bf16")
    print("torch", torch.__version__, torch.cuda.get_device_name())
    sizes = [(8192, 8192), (65536, 1024), (1024, 65536), (256, 256)]
    if QUICK:
        sizes = sizes[:1]
    if SIZES:
        sizes = parse_sizes(SIZES)
    dtypes = [(ALL_DTYPES[DTYPE], DTYPE)] if DTYPE else [(torch.float32, "f32"), (torch.float16, "f16")]
    print(f"{'case':26s} {'dtype':5s} {'shape':13s} {'eager ms':>9s} {'GB/s':>8s} {'compile ms':>10s} {'GB/s':>8s} "
          f"{'copyGB/s':>9s} {'copy/eag':>8s} {'copy/cmp':>8s}")
    for (N, C) in sizes:
        for dt, dn in dtypes:
            A = torch.rand(N, C, device=dev, dtype=dt) * 5 - 2
            B = torch.rand(N, C, device=dev, dtype=dt) * 2 - 1
            bias = torch.rand(C, device=dev, dtype=dt) * 2 - 1
            es = A.element_size()
            cases = [
                ("relu(A*B+bias)", relu_ab, (A, B, bias), (2 * N * C + C + N * C) * es),
                ("sigmoid(A)*B+sqr(A-B)/2", chain, (A, B), 3 * N * C * es),
                ("batchnorm A in place", bn_pure, (A,), 2 * N * C * es),
                ("batchnorm(A,0) in place", bn_columns_pure, (A,), 2 * N * C * es),
                ("var(A,1)", variance, (A,), (N * C + N) * es),
                ("sum(A,0)", colsum, (A,), (N * C + C) * es),
                ("sum(A)", total, (A,), N * C * es + 4),
                ("A-max(A)", minus_max, (A,), 2 * N * C * es),
                ("softmax(A,1)", softmax_rows, (A,), 2 * N * C * es),
                ("gelu(A)", gelu, (A,), 2 * N * C * es),
                ("softplus(A)", softplus, (A,), 2 * N * C * es),
                ("prod(A,1)", rowprod, (A,), (N * C + N) * es),
            ]
            reps = 10 if N * C >= (1 << 22) else 100
            for name, fn, args, nbytes in cases:
                if ONLY and name not in ONLY:
                    continue
                if name.startswith("batchnorm"):  # in place: copied back into A
                    eager = lambda fn=fn: A.copy_(fn(A))  # noqa: E731
                    cfn = torch.compile(lambda x, fn=fn: x.copy_(fn(x)))
                    comp = lambda cfn=cfn: cfn(A)  # noqa: E731
                else:
                    eager = lambda fn=fn, args=args: fn(*args)  # noqa: E731
                    cfn = torch.compile(fn)
                    comp = lambda cfn=cfn, args=args: cfn(*args)  # noqa: E731
                te = timed(eager, reps)
                try:
                    tc = float("nan") if NO_COMPILE else timed(comp, reps)
                except Exception as ex:  # a compile failure is a result, not a crash
                    print(f"  torch.compile failed for {name}: {ex}")
                    tc = float("nan")
                src = torch.empty(nbytes // 2, dtype=torch.uint8, device=dev)
                dst = torch.empty_like(src)
                tcopy = timed(lambda: dst.copy_(src), 21)
                print(f"{name:26s} {dn:5s} {N}x{C:<8d} {te:9.4f} {nbytes / te * 1e-6:8.1f} {tc:10.4f} "
                      f"{nbytes / tc * 1e-6:8.1f} {nbytes / tcopy * 1e-6:9.1f} {tcopy / te:8.2f} {tcopy / tc:8.2f}",
                      flush=True)
            del A, B, bias
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
