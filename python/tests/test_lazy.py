"""Lazy expressions: results are Expr objects until a value is needed; assignment evaluates
the whole right-hand side; values are computed once and cached; long chains built across
loop iterations stay bounded; a random node used twice gives the same numbers."""
import numpy as np

import kiln as kn
from conftest import close, make


def test_lazy_types(rng):
    a, av = make(rng, (4, 5), kn.float32)
    e = kn.sqrt(abs(a)) * 2 - kn.mean(a, axis=1, keepdims=True)
    assert isinstance(e, kn.Expr) and not e._evaluated
    assert e.shape == (4, 5) and e.dtype is kn.float32 and e.ndim == 2 and e.size == 20
    close(e, np.sqrt(np.abs(av)) * 2 - av.mean(1, keepdims=True), kn.float32, rtol=1e-5)
    assert e._evaluated
    assert isinstance(e.T, kn.Tensor)


def test_value_cached_and_reads_inputs_late(rng):
    a, av = make(rng, (3,), kn.float32)
    e = a + 1
    a[...] = 10.0                                   # before evaluation: e sees the new a
    close(e, np.full(3, 11.0), kn.float32)
    a[...] = 20.0                                   # after: e keeps its value
    close(e, np.full(3, 11.0), kn.float32)


def test_expression_reused(rng):
    a, av = make(rng, (6, 7), kn.float32)
    d = a - kn.mean(a, axis=0)
    v = kn.mean(d * d, axis=0)                       # d used twice in one tree
    close(v, av.var(0), kn.float32, rtol=1e-5, atol=1e-6)
    out = kn.empty(6, 7)
    out[...] = d / kn.sqrt(v + 1e-5)
    close(out, (av - av.mean(0)) / np.sqrt(av.var(0) + 1e-5), kn.float32, rtol=1e-4, atol=1e-5)


def test_long_chains_stay_bounded(rng):
    a, av = make(rng, (10,), kn.float64)
    acc = kn.zeros(10, dtype=kn.float64)
    ref = np.zeros(10)
    for i in range(300):
        acc = acc * 0.5 + a                          # never assigned: grows lazily
        ref = ref * 0.5 + av
        assert acc._nodes <= 2 * kn._kiln.MAX_LAZY_NODES + 8
    close(acc, ref, kn.float64, rtol=1e-12)


def test_shared_subexpressions_stay_lazy(rng):
    """The size limit counts distinct nodes: e + e * 0.5 twelve times is a tree of 16 381 nodes
    but a graph of 37, one kernel, and no step of it is evaluated on the way."""
    a, av = make(rng, (5, 6), kn.float64)
    e, steps = a, []
    for _ in range(12):
        e = e + e * 0.5
        steps.append(e)
    assert e._nodes == 16381 and not any(s._evaluated for s in steps)
    close(e, av * 1.5 ** 12, kn.float64, rtol=1e-12)
    assert not any(s._evaluated for s in steps[:-1])


def test_assigned_expression_is_not_cut(rng):
    """Assignment and evaluation take the whole right-hand side whatever its size: the limit is
    for operands of new nodes. 49 distinct nodes, assigned: the Expr itself stays unevaluated."""
    a, av = make(rng, (4, 3), kn.float64)
    e, ref = a, av.copy()
    for _ in range(12):
        e = e * 0.5 + 1.0
        ref = ref * 0.5 + 1.0
    assert e._nodes == 49 > kn._kiln.MAX_LAZY_NODES
    out = kn.empty(4, 3, dtype=kn.float64)
    out[...] = e
    assert not e._evaluated
    close(out, ref, kn.float64, rtol=1e-12)
    close(kn.evaluate(e), ref, kn.float64, rtol=1e-12)
    assert not e._evaluated


def test_random_node_used_twice():
    g = kn.rand()
    out = kn.empty(50, 20)
    out[...] = g - g
    assert (out.get() == 0).all()


def test_eval_dtype(rng):
    a, av = make(rng, (3, 3), kn.float32)
    t = kn.evaluate(a * 2, dtype=kn.float64)
    assert isinstance(t, kn.Tensor) and t.dtype is kn.float64
    close(t, av * 2, kn.float32)


def test_overhead_smoke():
    """The hot path works without the pure-Python layer (operators come from C slots)."""
    a = kn.ones(4)
    for _ in range(1000):
        e = a * 2.0
    assert isinstance(e, kn.Expr)


def test_seed_expressions_are_one_kernel():
    """nervanagpu's variance and batch-norm right-hand sides each run as one kernel (the
    library's plan trace, KILN_TRACE=plan, says how many kernels each assignment took)."""
    import os
    import subprocess
    import sys
    prog = (
        "import kiln as kn\n"
        "A = kn.rand(128, 32, dtype=kn.float16)\n"
        "C = kn.empty(128, 1)\n"
        "C[:] = kn.mean(kn.square(A - kn.mean(A, axis=1, keepdims=True)), axis=1, keepdims=True)\n"
        "A[:] = kn.reciprocal(kn.sqrt(kn.var(A, axis=1, keepdims=True) + 1e-3)) * "
        "(A - kn.mean(A, axis=1, keepdims=True))\n"
    )
    env = dict(os.environ, KILN_TRACE="plan", PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    r = subprocess.run([sys.executable, "-c", prog], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    plans = [line for line in r.stderr.splitlines() if line.startswith("kiln: plan")]
    assert len(plans) == 3, r.stderr                    # the rand fill, then the two expressions
    for p in plans:
        assert "kernels=1 " in p, p
    assert "reductions=2" in plans[1] and "reductions=2" in plans[2]   # one reduction node each, no duplicates
