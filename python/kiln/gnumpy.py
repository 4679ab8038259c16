"""kiln.gnumpy — gnumpy's interface (Tieleman, 2010) over kiln, so that programs written for
gnumpy run with only their import line changed:

    import kiln.gnumpy as gpu

What it keeps from gnumpy: one dtype (float32); garray(x) copies host data in; slicing
along the first axis gives views (as in gnumpy); x.logistic(), x.rand(), x.euclid_norm(),
x.sum(axis), x.T, dot, zeros/ones/rand/randn, as_numpy_array, the memory tools
(memory_in_use, max_memory_usage, memory_allocators, free_reuse_cache). Python 2 programs
compute `shape[0] / batch_size` for a count: the entries of a garray's shape divide like
Python 2 ints (floor division between two ints), so such loops keep working.

What differs: every kiln slice is a view (gnumpy copied some); results of operators are
lazy kiln expressions (they act as values wherever one is needed).
"""
import numpy as _np

import kiln as _kn

__all__ = ["garray", "zeros", "ones", "empty", "rand", "randn", "dot", "logistic", "tanh", "exp", "log", "sqrt",
           "abs", "sign", "sum", "mean", "max", "min", "euclid_norm", "as_numpy_array", "as_garray",
           "is_garray", "memory_in_use", "max_memory_usage", "memory_allocators", "free_reuse_cache",
           "seed_rand", "status", "float32"]

float32 = _np.float32


class _Py2Int(int):
    """An int whose `/` with another int floors, as in Python 2 (gnumpy's programs rely on it)."""

    __slots__ = ()

    def __truediv__(self, other):
        if isinstance(other, int) and not isinstance(other, bool):
            return int(self) // other
        return int(self) / other

    def __rtruediv__(self, other):
        if isinstance(other, int) and not isinstance(other, bool):
            return other // int(self)
        return other / int(self)


class garray(_kn.Tensor):
    """A float32 kiln tensor made from host data (numpy array, list, scalar, kiln object)."""

    __slots__ = ()

    def __new__(cls, data, copy=True):
        t = _kn.array(data, dtype=_kn.float32) if copy or not isinstance(data, _kn.Tensor) else data
        if t.dtype is not _kn.float32:
            t = t.astype(_kn.float32)
        t.__class__ = garray
        return t

    def __init__(self, data=None, copy=True):
        pass

    @property
    def shape(self):
        return tuple(_Py2Int(s) for s in _kn.Tensor.shape.__get__(self))


def as_garray(x):
    return x if _kn._is_kiln(x) else garray(x)


def is_garray(x):
    return isinstance(x, (_kn.Tensor, _kn.Expr))


def _shape(args):
    if len(args) == 1 and not isinstance(args[0], int):
        return tuple(args[0])
    return tuple(args)


def zeros(*shape):
    return _kn.zeros(_shape(shape), dtype=_kn.float32)


def ones(*shape):
    return _kn.ones(_shape(shape), dtype=_kn.float32)


def empty(*shape):
    return _kn.empty(_shape(shape), dtype=_kn.float32)


def rand(*shape):
    """Uniform [0, 1) float32 array of the shape."""
    return _kn.rand(_shape(shape), dtype=_kn.float32)


def randn(*shape):
    """Standard normal float32 array of the shape."""
    return _kn.randn(_shape(shape), dtype=_kn.float32)


def dot(a, b):
    return _kn.dot(a, b)


def logistic(x):
    return _kn.sigmoid(x)


tanh, exp, log, sqrt, sign = _kn.tanh, _kn.exp, _kn.log, _kn.sqrt, _kn.sign


def abs(x):  # noqa: A001 - gnumpy's name
    return _kn.abs(x)


def sum(x, axis=None):  # noqa: A001
    return _kn.sum(as_garray(x), axis)


def mean(x, axis=None):
    return _kn.mean(as_garray(x), axis)


def max(x, axis=None):  # noqa: A001
    return _kn.max(as_garray(x), axis)


def min(x, axis=None):  # noqa: A001
    return _kn.min(as_garray(x), axis)


def euclid_norm(x):
    return as_garray(x).euclid_norm()


def as_numpy_array(x, dtype=None):
    a = x.get() if _kn._is_kiln(x) else _np.asarray(x)
    return a if dtype is None else a.astype(dtype)


def memory_in_use(in_megabytes=False):
    n = _kn.memory_in_use()
    return n / 2**20 if in_megabytes else n


def max_memory_usage():
    return _kn.max_memory_usage()


def memory_allocators(print_it=True):
    """The live allocations by Python file:line (kiln's memory report)."""
    r = _kn.memory_report()
    if print_it:
        print(r)
    return r


def free_reuse_cache():
    _kn.free_cached()


def seed_rand(seed=0):
    _kn.seed(seed)


def status():
    c = _kn.context()
    print(f"kiln.gnumpy on {c.backend()} ({c.description()}), {memory_in_use()} bytes in use")
