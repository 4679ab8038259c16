"""bench/overhead.py — the Python cost of kiln's lazy expressions: building one lazy
operation (a * 2.0, a + b, kn.exp(a)), one small evaluated assignment (out[...] = a + b on
16 elements), a small kn.dot into out= and a slice view, in ns per call, median of several
timeit rounds; numpy's cost of the eager a + b on the same data for scale. Target: building one lazy operation <= 1 us.

    python bench/overhead.py [--device auto|cpu|cuda]
"""
import argparse
import statistics
import timeit

import numpy as np

import kiln as kn


def per_call(stmt, glb, number=20000, rounds=7):
    t = timeit.Timer(stmt, globals=glb)
    runs = [t.timeit(number) / number for _ in range(rounds)]
    return statistics.median(runs) * 1e9


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="auto")
    args = ap.parse_args()
    kn.use(device=args.device)
    a = kn.rand(16)
    b = kn.rand(16)
    out = kn.empty(16)
    na, nb = a.get(), b.get()
    x, y, z = kn.rand(4, 4), kn.rand(4, 4), kn.empty(4, 4)
    glb = {"a": a, "b": b, "out": out, "kn": kn, "na": na, "nb": nb, "x": x, "y": y, "z": z}
    rows = [
        ("build lazy a * 2.0", per_call("a * 2.0", glb)),
        ("build lazy a + b", per_call("a + b", glb)),
        ("build lazy kn.exp(a)", per_call("kn.exp(a)", glb)),
        ("build lazy (a + b) * a", per_call("(a + b) * a", glb)),
        ("evaluated out[...] = a + b (16 elements)", per_call("out[...] = a + b", glb, number=2000)),
        ("kn.dot(x, y, out=z), 4 x 4 x 4", per_call("kn.dot(x, y, out=z)", glb, number=2000)),
        ("a[4:8] (a slice view)", per_call("a[4:8]", glb)),
        ("numpy na + nb (16 elements), for scale", per_call("na + nb", glb)),
    ]
    print(f"kiln {kn.__version__} on {kn.context().backend()} ({kn.context().description()})")
    for name, ns in rows:
        print(f"  {name:45s} {ns:9.0f} ns")
    print(f"target: building one lazy operation <= 1000 ns: "
          f"{'met' if rows[0][1] <= 1000 and rows[1][1] <= 1000 else 'NOT met'}")


if __name__ == "__main__":
    main()
