"""kiln for Python: numpy-like tensors with lazily fused expressions, over kiln's C API.

    import kiln as kn
    a = kn.array(np_array, dtype=kn.float16)
    out = kn.empty((128, 32))
    out[...] = kn.reciprocal(kn.sqrt(kn.var(a, axis=1, keepdims=True) + 1e-3)) * (a - kn.mean(a, axis=1, keepdims=True))

What this module is: the pure-Python layer over the extension kiln._kiln (written in C,
binding only include/kiln.h). The extension holds the handles and the hot paths (operators
build lazy kiln_expr nodes in C); this layer gives numpy's names and rules (dtypes, indexing,
reductions with axis/keepdims, dot, interop, memory tools, contexts).

Semantics worth knowing:
  - Operators and functions return lazy kiln.Expr objects. `out[...] = expr` evaluates the
    whole right-hand side in one plan; an Expr used where a value is needed (printing, get(),
    numpy conversion, indexing, a dot operand) is evaluated then, once (the value is cached).
    A lazy value reads its inputs when it is evaluated, not when it was written.
  - Comparisons give 0/1 in the promoted dtype (kiln has no bool dtype); int64 input
    becomes int32 (an OverflowError where a value does not fit, unless a float dtype is
    asked for), bool becomes uint8, complex input with zero imaginary parts its real part
    (a TypeError otherwise).
  - Constructors without a dtype make float32 (the deep-learning default), kn.array keeps
    the dtype of its numpy input (with the two changes above).
  - Indexing with integers and slices (steps, negative steps, Ellipsis, None) gives views;
    integer-array or boolean indexing gives a copy (computed through numpy).
"""
import math as _math
import itertools as _itertools
import os as _os
import numbers as _numbers

import numpy as _np

from . import _kiln

__all__ = [
    "Tensor", "Expr", "ndarray", "dtype", "Error", "float32", "float16", "bfloat16", "float64", "int8",
    "uint8", "int32", "array", "asarray", "empty", "zeros", "ones", "full", "arange", "rand", "randn",
    "empty_like", "zeros_like", "ones_like", "full_like", "dot", "matmul", "sqrt", "square", "exp", "log",
    "exp2", "log2", "sigmoid", "logistic", "tanh", "relu", "maximum", "minimum", "clip", "reciprocal",
    "rsqrt", "sign", "isfinite", "where", "sum", "mean", "var", "std", "max", "min", "amax", "amin",
    "argmax", "argmin", "use", "context", "memory_in_use", "max_memory_usage", "memory_report",
    "memory_stats", "set_memory_limit", "free_cached", "from_dlpack", "get", "evaluate", "dropout",
    "reshape", "transpose", "broadcast_to", "expand_dims", "squeeze", "concatenate", "stack", "where", "cast",
    "log1p", "expm1", "sin", "cos", "erf", "floor", "ceil", "rint", "trunc", "fix", "round", "around", "softplus",
    "gelu", "any", "all", "isnan", "isinf", "nan_to_num", "log10", "sinh", "cosh", "logaddexp", "hypot",
    "count_nonzero", "isclose", "allclose", "array_equal", "floor_divide", "mod", "remainder", "fmod", "eye", "identity",
    "linspace", "flip", "fliplr", "flipud", "ravel", "vstack", "hstack", "split", "array_split", "tril", "triu",
    "outer", "tile", "repeat", "diag", "prod", "swapaxes", "moveaxis", "copy", "diff", "atleast_1d",
    "atleast_2d", "atleast_3d", "softmax", "log_softmax", "tensordot", "inner", "pad", "meshgrid", "take",
]

__version__ = _kiln.version()

# ---------------------------------------------------------------------------------------
# dtypes
# ---------------------------------------------------------------------------------------


class dtype:
    """A kiln dtype. Compares equal to its name, its numpy dtype and numpy's type."""

    __slots__ = ("name", "code", "itemsize", "np", "short", "kind")

    def __init__(self, name, short, code, npdt, kind):
        self.name = name
        self.short = short
        self.code = code
        self.itemsize = _kiln.dtype_size(code)
        self.np = npdt
        self.kind = kind

    def __repr__(self):
        return "kiln." + self.name

    __str__ = lambda self: self.name

    def __eq__(self, other):
        try:
            return _to_dtype(other, "other") is self
        except (TypeError, ValueError):
            return NotImplemented

    def __hash__(self):
        return hash(self.name)

    def __reduce__(self):
        return (_to_dtype, (self.name,))


float32 = dtype("float32", "f32", _kiln.DTYPE_F32, _np.dtype(_np.float32), "f")
float16 = dtype("float16", "f16", _kiln.DTYPE_F16, _np.dtype(_np.float16), "f")
bfloat16 = dtype("bfloat16", "bf16", _kiln.DTYPE_BF16, None, "f")
float64 = dtype("float64", "f64", _kiln.DTYPE_F64, _np.dtype(_np.float64), "f")
int8 = dtype("int8", "i8", _kiln.DTYPE_I8, _np.dtype(_np.int8), "i")
uint8 = dtype("uint8", "u8", _kiln.DTYPE_U8, _np.dtype(_np.uint8), "u")
int32 = dtype("int32", "i32", _kiln.DTYPE_I32, _np.dtype(_np.int32), "i")
half, single, double = float16, float32, float64

_DTYPES = (float32, float16, bfloat16, float64, int8, uint8, int32)
_BY_CODE = {d.code: d for d in _DTYPES}
_INT_CODES = frozenset(d.code for d in _DTYPES if d.kind in "iu")
_BY_NAME = {}
for _d in _DTYPES:
    _BY_NAME[_d.name] = _BY_NAME[_d.short] = _d
_BY_NAME.update({"float": float32, "half": float16, "double": float64, "bf16": bfloat16, "single": float32})
_BY_NP = {d.np: d for d in _DTYPES if d.np is not None}
# numpy dtypes kiln stores in a near type (documented above).
_NP_FALLBACK = {
    _np.dtype(_np.bool_): uint8, _np.dtype(_np.int16): int32, _np.dtype(_np.uint16): int32,
    _np.dtype(_np.int64): int32, _np.dtype(_np.uint32): int32, _np.dtype(_np.uint64): int32,
    _np.dtype(_np.longdouble): float64,
}


def _to_dtype(x, argname="dtype"):
    """kiln dtype from a kiln dtype, a name, a numpy dtype or type."""
    if isinstance(x, dtype):
        return x
    if isinstance(x, str):
        d = _BY_NAME.get(x.lower())
        if d is not None:
            return d
    try:
        npd = _np.dtype(x)
    except TypeError:
        raise TypeError(f"argument '{argname}': {x!r} is not a dtype kiln knows") from None
    d = _BY_NP.get(npd)
    if d is None:
        raise TypeError(f"argument '{argname}': numpy dtype {npd} has no kiln dtype "
                        "(kiln has float32, float16, bfloat16, float64, int8, uint8, int32)")
    return d


def _wide_int_dtype(lo, hi, dt, target, argname):
    """The kiln dtype for wide integers (numpy dtype dt) whose values span [lo, hi]: int32 when
    they fit, float64 where target is a float dtype, else an OverflowError naming the value
    (a cast would wrap it silently: 2**40 would become 0). Host and device data share it."""
    if -2**31 <= lo and hi <= 2**31 - 1:
        return int32
    if target is not None and target.kind == "f":
        return float64
    bad = hi if hi > 2**31 - 1 else lo
    raise OverflowError(f"argument '{argname}': {dt} value {bad} does not fit int32, kiln's widest integer dtype "
                        "(ask for a float dtype to keep it)")


def _np_src(a, target=None, argname="obj"):
    """(contiguous numpy array in a dtype kiln reads, its kiln dtype) for host data a, on its
    way to a kiln tensor of dtype target (None: the tensor takes the returned dtype). Wide
    integers (int64, uint32, uint64) come as int32 when every value fits; otherwise as
    float64 where target is a float dtype, and an OverflowError naming the value where it is
    not (astype would wrap them silently: 2**40 would become 0)."""
    if not a.dtype.isnative:  # big-endian data: the same values in this machine's order first
        a = a.astype(a.dtype.newbyteorder("="))
    d = _BY_NP.get(a.dtype)
    if d is None:
        d = _NP_FALLBACK.get(a.dtype)
        if d is None:
            if a.dtype.kind in "fc":
                d = float64
                if a.dtype.kind == "c":
                    if a.size and _np.any(a.imag != 0):
                        raise TypeError(f"argument '{argname}': complex values with non-zero imaginary parts; kiln "
                                        "has no complex dtype (pass .real or .imag)")
                    a = a.real
            else:
                raise TypeError(f"argument '{argname}': numpy dtype {a.dtype} cannot become a kiln tensor")
        elif d is int32 and a.dtype.kind in "iu" and a.size:
            d = _wide_int_dtype(int(a.min()), int(a.max()), a.dtype, target, argname)
        a = a.astype(d.np)
    return _np.ascontiguousarray(a), d


# ---------------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------------


class Error(RuntimeError):
    """A kiln failure of the driver, the run-time compiler, a limit or kiln itself. The
    message is kiln's own (kiln_last_error); .status holds the status name."""
    status = None


class ShapeError(ValueError):
    status = None


class DTypeError(TypeError):
    status = None


class OutOfMemoryError(MemoryError):
    status = None


class BoundsError(IndexError):
    status = None


class ArgumentError(ValueError):
    status = None


_EXC = {
    _kiln.KILN_ERR_NO_DEVICE: Error, _kiln.KILN_ERR_DRIVER: Error, _kiln.KILN_ERR_OOM: OutOfMemoryError,
    _kiln.KILN_ERR_IO: Error, _kiln.KILN_ERR_COMPILE: Error, _kiln.KILN_ERR_ARG: ArgumentError,
    _kiln.KILN_ERR_NULL: ArgumentError, _kiln.KILN_ERR_SHAPE: ShapeError, _kiln.KILN_ERR_DTYPE: DTypeError,
    _kiln.KILN_ERR_AXIS: ShapeError, _kiln.KILN_ERR_BOUNDS: BoundsError, _kiln.KILN_ERR_OVERFLOW: ArgumentError,
    _kiln.KILN_ERR_ALIAS: ArgumentError, _kiln.KILN_ERR_LAYOUT: ShapeError, _kiln.KILN_ERR_CONTEXT: ArgumentError,
    _kiln.KILN_ERR_UNSUPPORTED: Error, _kiln.KILN_ERR_LIMIT: Error, _kiln.KILN_ERR_INTERNAL: Error,
}

# ---------------------------------------------------------------------------------------
# contexts
# ---------------------------------------------------------------------------------------

_DEVICES = {"default": 0, "cpu": 1, "cuda": 2, "gpu": 2, "auto": 3}
Context = _kiln.Context
_stack = []


class use:
    """Makes a new context current: kn.use(device="cuda"|"cpu"|"auto", seed=...,
    stochastic_round=..., memory_limit=..., allow_tf32=..., device_index=..., threads=...).
    threads: CPU threads of the context (0 = KILN_THREADS, else one per core); results do
    not depend on it.
    As a with-block, the previous context comes back at the end. Tensors keep the context
    they were made in; mixing contexts in one expression is an error."""

    def __init__(self, device="default", seed=0, stochastic_round=False, memory_limit=None, allow_tf32=False,
                 device_index=0, threads=0):
        if not isinstance(device, str) or device.lower() not in _DEVICES:
            raise ValueError(f"argument 'device': {device!r} is not one of 'cpu', 'cuda', 'auto'")
        if memory_limit is not None and (not isinstance(memory_limit, _numbers.Integral) or memory_limit < 0):
            raise ValueError(f"argument 'memory_limit': {memory_limit!r} is not a byte count >= 0")
        if not isinstance(seed, _numbers.Integral):
            raise TypeError(f"argument 'seed': {seed!r} is not an int")
        if not isinstance(threads, _numbers.Integral) or not 0 <= threads <= 256:
            raise ValueError(f"argument 'threads': {threads!r} is not a thread count in 0..256")
        self.ctx = _kiln.Context(device=_DEVICES[device.lower()], seed=int(seed) & (2**64 - 1),
                                 round=2 if stochastic_round else 1, memory_limit=int(memory_limit or 0),
                                 allow_tf32=bool(allow_tf32), device_index=int(device_index),
                                 threads=int(threads))
        self.previous = _kiln.set_current(self.ctx)

    def __enter__(self):
        return self.ctx

    def __exit__(self, *exc):
        _kiln.set_current(self.previous)
        return False


def _default_ctx():
    return _kiln.Context(device=0)


def context():
    """The current context (the default one is made on first use, device from KILN_DEVICE)."""
    return _kiln.get_current()


def _ctx(ctx):
    return ctx if ctx is not None else _kiln.get_current()


def memory_stats(ctx=None):
    """dict: in_use, peak, cached, limit, live_blocks, total_allocs (bytes / counts)."""
    return _ctx(ctx).stats()


def memory_in_use(ctx=None):
    """Bytes of live kiln allocations in the context."""
    return _ctx(ctx).stats()["in_use"]


def max_memory_usage(ctx=None):
    """The highest memory_in_use() so far."""
    return _ctx(ctx).stats()["peak"]


def memory_report(ctx=None):
    """Live allocations grouped by the Python file:line that made them and tensor name."""
    return _ctx(ctx).report()


def set_memory_limit(limit, ctx=None):
    """Caps bytes in use (None or 0: no cap); later allocations past it raise MemoryError."""
    if limit is not None and (not isinstance(limit, _numbers.Integral) or limit < 0):
        raise ValueError(f"argument 'limit': {limit!r} is not a byte count >= 0")
    _ctx(ctx).set_memory_limit(int(limit or 0))


def free_cached(ctx=None):
    """Returns cached (freed but kept) blocks to the system or driver."""
    _ctx(ctx).release_cached()


def synchronize(ctx=None):
    _ctx(ctx).synchronize()


def seed(value, ctx=None):
    """Reseeds the context's RNG (same calls then give the same numbers)."""
    _ctx(ctx).set_seed(int(value))


# ---------------------------------------------------------------------------------------
# tensors and expressions
# ---------------------------------------------------------------------------------------

_TYPESTR = {"float32": "<f4", "float16": "<f2", "float64": "<f8", "int8": "|i1", "uint8": "|u1", "int32": "<i4"}


def _is_kiln(x):
    return isinstance(x, (_kiln.TensorBase, _kiln.ExprBase))


class _Methods:
    """What Tensor and Expr share (numpy's ndarray surface)."""

    __slots__ = ()
    __array_priority__ = 100

    # -- attributes --
    @property
    def dtype(self):
        return _BY_CODE[self._dtype]

    @property
    def itemsize(self):
        return self.dtype.itemsize

    @property
    def nbytes(self):
        return self.size * self.dtype.itemsize

    @property
    def strides(self):
        v = _kiln.value(self)
        isz = v.dtype.itemsize
        return tuple(s * isz for s in v._estrides)

    @property
    def T(self):
        return _kiln.value(self)._permute(None)

    @property
    def device(self):
        return self.ctx.backend()

    def __len__(self):
        s = self.shape
        if not s:
            raise TypeError("len() of a 0-d kiln tensor")
        return s[0]

    def __iter__(self):
        v = _kiln.value(self)
        if v.ndim == 0:
            raise TypeError("iteration over a 0-d kiln tensor")
        for i in range(v.shape[0]):
            yield v[i]

    # -- values --
    def get(self):
        """A new numpy array with the values (bfloat16 comes back as float32)."""
        v = _kiln.value(self)
        d = v.dtype
        npd = d.np if d.np is not None else _np.dtype(_np.float32)
        out = _np.empty(v.shape, npd)
        v._read(out, _BY_NP[npd].code)
        return out

    asnumpy = get

    def __array__(self, dtype=None, copy=None):
        a = self.get()
        return a if dtype is None else a.astype(dtype, copy=False)

    def item(self):
        if self.size != 1:
            raise ValueError(f"argument 'self': item() needs one element, the tensor has {self.size}")
        return self.get().reshape(()).item()

    def tolist(self):
        return self.get().tolist()

    def __float__(self):
        if self.size != 1:
            raise TypeError(f"only a kiln tensor of one element converts to float, this one has {self.size}")
        return float(self.get().reshape(()))

    def __int__(self):
        return int(self.__float__())

    def __bool__(self):
        if self.size != 1:
            raise ValueError("the truth value of a kiln tensor with more than one element is ambiguous")
        return bool(self.get().reshape(()))

    def __repr__(self):
        a = self.get()
        body = _np.array2string(a, separator=", ", prefix="kiln.Tensor(")
        return f"kiln.Tensor({body}, dtype={self.dtype.name})"

    def __str__(self):
        return str(self.get())

    def __format__(self, spec):
        if self.size == 1 and spec:
            return format(float(self), spec)
        return format(str(self), spec)

    def __reduce__(self):
        return (_unpickle, (self.get(), self.dtype.name))

    # -- numpy protocol: ufuncs on kiln tensors stay in kiln where kiln has the function --
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        fn = _UFUNCS.get(ufunc.__name__)
        if method == "__call__" and fn is not None and not kwargs:
            return fn(*inputs)
        out = kwargs.get("out")
        if method == "__call__" and fn is not None and set(kwargs) == {"out"} and len(out) == 1 \
                and isinstance(out[0], Tensor):
            out[0][...] = fn(*inputs)
            return out[0]
        conv = [_np.asarray(x) if _is_kiln(x) else x for x in inputs]
        if out is not None:
            return NotImplemented
        return getattr(ufunc, method)(*conv, **kwargs)

    # -- numpy protocol: np.where, np.concatenate, np.tril ... on kiln operands run kiln's own
    # function where kiln has it and the call's arguments fit it; every other numpy function
    # runs numpy's implementation as before (np.sum(t) calls t.sum and stays lazy) --
    def __array_function__(self, func, types, args, kwargs):
        fn = _ARRAY_FUNCTIONS.get(func)
        guard = _ARRAY_FUNCTION_GUARDS.get(fn)
        if guard is not None and not guard(*args, **kwargs):
            fn = None
        if fn is not None:
            try:
                out = _array_function_signature(fn).bind(*args, **kwargs).arguments.get("out")
            except TypeError:           # numpy arguments kiln's function lacks: numpy's way
                fn = None
            else:
                if out is not None and not isinstance(out, Tensor):    # a numpy out=: numpy's way
                    fn = None
            if fn is not None:
                return fn(*args, **kwargs)
        impl = getattr(func, "_implementation", None)
        if impl is not None:
            return impl(*args, **kwargs)
        return func(*_numpy_tree(args), **_numpy_tree(kwargs))

    # -- shape --
    def reshape(self, *shape):
        if len(shape) == 1 and not isinstance(shape[0], _numbers.Integral):
            shape = tuple(shape[0])
        v = _kiln.value(self)
        try:
            return v._reshape(shape)
        except ShapeError as e:
            if e.status != "KILN_ERR_LAYOUT":
                raise
            return v._contiguous()._reshape(shape)

    def ravel(self):
        return self.reshape(-1)

    def flatten(self):
        return _kiln.value(self)._copy(0).reshape(-1)

    def transpose(self, *axes):
        if not axes or (len(axes) == 1 and axes[0] is None):
            return _kiln.value(self)._permute(None)
        if len(axes) == 1 and not isinstance(axes[0], _numbers.Integral):
            axes = tuple(axes[0])
        return _kiln.value(self)._permute(axes)

    def repeat(self, repeats, axis=None):
        return repeat(self, repeats, axis)

    def squeeze(self, axis=None):
        return squeeze(self, axis)

    def diagonal(self, offset=0):
        """Diagonal `offset` of a 2-D tensor (diag's rule: a view when the layout allows)."""
        if self.ndim != 2:
            raise ShapeError(f"argument 'self': diagonal needs 2 axes here, the tensor has {self.ndim}")
        return diag(self, offset)

    def swapaxes(self, a, b):
        return swapaxes(self, a, b)

    def broadcast_to(self, shape):
        return _kiln.value(self)._broadcast_to(tuple(shape))

    def __getitem__(self, index):
        return _getitem(_kiln.value(self), index)

    # -- math methods --
    def __matmul__(self, other):
        return dot(self, other)

    def __rmatmul__(self, other):
        return dot(other, self)

    def __floordiv__(self, other):
        return floor_divide(self, other)

    def __rfloordiv__(self, other):
        return floor_divide(other, self)

    def __mod__(self, other):
        return mod(self, other)

    def __rmod__(self, other):
        return mod(other, self)

    def __divmod__(self, other):
        return floor_divide(self, other), mod(self, other)

    def __rdivmod__(self, other):
        return floor_divide(other, self), mod(other, self)

    # The reductions take numpy's `out` (numpy's np.sum(t), np.max(t), ... call these methods with
    # out=None; a Tensor out receives the result); var and std also numpy's dtype.
    def sum(self, axis=None, keepdims=False, dtype=None, out=None):
        return _into(sum(self, axis, keepdims=keepdims, dtype=dtype), out)

    def prod(self, axis=None, keepdims=False, dtype=None, out=None):
        return _into(prod(self, axis, keepdims=keepdims, dtype=dtype), out)

    def mean(self, axis=None, keepdims=False, dtype=None, out=None):
        return _into(mean(self, axis, keepdims=keepdims, dtype=dtype), out)

    def var(self, axis=None, keepdims=False, ddof=0, dtype=None, out=None):
        return _into(var(self, axis, dtype=dtype, keepdims=keepdims, ddof=ddof), out)

    def std(self, axis=None, keepdims=False, ddof=0, dtype=None, out=None):
        return _into(std(self, axis, dtype=dtype, keepdims=keepdims, ddof=ddof), out)

    def max(self, axis=None, keepdims=False, out=None):
        return _into(max(self, axis, keepdims=keepdims), out)

    def min(self, axis=None, keepdims=False, out=None):
        return _into(min(self, axis, keepdims=keepdims), out)

    def argmax(self, axis=None, keepdims=False, out=None):
        return _into(argmax(self, axis, keepdims=keepdims), out)

    def argmin(self, axis=None, keepdims=False, out=None):
        return _into(argmin(self, axis, keepdims=keepdims), out)

    def clip(self, lo=None, hi=None, out=None):
        return _into(clip(self, lo, hi), out)

    def dot(self, other, out=None):
        return dot(self, other, out=out)

    def sqrt(self):
        return sqrt(self)

    def exp(self):
        return exp(self)

    def log(self):
        return log(self)

    def tanh(self):
        return tanh(self)

    def sigmoid(self):
        return sigmoid(self)

    def round(self, decimals=0, out=None):
        return _into(round(self, decimals), out)

    def __round__(self, ndigits=None):
        return round(self, 0 if ndigits is None else ndigits)

    def any(self, axis=None, keepdims=False, out=None):
        return _into(any(self, axis, keepdims=keepdims), out)

    def all(self, axis=None, keepdims=False, out=None):
        return _into(all(self, axis, keepdims=keepdims), out)

    logistic = sigmoid

    def relu(self):
        return relu(self)

    def abs(self):
        return abs(self)

    def euclid_norm(self):
        """sqrt(sum(x**2)) as a Python float (gnumpy's name)."""
        return float(_kiln.unary(_U_SQRT, _kiln.reduce(_R_SUM, _kiln.unary(_U_SQR, self), None, False)))

    def rand(self):
        """A new tensor of this shape, uniform in [0, 1) (gnumpy's method)."""
        return rand(self.shape, dtype=self.dtype if self.dtype.kind == "f" else float32, ctx=self.ctx)

    def randn(self):
        return randn(self.shape, dtype=self.dtype if self.dtype.kind == "f" else float32, ctx=self.ctx)

    def as_numpy_array(self, dtype=None):
        a = self.get()
        return a if dtype is None else a.astype(dtype)

    def evaluate(self):
        """The value as a Tensor (an Expr is computed now, once)."""
        return _kiln.value(self)

    # -- interop --
    @property
    def __cuda_array_interface__(self):
        v = _kiln.value(self)
        if v.ctx.device() != 2:
            raise AttributeError("__cuda_array_interface__: the tensor lives on the CPU backend")
        ts = _TYPESTR.get(v.dtype.name)
        if ts is None:
            raise AttributeError(f"__cuda_array_interface__: dtype {v.dtype.name} has no typestr")
        v.ctx.synchronize()
        return {"shape": v.shape, "typestr": ts, "data": (v._data, False), "version": 3,
                "strides": None if v._is_contiguous else v.strides, "stream": None}

    @property
    def __array_interface__(self):
        v = _kiln.value(self)
        if v.ctx.device() != 1:
            raise AttributeError("__array_interface__: the tensor lives on the GPU")
        ts = _TYPESTR.get(v.dtype.name)
        if ts is None:
            raise AttributeError(f"__array_interface__: dtype {v.dtype.name} has no numpy typestr")
        return {"shape": v.shape, "typestr": ts, "data": (v._data or 0, False), "version": 3,
                "strides": None if v._is_contiguous else v.strides}


def _into(r, out):
    """r, or r assigned into out (a kiln Tensor of a shape r broadcasts to; numpy's out=)."""
    if out is None:
        return r
    if not isinstance(out, _kiln.TensorBase):
        raise TypeError(f"argument 'out': a kiln Tensor to write into, not {type(out).__name__}")
    out[...] = r
    return out


class Tensor(_kiln.TensorBase, _Methods):
    """A kiln tensor (a view on shared storage). Made by kn.array, kn.empty, ... ."""

    __slots__ = ()

    def __setitem__(self, index, value):
        if index is Ellipsis or (isinstance(index, slice) and index == slice(None)):
            view = self
        else:
            adv = _advanced(index)
            if adv:
                a = self.get()
                vals = _np.asarray(value)
                if vals.dtype.kind in "iuc":  # numpy's setitem would wrap wide integers, drop imaginary parts
                    vals = _np_src(vals, self.dtype, "value")[0]
                a[_np_index(index)] = vals
                src, d = _np_src(a, self.dtype, "value")
                self._write(src, d.code)
                return
            view = _getitem(self, index)
        if isinstance(value, _np.ndarray) and value.shape == view.shape:
            src, d = _np_src(value, view.dtype, "value")
            view._write(src, d.code)
            return
        _kiln.assign(view, value)

    def copy(self):
        return self._copy(0)

    def astype(self, dtype, copy=True):
        d = _to_dtype(dtype)
        if d.code == self._dtype and not copy:
            return self
        return self._copy(d.code)

    def fill(self, value):
        _kiln.assign(self, value)

    def __imatmul__(self, other):
        self[...] = dot(self, other)
        return self

    def __ifloordiv__(self, other):
        self[...] = floor_divide(self, other)
        return self

    def __imod__(self, other):
        self[...] = mod(self, other)
        return self


class Expr(_kiln.ExprBase, _Methods):
    """A lazy kiln expression. Assign it (`out[...] = expr`) to evaluate it in one plan, or
    use it as a value (it is then evaluated once and cached)."""

    __slots__ = ()

    def copy(self):
        return _kiln.eval(self, 0)

    def astype(self, dtype, copy=True):
        return _kiln.cast(self, _to_dtype(dtype).code)

    def __setitem__(self, index, value):
        raise TypeError("argument 'self': a lazy kiln expression cannot be assigned into; "
                        "evaluate it first (x = expr.evaluate())")


ndarray = Tensor


def _unpickle(a, dtype_name):
    return array(a, dtype=dtype_name)


def _convert(obj):
    """Operand converter for the extension: float for scalars, Tensor for array-likes,
    None when kiln cannot use obj."""
    if isinstance(obj, _np.generic):
        if obj.dtype.kind in "biuf":
            return float(obj)
        return None
    if isinstance(obj, _np.ndarray):
        if obj.ndim == 0 and obj.dtype.kind in "biuf":
            return float(obj)
        return array(obj)
    if isinstance(obj, (list, tuple)):
        return array(obj)
    if hasattr(obj, "__cuda_array_interface__") or hasattr(obj, "__dlpack__") or hasattr(obj, "__array__"):
        try:
            return array(obj)
        except TypeError:
            return None
    return None


_kiln._setup(Tensor, Expr, _convert, _default_ctx, _EXC, _os.path.dirname(_os.path.abspath(__file__)) + _os.sep)

# ---------------------------------------------------------------------------------------
# indexing
# ---------------------------------------------------------------------------------------


def _advanced(index):
    items = index if isinstance(index, tuple) else (index,)
    for it in items:
        if it is None or it is Ellipsis or isinstance(it, slice):
            continue
        if isinstance(it, (bool, _np.bool_)):
            return True
        if isinstance(it, _numbers.Integral):
            continue
        if isinstance(it, _np.ndarray) and it.ndim == 0 and it.dtype.kind in "iu":
            continue
        return True
    return False


def _np_index(index):
    """numpy index for advanced indexing: a kiln object of a float dtype is a mask (its
    non-zero elements, as comparisons give 0/1), of an integer dtype integer indices."""
    def conv(i):
        if not _is_kiln(i):
            return i
        a = i.get()
        return a != 0 if a.dtype.kind == "f" else a
    return tuple(conv(i) for i in index) if isinstance(index, tuple) else conv(index)


def _getitem(v, index):
    if type(index) is slice and v.ndim:  # the common case (a batch of rows), without the general walk
        return v._slice([(index.start, index.stop, index.step, False)])
    if _advanced(index):
        idx = _np_index(index)
        return array(v.get()[idx], dtype=v.dtype, ctx=v.ctx)
    items = index if isinstance(index, tuple) else (index,)
    nd = v.ndim
    used = 0
    for it in items:
        if it is not None and it is not Ellipsis:
            used += 1
    if used > nd:
        raise IndexError(f"argument 'index': too many indices ({used}) for a tensor of {nd} axes")
    if builtin_sum(1 for it in items if it is Ellipsis) > 1:
        raise IndexError("argument 'index': an index can only have a single ellipsis ('...')")
    spec = []
    newaxes = []  # positions in the output
    out_axis = 0
    for it in items:
        if it is Ellipsis:
            for _ in range(nd - used):
                spec.append((None, None, None, False))
                out_axis += 1
        elif it is None:
            newaxes.append(out_axis)
            out_axis += 1
        elif isinstance(it, slice):
            spec.append((it.start, it.stop, it.step, False))
            out_axis += 1
        else:
            spec.append((int(it), None, None, True))
    r = v._slice(spec) if spec else v
    if newaxes:
        shape = list(r.shape)
        # output axes without None: those of r, in order; insert the new ones.
        full = []
        k = 0
        for pos in range(len(shape) + len(newaxes)):
            if pos in newaxes:
                full.append(1)
            else:
                full.append(shape[k])
                k += 1
        r = r._reshape(tuple(full))
    return r


# ---------------------------------------------------------------------------------------
# constructors
# ---------------------------------------------------------------------------------------


def _shape_arg(shape):
    if len(shape) == 1 and not isinstance(shape[0], _numbers.Integral):
        shape = tuple(shape[0])
    for s in shape:
        if not isinstance(s, _numbers.Integral):
            raise TypeError(f"argument 'shape': {s!r} is not an int")
    return tuple(int(s) for s in shape)


def array(obj, dtype=None, ctx=None, copy=True):
    """A new tensor with the values of obj (numpy array, list, scalar, kiln tensor,
    DLPack / CUDA-array-interface object). dtype: kiln dtype, numpy dtype or name.
    copy=False (kn.asarray): obj itself when it is a kiln tensor of that dtype, and a view of
    obj's memory, without a copy, when obj is a DLPack producer (numpy, PyTorch, CuPy) whose
    memory is where the context works and whose dtype kiln has (see from_dlpack)."""
    d = _to_dtype(dtype) if dtype is not None else None
    if _is_kiln(obj):
        v = _kiln.value(obj)
        if ctx is None or ctx is v.ctx:
            if not copy and (d is None or d.code == v._dtype):
                return v
            return v._copy(d.code if d else 0)
        obj = v.get()
    c = _ctx(ctx)
    if not copy and hasattr(obj, "__dlpack__"):
        w = _wrap_dlpack(obj, c)
        if not isinstance(w, str):
            return w if d is None or d.code == w._dtype else w._copy(d.code)
    if not isinstance(obj, _np.ndarray):
        if hasattr(obj, "__cuda_array_interface__") and c.device() == 2:
            return _from_device(obj, d, c)
        if hasattr(obj, "__dlpack__") and not hasattr(obj, "__array__"):
            obj = _np.from_dlpack(obj)
    a = _np.asarray(obj)
    if a.dtype == object:
        raise TypeError("argument 'obj': cannot make a kiln tensor from Python objects")
    src, sd = _np_src(a, d)
    if d is None:
        d = sd
    return _kiln.from_buffer(c, d.code, a.shape, src, sd.code)


def asarray(obj, dtype=None, ctx=None):
    """obj itself when it is a kiln tensor of that dtype, a view of obj's memory when it is
    a DLPack producer kiln can wrap (from_dlpack's rules), else array(obj, dtype)."""
    return array(obj, dtype=dtype, ctx=ctx, copy=False)


def empty(*shape, dtype=float32, ctx=None):
    return _kiln.empty(_ctx(ctx), _to_dtype(dtype).code, _shape_arg(shape))


def full(shape, fill_value, dtype=float32, ctx=None):
    if isinstance(shape, _numbers.Integral):
        shape = (shape,)
    return _kiln.empty(_ctx(ctx), _to_dtype(dtype).code, _shape_arg((shape,)), True, float(fill_value))


def zeros(*shape, dtype=float32, ctx=None):
    return _kiln.empty(_ctx(ctx), _to_dtype(dtype).code, _shape_arg(shape), True, 0.0)


def ones(*shape, dtype=float32, ctx=None):
    return _kiln.empty(_ctx(ctx), _to_dtype(dtype).code, _shape_arg(shape), True, 1.0)


def arange(start, stop=None, step=1, dtype=None, ctx=None):
    if stop is None:
        start, stop = 0, start
    if dtype is None:
        ints = builtin_all(isinstance(x, _numbers.Integral) for x in (start, stop, step))
        dtype = int32 if ints else float32
    return _kiln.arange(_ctx(ctx), _to_dtype(dtype).code, float(start), float(stop), float(step))


def _like(a, dtype, shape):
    d = _to_dtype(dtype) if dtype is not None else a.dtype
    s = a.shape if shape is None else shape
    return d, s, a.ctx


def empty_like(a, dtype=None, shape=None):
    d, s, c = _like(a, dtype, shape)
    return empty(s, dtype=d, ctx=c)


def zeros_like(a, dtype=None, shape=None):
    d, s, c = _like(a, dtype, shape)
    return zeros(s, dtype=d, ctx=c)


def ones_like(a, dtype=None, shape=None):
    d, s, c = _like(a, dtype, shape)
    return ones(s, dtype=d, ctx=c)


def full_like(a, fill_value, dtype=None, shape=None):
    d, s, c = _like(a, dtype, shape)
    return full(s, fill_value, dtype=d, ctx=c)


def _int_arg(v, argname, lo=None):
    """v as an int (TypeError for other types); lo: the smallest value allowed (ArgumentError)."""
    if not isinstance(v, _numbers.Integral):
        raise TypeError(f"argument '{argname}': {v!r} is not an int")
    v = int(v)
    if lo is not None and v < lo:
        raise ArgumentError(f"argument '{argname}': {v}; it must be >= {lo}")
    return v


def _diag_slice(rows, cols, k):
    """The slice of a row-major (rows, cols) matrix's flattened elements on diagonal k (0 the
    main one, > 0 above, < 0 below), or None where the diagonal is empty."""
    n = builtin_min(rows, cols - k) if k >= 0 else builtin_min(rows + k, cols)
    if n <= 0:
        return None
    start = k if k >= 0 else -k * cols
    return slice(start, start + (n - 1) * (cols + 1) + 1, cols + 1)


def eye(N, M=None, k=0, dtype=None, ctx=None):
    """A new (N, M) tensor (M = N when None) with ones on diagonal k (0 the main one, > 0 above,
    < 0 below) and zeros elsewhere; float32 unless dtype."""
    N = _int_arg(N, "N", 0)
    M = N if M is None else _int_arg(M, "M", 0)
    k = _int_arg(k, "k")
    t = zeros((N, M), dtype=float32 if dtype is None else dtype, ctx=ctx)
    sl = _diag_slice(N, M, k)
    if sl is not None:
        t.reshape(-1)[sl] = 1
    return t


def identity(n, dtype=None, ctx=None):
    """A new (n, n) identity matrix; float32 unless dtype."""
    return eye(_int_arg(n, "n", 0), dtype=dtype, ctx=ctx)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, ctx=None):
    """A new tensor of num evenly spaced values from start to stop (stop included when endpoint),
    computed in float64 as numpy does: arange(num) * step + start with step = (stop - start) / div,
    the last value exactly stop; integer dtypes take the floor. float32 unless dtype. retstep=True
    returns (tensor, step). Array-like start / stop (numpy's axis) are computed by numpy."""
    if not isinstance(num, _numbers.Integral):
        raise TypeError(f"argument 'num': {num!r} is not an int")
    num = int(num)
    if num < 0:
        raise ArgumentError(f"argument 'num': {num} samples; it must be >= 0")
    d = float32 if dtype is None else _to_dtype(dtype)
    for name, v in (("start", start), ("stop", stop)):
        if isinstance(v, complex) or (isinstance(v, (_np.generic, _np.ndarray)) and v.dtype.kind == "c"):
            raise TypeError(f"argument '{name}': {v!r} is complex; kiln has no complex dtype")
    if not (_scalar(start) and _scalar(stop)):
        y, step = _np.linspace(get(start), get(stop), num, endpoint, True, _np.float64, axis)
        t = array(_np.floor(y) if d.kind != "f" else y, dtype=d, ctx=ctx)
        return (t, array(step, dtype=float64, ctx=t.ctx)) if retstep else t
    c = _ctx(ctx)
    start, stop = float(start), float(stop)
    div = num - 1 if endpoint else num
    delta = stop - start
    y = _kiln.arange(c, float64.code, 0.0, float(num), 1.0)
    if div > 0:
        step = delta / div
        # numpy's rule for a step that underflows to 0: divide first, then scale
        e = (y / div) * delta + start if step == 0 else y * step + start
    else:
        step = _math.nan
        e = y * delta + start
    t = empty((num,), dtype=d, ctx=c)
    if num:
        t[...] = floor(e) if d.kind != "f" else e
        if endpoint and num > 1:
            t[-1] = float(_np.floor(stop)) if d.kind != "f" else stop
    return (t, step) if retstep else t


def rand(*shape, dtype=float32, ctx=None):
    """Uniform [0, 1). With a shape: a new tensor. Without: a lazy shapeless generator
    (`A[...] = kn.rand()` fills A, as in nervanagpu)."""
    if not shape:
        return _kiln.generator(0)
    t = empty(*shape, dtype=dtype, ctx=ctx)
    _kiln.assign(t, _gen(0, t))
    return t


def randn(*shape, dtype=float32, ctx=None):
    """Standard normal; like rand."""
    if not shape:
        return _kiln.generator(1)
    t = empty(*shape, dtype=dtype, ctx=ctx)
    _kiln.assign(t, _gen(1, t))
    return t


def _gen(kind, t):
    prev = _kiln.set_current(t.ctx)
    try:
        return _kiln.generator(kind)
    finally:
        _kiln.set_current(prev)


def bernoulli(p):
    """Lazy shapeless generator: 1 with probability p, else 0."""
    return _kiln.generator(2, float(p))


def dropout(x, p):
    """Inverted dropout: x * bernoulli(1-p) / (1-p)."""
    return _kiln.dropout(x, float(p))


# ---------------------------------------------------------------------------------------
# element-wise functions
# ---------------------------------------------------------------------------------------

(_B_ADD, _B_SUB, _B_MUL, _B_DIV, _B_POW, _B_MAXIMUM, _B_MINIMUM, _B_EQ, _B_NE, _B_LT, _B_LE, _B_GT,
 _B_GE, _B_FMOD) = range(14)
(_U_NEG, _U_ABS, _U_SQR, _U_SQRT, _U_RSQRT, _U_RECIPROCAL, _U_EXP, _U_EXP2, _U_LOG, _U_LOG2, _U_SIGMOID, _U_TANH,
 _U_RELU, _U_FINITE, _U_SIGN, _U_LOG1P, _U_EXPM1, _U_SIN, _U_COS, _U_ERF, _U_FLOOR, _U_CEIL, _U_RINT,
 _U_TRUNC) = range(24)
(_R_SUM, _R_MEAN, _R_MAX, _R_MIN, _R_VAR, _R_STD, _R_ARGMAX, _R_ARGMIN, _R_PROD) = range(9)


def _unary(op):
    def f(x):
        return _kiln.unary(op, x)
    return f


negative = _unary(_U_NEG)
absolute = abs_ = _unary(_U_ABS)
square = _unary(_U_SQR)
sqrt = _unary(_U_SQRT)
rsqrt = _unary(_U_RSQRT)
reciprocal = _unary(_U_RECIPROCAL)
exp = _unary(_U_EXP)
exp2 = _unary(_U_EXP2)
log = _unary(_U_LOG)
log2 = _unary(_U_LOG2)
sigmoid = logistic = _unary(_U_SIGMOID)
tanh = _unary(_U_TANH)
relu = _unary(_U_RELU)
isfinite = finite = _unary(_U_FINITE)
sign = _unary(_U_SIGN)
log1p = _unary(_U_LOG1P)
expm1 = _unary(_U_EXPM1)
sin = _unary(_U_SIN)
cos = _unary(_U_COS)
erf = _unary(_U_ERF)
floor = _unary(_U_FLOOR)
ceil = _unary(_U_CEIL)
rint = _unary(_U_RINT)
trunc = fix = _unary(_U_TRUNC)
for _n, _f in (("negative", negative), ("absolute", absolute), ("square", square), ("sqrt", sqrt),
               ("rsqrt", rsqrt), ("reciprocal", reciprocal), ("exp", exp), ("exp2", exp2), ("log", log),
               ("log2", log2), ("sigmoid", sigmoid), ("tanh", tanh), ("relu", relu), ("isfinite", isfinite),
               ("sign", sign), ("log1p", log1p), ("expm1", expm1), ("sin", sin), ("cos", cos), ("erf", erf),
               ("floor", floor), ("ceil", ceil), ("rint", rint), ("trunc", trunc)):
    _f.__name__ = _n
    _f.__doc__ = f"Lazy element-wise {_n}(x)."
floor.__doc__ += " Integer dtypes stay integer (as ceil, rint and trunc)."
rint.__doc__ += " To the nearest integer, ties to even (numpy's rint and round)."


def round(a, decimals=0):  # noqa: A001 - numpy's name
    """Lazy rounding to `decimals` decimal places, ties to even, as numpy's round: rint(a * 10**d) / 10**d.
    Integer tensors are returned as they are for decimals >= 0 and rounded to tens, hundreds, ... below."""
    if not isinstance(decimals, _numbers.Integral) or isinstance(decimals, bool):
        raise TypeError(f"argument 'decimals': an integer, not {type(decimals).__name__}")
    decimals = int(decimals)
    if not _is_kiln(a):
        a = array(a)
    if a.dtype.kind != "f":
        if decimals >= 0:
            return cast(a, a.dtype)
        scale = 10.0 ** -decimals
        return cast(rint(cast(a, float64) / scale) * scale, a.dtype)
    if decimals == 0:
        return rint(a)
    if _builtin_abs(decimals) > 400:
        raise ArgumentError(f"argument 'decimals': {decimals} is past any float's range")
    scale = 10.0 ** decimals if decimals > 0 else 10.0 ** -decimals
    return rint(a * scale) / scale if decimals > 0 else rint(a / scale) * scale


around = round


def softplus(x):
    """Lazy log(1 + exp(x)), without overflow for large x: relu(x) + log1p(exp(-|x|))."""
    return relu(x) + log1p(exp(-abs(x)))


def gelu(x, approximate=False):
    """Lazy GELU: x * Phi(x) with the exact erf form, or approximate=True: the tanh form
    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    if approximate:
        return 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * square(x))))
    return 0.5 * x * (1 + erf(x * 0.7071067811865476))


def _binary(op, name):
    def f(a, b):
        return _kiln.binary(op, a, b)
    f.__name__ = name
    f.__doc__ = f"Lazy element-wise {name}(a, b) with numpy broadcasting."
    return f


add = _binary(_B_ADD, "add")
subtract = _binary(_B_SUB, "subtract")
multiply = _binary(_B_MUL, "multiply")
power = _binary(_B_POW, "power")
maximum = _binary(_B_MAXIMUM, "maximum")
minimum = _binary(_B_MINIMUM, "minimum")
equal = _binary(_B_EQ, "equal")
not_equal = _binary(_B_NE, "not_equal")
less = _binary(_B_LT, "less")
less_equal = _binary(_B_LE, "less_equal")
greater = _binary(_B_GT, "greater")
greater_equal = _binary(_B_GE, "greater_equal")


def fmod(x1, x2):
    """Lazy C fmod(x1, x2) with numpy broadcasting: the exact remainder of x1 / x2 truncated
    toward zero, with x1's sign; NaN where x2 == 0 or x1 is infinite (0 in an integer dtype,
    as numpy). A Python float beside a float tensor is first rounded to the tensor's dtype,
    as numpy does (fmod of float16 x by 0.1 divides by float16(0.1))."""
    a, b, d = _operands(x1, x2, ("x1", "x2"))
    if d.kind == "f":
        a, b = (x if _is_kiln(x) else _scalar_in(x, d) for x in (a, b))
    return _kiln.binary(_B_FMOD, a, b)


def divide(a, b):
    """Lazy a / b with numpy broadcasting."""
    return _kiln.binary(_B_DIV, a, b)


true_divide = divide


def clip(a, a_min=None, a_max=None):
    """min(max(a, a_min), a_max), lazy; either bound may be None, a number or an array
    broadcast against a (numpy's)."""
    if (a_min is None or isinstance(a_min, _numbers.Real)) and (a_max is None or isinstance(a_max, _numbers.Real)):
        lo = -_math.inf if a_min is None else float(a_min)
        hi = _math.inf if a_max is None else float(a_max)
        return _kiln.clip(a, lo, hi)
    r = a if a_min is None else maximum(a, a_min)
    return r if a_max is None else minimum(r, a_max)


def where(condition, x, y):
    """x where condition != 0, else y."""
    return _kiln.where(condition, x, y)


def cast(x, dtype):
    """Lazy conversion of x to dtype."""
    return _kiln.cast(x, _to_dtype(dtype).code)


_builtin_abs = abs
builtin_sum = sum
builtin_max = max
builtin_min = min
builtin_any = any
builtin_all = all


def abs(x):  # noqa: A001 - numpy's name
    """Lazy |x| (Python's abs for other objects)."""
    if _is_kiln(x) or isinstance(x, _np.ndarray):
        return _kiln.unary(_U_ABS, x)
    return _builtin_abs(x)


def _scalar(x):
    """Whether x is a scalar operand (Python or numpy number, 0-d numpy array): weak in kiln's promotion."""
    if isinstance(x, _numbers.Real):
        return True
    return isinstance(x, (_np.generic, _np.ndarray)) and x.ndim == 0 and x.dtype.kind in "biuf"


def _kiln_arg(x, argname):
    """x as a kiln object: kiln objects as they are, anything else through kn.array."""
    if _is_kiln(x):
        return x
    try:
        return array(x)
    except TypeError as e:
        msg = str(e)
        if msg.startswith("argument 'obj': "):
            msg = msg[len("argument 'obj': "):]
        raise TypeError(f"argument '{argname}': {msg}") from None


def _operand(x, argname):
    """x as an operand of a binary function: kiln objects and scalars (weak) as they are, other
    array-likes as tensors."""
    return x if _scalar(x) else _kiln_arg(x, argname)


def _operands(x1, x2, names):
    """(x1, x2, kiln's promoted dtype) as operands; two scalars make x1 a tensor."""
    a, b = _operand(x1, names[0]), _operand(x2, names[1])
    if not _is_kiln(a) and not _is_kiln(b):
        a = array(a)
    if not _is_kiln(b):
        return a, b, a.dtype
    if not _is_kiln(a):
        return a, b, b.dtype
    return a, b, _promote(a.dtype, b.dtype)


def _as(x, d):
    """x in dtype d: x itself when it has it, else a lazy cast."""
    return x if x._dtype == d.code else _kiln.cast(x, d.code)


def _fwork(d, wide=False):
    """(result dtype, working dtype) of a float function of dtype d: integers give float32 (as
    kiln's log and sin do); 16-bit floats work in float32, float32 in float64 when wide."""
    r = d if d.kind == "f" else float32
    if r.itemsize == 2:
        return r, float32
    return r, (float64 if wide else r)


def _float_operand(x, wide=False):
    """(x in the working dtype, result dtype) for a float function of one argument."""
    t = _kiln_arg(x, "x")
    r, w = _fwork(t.dtype, wide)
    return _as(t, w), r


def _float_operands(x1, x2):
    """(x1, x2 in the working dtype, result dtype) for a float function of two arguments; a
    scalar becomes a 0-d tensor of the working dtype."""
    a, b, d = _operands(x1, x2, ("x1", "x2"))
    r, w = _fwork(d)
    c = (a if _is_kiln(a) else b).ctx
    a, b = (_as(x, w) if _is_kiln(x) else full((), float(x), dtype=w, ctx=c) for x in (a, b))
    return a, b, r


def isnan(x):
    """Lazy 1 where x is NaN, else 0, in x's dtype (as comparisons give; integers give 0)."""
    t = _kiln_arg(x, "x")
    return not_equal(t, t)


def isinf(x):
    """Lazy 1 where x is +inf or -inf, else 0, in x's dtype (integers give 0)."""
    t = _kiln_arg(x, "x")
    if t.dtype.kind != "f":
        return not_equal(t, t)
    return equal(abs(t), _math.inf)


_FLOAT_MAX = {"float32": float(_np.finfo(_np.float32).max), "float16": 65504.0,
              "bfloat16": (2 - 2.0 ** -7) * 2.0 ** 127, "float64": float(_np.finfo(_np.float64).max)}


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """Lazy x with NaN replaced by nan, +inf by posinf and -inf by neginf (None: the dtype's
    largest / smallest finite value); integer tensors come back unchanged. copy=False writes the
    result into x when x is a Tensor and returns x."""
    for name, v in (("nan", nan), ("posinf", posinf), ("neginf", neginf)):
        if v is not None and not _scalar(v):
            raise TypeError(f"argument '{name}': {v!r} is not a real number")
    t = _kiln_arg(x, "x")
    d = t.dtype
    if d.kind != "f":
        return t if not copy else _kiln.cast(t, d.code)
    hi = _FLOAT_MAX[d.name] if posinf is None else float(posinf)
    lo = -_FLOAT_MAX[d.name] if neginf is None else float(neginf)
    r = where(t != t, float(nan), where(t == _math.inf, hi, where(t == -_math.inf, lo, t)))
    if not copy and isinstance(t, _kiln.TensorBase):
        t[...] = r
        return t
    return r


_LOG10_2 = _math.log10(2.0)
_LN2 = _math.log(2.0)


def log10(x):
    """Lazy base-10 logarithm, log2(x) * log10(2), computed in float64 for float32 (so powers of
    10 give exact integers) and in float32 for 16-bit floats. Integers give float32."""
    t, r = _float_operand(x, wide=True)
    return _as(log2(t) * _LOG10_2, r)


def sinh(x):
    """Lazy hyperbolic sine: (expm1(x) - expm1(-x)) / 2 (no cancellation near 0) below |x| = 20,
    sign(x) * (h / 2) * h with h = exp(|x| / 2) from there (overflows only where sinh does).
    16-bit floats are computed in float32; integers give float32."""
    t, r = _float_operand(x)
    h = exp(0.5 * abs(t))
    return _as(where(abs(t) < 20, 0.5 * (expm1(t) - expm1(-t)), sign(t) * (0.5 * h) * h), r)


def cosh(x):
    """Lazy hyperbolic cosine: (exp(|x|) + exp(-|x|)) / 2 below |x| = 20, (h / 2) * h with
    h = exp(|x| / 2) from there (overflows only where cosh does). Integers give float32."""
    t, r = _float_operand(x)
    a = abs(t)
    h = exp(0.5 * a)
    return _as(where(a < 20, 0.5 * (exp(a) + exp(-a)), (0.5 * h) * h), r)


def logaddexp(x1, x2):
    """Lazy log(exp(x1) + exp(x2)) without overflow: max + log1p(exp(-|x1 - x2|)), and x1 + log(2)
    where x1 == x2 as numpy (so equal infinities give themselves). Integers give float32."""
    a, b, r = _float_operands(x1, x2)
    return _as(where(a == b, a + _LN2, maximum(a, b) + log1p(exp(-abs(a - b)))), r)


def hypot(x1, x2):
    """Lazy sqrt(x1**2 + x2**2) without overflow or underflow: the larger |x| times
    sqrt(1 + (smaller / larger)**2); 0 where both are 0, inf where either is inf (the other
    NaN too, as numpy). Integers give float32."""
    a, b, r = _float_operands(x1, x2)
    p, q = abs(a), abs(b)
    hi = maximum(p, q)
    t = minimum(p, q) / hi
    h = where(hi == 0, 0, hi * sqrt(1 + t * t))
    return _as(where(maximum(p == _math.inf, q == _math.inf), _math.inf, h), r)


def _int_divmod(a, b, d, remainder):
    """floor(a / b), or a - floor(a / b) * b, in float64 and 0 where b == 0, as dtype d (numpy's
    integer rules). Exact for integers of int32's range: the quotient's rounding never reaches
    the next integer, and q * b and the difference are exact."""
    x = _as(a, float64) if _is_kiln(a) else float(a)
    y = _as(b, float64) if _is_kiln(b) else float(b)
    q = floor(x / y)
    r = x - q * y if remainder else q
    if _is_kiln(y):
        r = where(y == 0, 0, r)
    elif y == 0:
        r = x * 0.0
    return _kiln.cast(r, d.code)


def _float_divmod(a, b, d, remainder):
    """numpy's float floor division or remainder (npy_divmod), lazily from the exact fmod:
    m = fmod(a, b) moved by b where its sign differs from b's; the quotient (a - m) / b,
    rounded to the nearer integer above its floor (so 1 // 0.1 is 9 as in numpy, where
    floor(1 / 0.1) is 10); a zero quotient takes a / b's sign, a zero remainder b's; b == 0
    gives a / b and NaN. Computed in d's compute type (16-bit floats in float32, as numpy)."""
    a, b = (_as(x, d) if _is_kiln(x) else _scalar_in(x, d) for x in (a, b))
    m = _kiln.binary(_B_FMOD, a, b)
    fix = sign(m) * (sign(b) if _is_kiln(b) else (b > 0) - (b < 0)) < 0    # (where() takes a bool too)
    if remainder:
        r = where(fix, m + b, m)
        return _as(where(r == 0, where(b < 0, -abs(r), abs(r)), r), d)
    q = (a - m) / b
    q = where(fix, q - 1, q)
    f = floor(q)
    f = where(q - f > 0.5, f + 1, f)
    return _as(where(b == 0, a / b, where(q == 0, (a / b) * 0, f)), d)


def _scalar_in(x, d):
    """A Python number as dtype d holds it (numpy converts a weak scalar to the array's dtype
    before its loop; kiln's own weak scalars stay in the compute type)."""
    x = float(x)
    if d.np is not None:
        return float(_np.asarray(x).astype(d.np))
    if d is bfloat16 and _math.isfinite(x):    # float32, then to nearest bfloat16, ties to even
        w = int(_np.float32(x).view(_np.uint32))
        w = ((w + 0x7FFF + ((w >> 16) & 1)) >> 16) << 16
        return float(_np.uint32(w & 0xFFFFFFFF).view(_np.float32))
    return x


def floor_divide(x1, x2):
    """x1 // x2 with numpy broadcasting, lazy. Integers: floor(x1 / x2), 0 where x2 == 0, as
    numpy's integer floor division; floats: numpy's fmod-based rule (which differs from
    floor(x1 / x2) where x1 / x2 rounds up to an integer: 1 // 0.1 is 9)."""
    a, b, d = _operands(x1, x2, ("x1", "x2"))
    if d.kind != "f":
        return _int_divmod(a, b, d, False)
    return _float_divmod(a, b, d, False)


def mod(x1, x2):
    """x1 % x2 with numpy broadcasting, lazy, the sign of x2's. Integers: x1 - floor_divide(x1,
    x2) * x2, 0 where x2 == 0; floats: numpy's fmod-based rule (exact; a zero result takes
    x2's sign, NaN where x2 == 0)."""
    a, b, d = _operands(x1, x2, ("x1", "x2"))
    if d.kind != "f":
        return _int_divmod(a, b, d, True)
    return _float_divmod(a, b, d, True)


remainder = mod


# ---------------------------------------------------------------------------------------
# reductions (numpy's rules: axis None = all, int or tuple; keepdims False)
# ---------------------------------------------------------------------------------------


def _axes(axis):
    if axis is None:
        return None
    if type(axis) is int:  # the common case, before the slower abstract-class check
        return (axis,)
    if isinstance(axis, _numbers.Integral):
        return (int(axis),)
    if isinstance(axis, (str, bytes)):
        raise TypeError(f"argument 'axis': {axis!r} is not None, an int or a tuple of ints")
    try:
        axes = tuple(axis)
    except TypeError:
        raise TypeError(f"argument 'axis': {axis!r} is not None, an int or a tuple of ints") from None
    for a in axes:  # numpy takes integers only: (1.5,) is an error, not axis 1
        if not isinstance(a, _numbers.Integral) or isinstance(a, bool):
            raise TypeError(f"argument 'axis': {a!r} in {axis!r} is not an int")
    return tuple(int(a) for a in axes)


# numpy widens integer sums (to the platform int; kiln's widest int is int32) and computes
# integer means, variances and deviations in float64.
_WIDEN = {_R_SUM: int32, _R_PROD: int32, _R_MEAN: float64, _R_VAR: float64, _R_STD: float64}
_NO_IDENTITY = frozenset((_R_MAX, _R_MIN, _R_ARGMAX, _R_ARGMIN))


def _reduce(op, a, axis, keepdims):
    axes = _axes(axis)
    if axes == ():
        return a if _is_kiln(a) else array(a)
    if not _is_kiln(a):
        a = array(a)
    if op in _NO_IDENTITY and a.size == 0:
        shape = a.shape
        red = range(len(shape)) if axes is None else axes
        if builtin_any(shape[ax] == 0 for ax in red if -len(shape) <= ax < len(shape)):
            raise ArgumentError(f"argument 'a': zero-size reduction over axis {axis} of a {shape} tensor has "
                                "no identity (numpy raises here too)")
    w = _WIDEN.get(op)
    if w is not None and a._dtype in _INT_CODES and a._dtype != w.code:
        a = _kiln.cast(a, w.code)
    return _kiln.reduce(op, a, axes, bool(keepdims))


def sum(a, axis=None, dtype=None, keepdims=False):  # noqa: A001
    r = _reduce(_R_SUM, a, axis, keepdims)
    return r if dtype is None else cast(r, dtype)


def prod(a, axis=None, dtype=None, keepdims=False):
    """Product over axis (None: all); 1 over no elements. Integer products are int32 and
    saturate where numpy's wrap."""
    r = _reduce(_R_PROD, a, axis, keepdims)
    return r if dtype is None else cast(r, dtype)


def mean(a, axis=None, dtype=None, keepdims=False):
    r = _reduce(_R_MEAN, a, axis, keepdims)
    return r if dtype is None else cast(r, dtype)


def _ddof_scale(a, axis, ddof):
    shape = a.shape
    axes = range(len(shape)) if axis is None else _axes(axis)
    n = 1
    for ax in axes:
        n *= shape[ax]
    return n / builtin_max(n - ddof, 0) if n - ddof > 0 else _math.inf


def var(a, axis=None, dtype=None, keepdims=False, ddof=0):
    if not _is_kiln(a):
        a = array(a)
    r = _reduce(_R_VAR, a, axis, keepdims)
    if ddof:
        r = r * _ddof_scale(a, axis, ddof)
    return r if dtype is None else cast(r, dtype)


def std(a, axis=None, dtype=None, keepdims=False, ddof=0):
    if not _is_kiln(a):
        a = array(a)
    if ddof:
        r = sqrt(var(a, axis, keepdims=keepdims, ddof=ddof))
    else:
        r = _reduce(_R_STD, a, axis, keepdims)
    return r if dtype is None else cast(r, dtype)


def max(a, axis=None, keepdims=False):  # noqa: A001
    return _reduce(_R_MAX, a, axis, keepdims)


def min(a, axis=None, keepdims=False):  # noqa: A001
    return _reduce(_R_MIN, a, axis, keepdims)


amax, amin = max, min


def any(a, axis=None, keepdims=False):  # noqa: A001
    """1 where some element along the axes is non-zero (NaN counts), else 0 (float32, as comparisons give);
    an empty reduction gives 0."""
    if not _is_kiln(a):
        a = array(a)
    return sum(not_equal(a, 0), axis, keepdims=keepdims) > 0


def all(a, axis=None, keepdims=False):  # noqa: A001
    """1 where every element along the axes is non-zero (NaN counts), else 0; an empty reduction gives 1."""
    if not _is_kiln(a):
        a = array(a)
    return sum(equal(a, 0), axis, keepdims=keepdims) == 0


def argmax(a, axis=None, keepdims=False):
    """Index of the first maximum (int32); axis None: into the flattened array."""
    return _reduce(_R_ARGMAX, a, axis, keepdims)


def argmin(a, axis=None, keepdims=False):
    return _reduce(_R_ARGMIN, a, axis, keepdims)


def count_nonzero(a, axis=None, keepdims=False):
    """Lazy number of non-zero elements (NaN counts) along axis (None: all), int32."""
    t = _kiln_arg(a, "a")
    return sum(_kiln.cast(not_equal(t, 0), int32.code), axis, keepdims=keepdims)


def _truth(x, argname):
    """x != 0 lazily (NaN counts as true) in x's dtype, or 1 / 0 for a Python scalar."""
    x = _operand(x, argname)
    return not_equal(x, 0) if _is_kiln(x) else (1 if x else 0)


def _logical(x1, x2, combine):
    a, b = _truth(x1, "x1"), _truth(x2, "x2")
    if not _is_kiln(a) and not _is_kiln(b):
        a = array(a)
    return combine(a, b)


def logical_and(x1, x2):
    """Lazy 1 where x1 and x2 are both non-zero (NaN counts as non-zero), else 0; 0/1 in the
    promoted dtype, as comparisons give (kiln has no bool)."""
    return _logical(x1, x2, multiply)


def logical_or(x1, x2):
    """Lazy 1 where x1 or x2 is non-zero (NaN counts as non-zero), else 0, in the promoted dtype."""
    return _logical(x1, x2, maximum)


def logical_xor(x1, x2):
    """Lazy 1 where exactly one of x1 and x2 is non-zero, else 0, in the promoted dtype."""
    return _logical(x1, x2, not_equal)


def logical_not(x):
    """Lazy 1 where x is zero, else 0 (NaN counts as non-zero), in x's dtype."""
    return equal(_kiln_arg(x, "x"), 0)


def _tol_arg(v, argname):
    if _scalar(v):
        return float(v)
    return _kiln_arg(v, argname)


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Lazy 1 where |a - b| <= atol + rtol * |b| (numpy's test, not symmetric in a and b), else 0;
    an infinity is close only to itself, NaN to NaN only with equal_nan. 0/1 in the promoted
    dtype, as comparisons give; integers are compared in float64, as numpy does."""
    x, y, d = _operands(a, b, ("a", "b"))
    rt, at = _tol_arg(rtol, "rtol"), _tol_arg(atol, "atol")
    w = d if d.kind == "f" else float64
    c = (x if _is_kiln(x) else y).ctx
    x, y = (_as(v, w) if _is_kiln(v) else full((), float(v), dtype=w, ctx=c) for v in (x, y))
    within = less_equal(abs(x - y), at + rt * abs(y))
    r = where(isfinite(x) * isfinite(y), within, equal(x, y))
    if equal_nan:
        r = where(not_equal(x, x) * not_equal(y, y), 1, r)
    return _as(r, d)


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether every element of isclose(a, b, ...) is 1, as a Python bool (evaluated now)."""
    return bool(all(isclose(a, b, rtol, atol, equal_nan)))


def array_equal(a1, a2, equal_nan=False):
    """Whether a1 and a2 have one shape and equal elements (NaN equals NaN only with equal_nan),
    as a Python bool (evaluated now); different shapes give False, without broadcasting."""
    x, y = _kiln_arg(a1, "a1"), _kiln_arg(a2, "a2")
    if tuple(x.shape) != tuple(y.shape):
        return False
    eq = equal(x, y)
    if equal_nan:
        eq = maximum(eq, not_equal(x, x) * not_equal(y, y))
    return bool(all(eq))


# ---------------------------------------------------------------------------------------
# dot
# ---------------------------------------------------------------------------------------


def _promote(a, b):
    """numpy-like promotion of two kiln dtypes (the rule of the C library)."""
    if a is b:
        return a
    fa, fb = a.kind == "f", b.kind == "f"
    if fa != fb:
        return a if fa else b
    if a.itemsize == b.itemsize:
        return float32 if fa else int32
    return a if a.itemsize > b.itemsize else b


def dot(a, b, out=None, alpha=1.0, beta=0.0, relu=False, bias=None, bias_rows=False, stats=None):
    """out = relu?(alpha * a @ b + bias) + beta * out, numpy's matmul shapes (1-D operands
    are vectors, leading axes are batches). Lazy operands are evaluated first. Both
    operands (and out, bias) are brought to one dtype; integers are multiplied in float64.
    bias is one value per column (N,), or per row (M,) with bias_rows=True. stats, a
    float32/float64 kiln tensor of shape (2,), receives [largest |x| over the finite
    elements, number of non-finite elements] of the product (in the computation dtype)."""
    A = a if isinstance(a, _kiln.TensorBase) else (_kiln.value(a) if _is_kiln(a) else array(a))
    B = b if isinstance(b, _kiln.TensorBase) else (_kiln.value(b) if _is_kiln(b) else array(b))
    if A.ndim == 0 or B.ndim == 0:
        raise ValueError("arguments 'a', 'b': dot of a 0-d tensor (use *)")
    va, vb = A.ndim == 1, B.ndim == 1
    if va:
        A = A._reshape((1, A.shape[0]))
    if vb:
        B = B._reshape((B.shape[0], 1))
    if A.shape[-1] != B.shape[-2]:
        raise ShapeError(f"arguments 'a', 'b': shapes {a.shape} and {b.shape} do not match "
                         f"(a has {A.shape[-1]} columns, b has {B.shape[-2]} rows)")
    ash, bsh = A.shape, B.shape
    if len(ash) == 2 and len(bsh) == 2:  # the common case, without numpy's shape machinery
        batch = ()
    else:
        try:
            batch = _np.broadcast_shapes(ash[:-2], bsh[:-2])
        except ValueError:
            raise ShapeError(f"arguments 'a', 'b': batch axes {ash[:-2]} and {bsh[:-2]} do not broadcast") \
                from None
    rshape = tuple(batch) + (ash[-2], bsh[-1])
    d = _promote(A.dtype, B.dtype)
    cd = d if d.kind == "f" else float64
    if out is not None:
        if not isinstance(out, _kiln.TensorBase):
            raise TypeError(f"argument 'out': expected a kiln Tensor, got {type(out).__name__}")
        if out.dtype.kind == "f":
            cd = out.dtype
    if A.dtype is not cd:
        A = A._copy(cd.code)
    if B.dtype is not cd:
        B = B._copy(cd.code)
    if bias is not None:
        bias = asarray(bias, dtype=cd, ctx=A.ctx)
    final_shape = rshape
    if va:
        final_shape = final_shape[:-2] + final_shape[-1:]
    if vb:
        final_shape = final_shape[:-1]
    if out is not None:
        if tuple(out.shape) != final_shape:
            raise ShapeError(f"argument 'out': shape {out.shape}, the product is {final_shape}")
        C = out._reshape(rshape) if (va or vb) else out
        if C.dtype is cd:
            _kiln.dot(C, A, B, float(alpha), float(beta), bool(relu), bias, False, False, bool(bias_rows), stats)
            return out
        tmp = C._copy(cd.code) if beta else _kiln.empty(A.ctx, cd.code, rshape)
        _kiln.dot(tmp, A, B, float(alpha), float(beta), bool(relu), bias, False, False, bool(bias_rows), stats)
        _kiln.assign(C, tmp)
        return out
    C = _kiln.empty(A.ctx, cd.code, rshape)
    _kiln.dot(C, A, B, float(alpha), 0.0, bool(relu), bias, False, False, bool(bias_rows), stats)
    if cd is not d:
        C = C._copy(d.code)
    if va or vb:
        C = C._reshape(final_shape)
    return C


matmul = dot


# ---------------------------------------------------------------------------------------
# shape functions
# ---------------------------------------------------------------------------------------


def reshape(a, shape):
    return asarray(a).reshape(shape)


def broadcast_to(a, shape):
    """A view of a broadcast to shape (numpy's rules; no copy), not writable while it has a
    stride 0 on an axis longer than 1."""
    return asarray(a).broadcast_to(shape)


def broadcast_arrays(*args):
    """Views of every argument broadcast to their common shape (numpy's rules; no copies), as a
    tuple, as numpy 2 returns them."""
    vals = [_kiln.value(_kiln_arg(x, f"args[{i}]")) for i, x in enumerate(args)]
    try:
        shape = _np.broadcast_shapes(*(tuple(x.shape) for x in vals))
    except ValueError:
        raise ShapeError("argument 'args': shapes " + ", ".join(str(tuple(x.shape)) for x in vals)
                         + " do not broadcast together") from None
    return tuple(x.broadcast_to(shape) for x in vals)


def transpose(a, axes=None):
    return asarray(a).transpose(axes) if axes is not None else asarray(a).T


def expand_dims(a, axis):
    """A view of a with new axes of size 1 at `axis` (an int or a tuple of ints: positions in
    the result, as numpy's)."""
    v = _kiln.value(asarray(a))
    axes = _axes(axis)
    nd = v.ndim + len(axes)
    for ax in axes:
        if not -nd <= ax < nd:
            raise ShapeError(f"argument 'axis': {ax} is out of range for the result's {nd} axes")
    new = sorted(ax % nd for ax in axes)
    if len(set(new)) != len(new):
        raise ArgumentError(f"argument 'axis': {axis!r} repeats an axis")
    return v[tuple(None if k in new else slice(None) for k in range(nd))]


def squeeze(a, axis=None):
    v = _kiln.value(asarray(a))
    asked = () if axis is None else _axes(axis)
    for ax in asked:
        if not -v.ndim <= ax < v.ndim:
            raise ShapeError(f"argument 'axis': {ax} is out of range for {v.ndim} axes")
    axes = range(v.ndim) if axis is None else [ax % v.ndim for ax in asked]
    for ax in axes:
        if axis is not None and v.shape[ax] != 1:
            raise ShapeError(f"argument 'axis': axis {ax} has size {v.shape[ax]}, not 1")
    idx = tuple(0 if (ax in axes and v.shape[ax] == 1) else slice(None) for ax in range(v.ndim))
    return v[idx]


def concatenate(arrays, axis=0, out=None):
    """A new tensor of the arrays joined along axis (each one assigned into its slice); axis
    None joins them flattened, as numpy's."""
    parts = [asarray(a) for a in arrays]
    if not parts:
        raise ArgumentError("argument 'arrays': needs at least one array")
    if axis is None:
        parts, axis = [ravel(p) for p in parts], 0
    elif not isinstance(axis, _numbers.Integral) or isinstance(axis, bool):
        raise TypeError(f"argument 'axis': {axis!r} is not None or an int")
    nd = parts[0].ndim
    if nd == 0:
        raise ShapeError("argument 'arrays': zero-dimensional arrays cannot be concatenated")
    if not -nd <= axis < nd:
        raise ShapeError(f"argument 'axis': {axis} is out of range for {nd} axes")
    axis %= nd
    shape = list(parts[0].shape)
    for i, p in enumerate(parts[1:], 1):
        if p.ndim != nd or builtin_any(p.shape[k] != shape[k] for k in range(nd) if k != axis):
            raise ShapeError(f"argument 'arrays': array {i} has shape {p.shape}, array 0 {tuple(shape)} "
                             f"(all axes but {axis} must match)")
    shape[axis] = builtin_sum(p.shape[axis] for p in parts)
    d = parts[0].dtype
    for p in parts[1:]:
        d = _promote(d, p.dtype)
    if out is None:
        out = empty(tuple(shape), dtype=d, ctx=_kiln.value(parts[0]).ctx)
    elif tuple(out.shape) != tuple(shape):
        raise ShapeError(f"argument 'out': shape {out.shape}, the result is {tuple(shape)}")
    start = 0
    for p in parts:
        n = p.shape[axis]
        out[(slice(None),) * axis + (slice(start, start + n),)] = p
        start += n
    return out


def stack(arrays, axis=0):
    parts = [asarray(a) for a in arrays]
    if not parts:
        raise ArgumentError("argument 'arrays': needs at least one array")
    for i, p in enumerate(parts[1:], 1):
        if p.shape != parts[0].shape:
            raise ShapeError(f"argument 'arrays': array {i} has shape {p.shape}, array 0 {parts[0].shape} "
                             "(stack needs one shape)")
    return concatenate([expand_dims(p, axis) for p in parts], axis=axis)


def _axis_arg(axis, nd, argname="axis"):
    """axis as an index in 0..nd-1 (negative ones count from the end)."""
    if not isinstance(axis, _numbers.Integral):
        raise TypeError(f"argument '{argname}': {axis!r} is not an int")
    if not -nd <= axis < nd:
        raise ShapeError(f"argument '{argname}': {axis} is out of range for {nd} axes")
    return int(axis) % nd


def flip(m, axis=None):
    """A view of m with the elements' order reversed along axis (None: every axis; int or tuple)."""
    v = _kiln.value(_kiln_arg(m, "m"))
    nd = v.ndim
    if axis is None:
        axes = set(range(nd))
    else:
        axes = set()
        for ax in _axes(axis):
            a = _axis_arg(ax, nd)
            if a in axes:
                raise ShapeError(f"argument 'axis': axis {ax} is given twice")
            axes.add(a)
    return v[tuple(slice(None, None, -1) if i in axes else slice(None) for i in range(nd))]


def _int_tuple(x, argname):
    """x, an int or a sequence of ints, as a tuple (TypeError naming argname otherwise)."""
    try:
        tup = (x,) if isinstance(x, _numbers.Integral) else tuple(x)
    except TypeError:
        raise TypeError(f"argument '{argname}': {x!r} is not an int or a sequence of ints") from None
    return tuple(_int_arg(v, argname) for v in tup)


def roll(a, shift, axis=None):
    """A new tensor of a with its elements shifted by `shift` places along axis (numpy's rules:
    elements that leave one end come back at the other; shift and axis ints or tuples that
    broadcast together, an axis given twice shifts by the sum; axis None rolls the flattened a
    and keeps its shape)."""
    v = _kiln.value(_kiln_arg(a, "a"))
    if axis is None:
        return roll(v.reshape(-1), shift, 0).reshape(v.shape)
    shifts, axes_in = (_int_tuple(x, name) for x, name in ((shift, "shift"), (axis, "axis")))
    if len(shifts) != len(axes_in) and 1 not in (len(shifts), len(axes_in)):
        raise ShapeError(f"argument 'shift': {len(shifts)} shifts do not broadcast against "
                         f"{len(axes_in)} axes")
    n = builtin_max(len(shifts), len(axes_in))
    shifts, axes_in = shifts * (n // len(shifts)), axes_in * (n // len(axes_in))
    total = [0] * v.ndim
    for s, ax in zip(shifts, axes_in):
        total[_axis_arg(ax, v.ndim)] += s
    out = empty(tuple(v.shape), dtype=v.dtype, ctx=v.ctx)
    if out.size == 0:
        return out
    # each axis in one piece (no shift) or two: out[s:] takes v[:n - s], out[:s] takes v[n - s:]
    pieces = []
    for size, s in zip(v.shape, total):
        s %= size
        pieces.append([(slice(None), slice(None))] if s == 0 else
                      [(slice(s, None), slice(None, size - s)), (slice(None, s), slice(size - s, None))])
    for combo in _itertools.product(*pieces):
        _kiln.assign(out[tuple(d for d, _ in combo)], v[tuple(r for _, r in combo)])
    return out


def fliplr(m):
    """A view of m with the columns (axis 1) in reverse order; m needs 2 axes or more."""
    v = _kiln.value(_kiln_arg(m, "m"))
    if v.ndim < 2:
        raise ShapeError(f"argument 'm': fliplr needs at least 2 axes, m has {v.ndim}")
    return v[:, ::-1]


def flipud(m):
    """A view of m with the rows (axis 0) in reverse order; m needs 1 axis or more."""
    v = _kiln.value(_kiln_arg(m, "m"))
    if v.ndim < 1:
        raise ShapeError("argument 'm': flipud needs at least 1 axis, m is 0-d")
    return v[::-1]


def _axis_in(ax, nd, argname):
    """An int axis of an nd-axis tensor, made non-negative; errors name the argument."""
    if not isinstance(ax, _numbers.Integral) or isinstance(ax, bool):
        raise TypeError(f"argument '{argname}': {ax!r} is not an int")
    if not -nd <= ax < nd:
        raise ShapeError(f"argument '{argname}': {ax} is out of range for {nd} axes")
    return int(ax) % nd


def swapaxes(a, axis1, axis2):
    """A view of a with axes axis1 and axis2 exchanged."""
    v = _kiln.value(_kiln_arg(a, "a"))
    i, j = _axis_in(axis1, v.ndim, "axis1"), _axis_in(axis2, v.ndim, "axis2")
    axes = list(range(v.ndim))
    axes[i], axes[j] = j, i
    return v._permute(axes)


def moveaxis(a, source, destination):
    """A view of a with the axes `source` (an int or a sequence) moved to the positions
    `destination`, the others keeping their order (numpy's)."""
    v = _kiln.value(_kiln_arg(a, "a"))
    nd = v.ndim
    src = [_axis_in(x, nd, "source") for x in (source if isinstance(source, (tuple, list)) else (source,))]
    dst = [_axis_in(x, nd, "destination") for x in (destination if isinstance(destination, (tuple, list))
                                                       else (destination,))]
    if len(src) != len(dst):
        raise ArgumentError(f"argument 'destination': {len(dst)} axes for {len(src)} in 'source'")
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ArgumentError(f"argument 'source' / 'destination': an axis repeats ({source!r}, {destination!r})")
    order = [k for k in range(nd) if k not in src]
    for d, k in sorted(zip(dst, src)):
        order.insert(d, k)
    return v._permute(order)


def copy(a):
    """A new tensor with a's values (an Expr is evaluated)."""
    return _kiln.value(_kiln_arg(a, "a")).copy()


def diff(a, n=1, axis=-1):
    """Lazy n-th difference along axis (numpy's): out[i] = a[i + 1] - a[i], n times; integers
    stay integers (saturating, as kiln's stores)."""
    if not isinstance(n, _numbers.Integral) or isinstance(n, bool) or n < 0:
        raise ArgumentError(f"argument 'n': the order must be an int >= 0, got {n!r}")
    v = _kiln.value(_kiln_arg(a, "a"))
    if v.ndim == 0:
        raise ShapeError("argument 'a': diff needs at least one axis")
    ax = _axis_in(axis, v.ndim, "axis")
    out = v
    for _ in range(int(n)):
        out = _kiln.value(out)     # the previous order's difference, evaluated, to slice
        hi = (slice(None),) * ax + (slice(1, None),)
        lo = (slice(None),) * ax + (slice(None, -1),)
        out = out[hi] - out[lo]
    return out


def _atleast(arys, nd):
    out = []
    for i, a in enumerate(arys):
        v = _kiln.value(_kiln_arg(a, f"arys[{i}]"))
        if v.ndim < nd:
            if nd == 3 and v.ndim == 2:
                v = v[:, :, None]
            elif nd == 3 and v.ndim == 1:
                v = v[None, :, None]
            else:
                v = v[(None,) * (nd - v.ndim)]
        out.append(v)
    return out[0] if len(out) == 1 else out


def atleast_1d(*arys):
    """Views with at least 1 axis (a scalar becomes shape (1,)); one array or a list, as numpy."""
    return _atleast(arys, 1)


def atleast_2d(*arys):
    """Views with at least 2 axes ((N,) becomes (1, N))."""
    return _atleast(arys, 2)


def atleast_3d(*arys):
    """Views with at least 3 axes ((N,) becomes (1, N, 1), (M, N) becomes (M, N, 1))."""
    return _atleast(arys, 3)


def softmax(x, axis=None):
    """Lazy exp(x - max(x)) / sum(exp(x - max(x))) over axis (None: all; scipy.special's
    softmax), one fused plan with the max and the sum broadcast back; integers give float32."""
    t, r = _float_operand(x)
    e = exp(t - max(t, axis=axis, keepdims=True))
    return _as(e / sum(e, axis=axis, keepdims=True), r)


def log_softmax(x, axis=None):
    """Lazy x - max(x) - log(sum(exp(x - max(x)))) over axis (None: all), without overflow;
    integers give float32."""
    t, r = _float_operand(x)
    s = t - max(t, axis=axis, keepdims=True)
    return _as(s - log(sum(exp(s), axis=axis, keepdims=True)), r)


def tensordot(a, b, axes=2):
    """Sum of products over the axes `axes` names (numpy's: an int N, a's last N with b's first
    N, or a pair of axis lists), by kiln's matrix product: the free axes of a, then those of b."""
    A, B = _kiln.value(_kiln_arg(a, "a")), _kiln.value(_kiln_arg(b, "b"))
    if isinstance(axes, _numbers.Integral) and not isinstance(axes, bool):
        if not 0 <= axes <= builtin_min(A.ndim, B.ndim):
            raise ShapeError(f"argument 'axes': {axes} axes to contract, a has {A.ndim} and b {B.ndim}")
        ax_a, ax_b = list(range(A.ndim - int(axes), A.ndim)), list(range(int(axes)))
    else:
        try:
            xa, xb = axes
        except (TypeError, ValueError):
            raise TypeError(f"argument 'axes': {axes!r} is not an int or a pair of axis lists") from None
        xa = list(xa) if isinstance(xa, (tuple, list)) else [xa]
        xb = list(xb) if isinstance(xb, (tuple, list)) else [xb]
        if len(xa) != len(xb):
            raise ShapeError(f"argument 'axes': {len(xa)} axes of a against {len(xb)} of b")
        ax_a = [_axis_in(x, A.ndim, "axes") for x in xa]
        ax_b = [_axis_in(x, B.ndim, "axes") for x in xb]
        if len(set(ax_a)) != len(ax_a) or len(set(ax_b)) != len(ax_b):
            raise ArgumentError(f"argument 'axes': {axes!r} repeats an axis")
    for i, j in zip(ax_a, ax_b):
        if A.shape[i] != B.shape[j]:
            raise ShapeError(f"argument 'axes': a's axis {i} has {A.shape[i]} elements, b's axis {j} {B.shape[j]}")
    free_a = [k for k in range(A.ndim) if k not in ax_a]
    free_b = [k for k in range(B.ndim) if k not in ax_b]
    k = _math.prod(A.shape[i] for i in ax_a)
    shape_a, shape_b = [A.shape[i] for i in free_a], [B.shape[j] for j in free_b]
    A2 = A._permute(free_a + ax_a).reshape(_math.prod(shape_a), k)
    B2 = B._permute(ax_b + free_b).reshape(k, _math.prod(shape_b))
    return dot(A2, B2).reshape(tuple(shape_a + shape_b))


def inner(a, b):
    """numpy's inner product: the sum of products over the last axes (a * b for a 0-d one)."""
    A, B = _kiln.value(_kiln_arg(a, "a")), _kiln.value(_kiln_arg(b, "b"))
    if A.ndim == 0 or B.ndim == 0:
        return A * B
    return tensordot(A, B, ([A.ndim - 1], [B.ndim - 1]))


def _pad_pairs(pad_width, nd):
    """numpy's pad_width forms (N, (N,), (b, a), ((b0, a0), ...)) as nd (before, after) pairs."""
    w = _np.asarray(pad_width)
    if w.dtype.kind not in "iu" or (w.size and (w < 0).any()):
        raise ArgumentError(f"argument 'pad_width': {pad_width!r} is not non-negative ints")
    try:
        w = _np.broadcast_to(w, (nd, 2))
    except ValueError:
        raise ShapeError(f"argument 'pad_width': {pad_width!r} does not fit {nd} axes") from None
    return [(int(b), int(e)) for b, e in w]


def pad(array, pad_width, mode="constant", constant_values=0):
    """A new tensor of `array` with pad_width elements before and after each axis (numpy's
    forms): mode 'constant' fills them with constant_values (a number), 'edge' repeats the edge
    values. Other modes go through numpy when called as np.pad."""
    v = _kiln.value(_kiln_arg(array, "array"))
    if mode not in ("constant", "edge"):
        raise ArgumentError(f"argument 'mode': {mode!r} is not 'constant' or 'edge' (kiln's pad)")
    pairs = _pad_pairs(pad_width, v.ndim)
    shape = tuple(n + b + e for n, (b, e) in zip(v.shape, pairs))
    if mode == "edge" and builtin_any(n == 0 and b + e > 0 for n, (b, e) in zip(v.shape, pairs)):
        raise ShapeError("argument 'array': 'edge' padding of an empty axis")
    if mode == "constant":
        if not isinstance(constant_values, _numbers.Real):
            raise TypeError(f"argument 'constant_values': {constant_values!r} is not a number (kiln's pad)")
        out = full(shape, constant_values, dtype=v.dtype, ctx=v.ctx)
    else:
        out = empty(shape, dtype=v.dtype, ctx=v.ctx)
    inner = tuple(slice(b, b + n) for n, (b, e) in zip(v.shape, pairs))
    out[inner] = v
    if mode == "edge":                       # axis by axis, the corners from the axes before
        for k, (n, (b, e)) in enumerate(zip(v.shape, pairs)):
            lead = tuple(slice(None) for _ in range(k))
            if b:
                out[lead + (slice(0, b),)] = out[lead + (slice(b, b + 1),)]
            if e:
                out[lead + (slice(b + n, b + n + e),)] = out[lead + (slice(b + n - 1, b + n),)]
    return out


def meshgrid(*xi, indexing="xy", sparse=False):
    """numpy's meshgrid of 1-D arrays: broadcast views (not writable), or with sparse=True
    views of size 1 but along their own axis; indexing 'xy' puts the first array along axis 1
    and the second along axis 0."""
    if indexing not in ("xy", "ij"):
        raise ArgumentError(f"argument 'indexing': {indexing!r} is not 'xy' or 'ij'")
    vs = [ravel(_kiln_arg(x, f"xi[{i}]")) for i, x in enumerate(xi)]
    nd = len(vs)
    swap = indexing == "xy" and nd > 1
    shape = [v.shape[0] for v in vs]
    if swap:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, v in enumerate(vs):
        pos = 1 - i if swap and i < 2 else i
        g = v[tuple(slice(None) if k == pos else None for k in range(nd))]
        out.append(g if sparse else g.broadcast_to(tuple(shape)))
    return tuple(out)


def take(a, indices, axis=None):
    """A new tensor of a's elements at `indices` (ints, any shape) along axis (None: of a
    flattened), numpy's; out-of-range indices raise naming 'indices'."""
    v = _kiln.value(_kiln_arg(a, "a"))
    if axis is None:
        v, ax = ravel(v), 0
    else:
        ax = _axis_in(axis, v.ndim, "axis")
    idx = _np.asarray(indices.get() if _is_kiln(indices) else indices)
    if idx.size == 0:                            # [] reads as float64
        idx = idx.astype(_np.int64)
    if idx.dtype.kind not in "iu":
        raise TypeError(f"argument 'indices': integers needed, got {idx.dtype}")
    n = v.shape[ax]
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise BoundsError(f"argument 'indices': an index is out of range for {n} elements along axis {ax}")
    flat = idx.reshape(-1) % n if n else idx.reshape(-1)
    picked = v[(slice(None),) * ax + (flat,)]
    return picked.reshape(v.shape[:ax] + idx.shape + v.shape[ax + 1:])


def ravel(a):
    """a as 1-D: a view where the layout allows, else a copy (numpy's rule)."""
    return _kiln.value(_kiln_arg(a, "a")).reshape(-1)


def _array_list(tup, argname):
    """The arrays of a sequence (a kiln tensor's rows too) as kiln values; at least one."""
    if _is_kiln(tup):
        parts = list(_kiln.value(tup))
    else:
        try:
            parts = list(tup)
        except TypeError:
            raise TypeError(f"argument '{argname}': {type(tup).__name__} is not a sequence of arrays") from None
    if not parts:
        raise ArgumentError(f"argument '{argname}': needs at least one array")
    return [_kiln.value(_kiln_arg(p, argname)) for p in parts]


def vstack(tup):
    """A new tensor of the arrays stacked along axis 0; 1-D arrays (N,) become rows (1, N)."""
    parts = [p.reshape((1, 1)) if p.ndim == 0 else (p[None] if p.ndim == 1 else p)
             for p in _array_list(tup, "tup")]
    return concatenate(parts, axis=0)


def hstack(tup):
    """A new tensor of the arrays joined along axis 1 (axis 0 for 1-D arrays); 0-d ones become (1,)."""
    parts = [p.reshape(1) if p.ndim == 0 else p for p in _array_list(tup, "tup")]
    return concatenate(parts, axis=0 if parts[0].ndim == 1 else 1)


def array_split(ary, indices_or_sections, axis=0):
    """A list of views of ary along axis: an int n gives n parts, the first len % n one longer;
    a sequence of indices gives the parts between them (Python's slice rules)."""
    v = _kiln.value(_kiln_arg(ary, "ary"))
    ax = _axis_arg(axis, v.ndim)
    n = v.shape[ax]
    ios = indices_or_sections
    if _is_kiln(ios) or (isinstance(ios, _np.ndarray) and ios.ndim == 0):
        ios = _np.asarray(get(ios)).tolist()
    if isinstance(ios, _numbers.Integral):
        parts = int(ios)
        if parts <= 0:
            raise ArgumentError(f"argument 'indices_or_sections': {parts} sections; it must be > 0")
        each, extras = divmod(n, parts)
        points = [0]
        for i in range(parts):
            points.append(points[-1] + each + (1 if i < extras else 0))
    else:
        try:
            idx = list(ios)
        except TypeError:
            raise TypeError(f"argument 'indices_or_sections': {ios!r} is not an int or a sequence of ints") from None
        for i in idx:
            if not isinstance(i, _numbers.Integral):
                raise TypeError(f"argument 'indices_or_sections': index {i!r} is not an int")
        points = [0] + [int(i) for i in idx] + [n]
    pre = (slice(None),) * ax
    return [v[pre + (slice(points[i], points[i + 1]),)] for i in range(len(points) - 1)]


def split(ary, indices_or_sections, axis=0):
    """array_split, but an int n must divide the axis' length (numpy's rule)."""
    v = _kiln.value(_kiln_arg(ary, "ary"))
    ios = indices_or_sections
    if isinstance(ios, _numbers.Integral) and int(ios) > 0:
        n = v.shape[_axis_arg(axis, v.ndim)]
        if n % int(ios):
            raise ArgumentError(f"argument 'indices_or_sections': {int(ios)} sections do not divide axis {axis} "
                                f"of length {n} equally (array_split allows that)")
    return array_split(v, ios, axis)


def _tri(m, k, upper):
    x = _kiln_arg(m, "m")
    k = _int_arg(k, "k")
    if x.ndim == 0:
        raise ShapeError(f"argument 'm': {'triu' if upper else 'tril'} needs at least 1 axis, m is 0-d")
    rows, cols = x.shape[-2:] if x.ndim >= 2 else (x.shape[0], x.shape[0])
    c = x.ctx
    i = _kiln.arange(c, int32.code, 0.0, float(rows), 1.0)._reshape((rows, 1))
    j = _kiln.arange(c, int32.code, 0.0, float(cols), 1.0)._reshape((1, cols))
    return where(greater_equal(j - i, k) if upper else less_equal(j - i, k), x, 0)


def tril(m, k=0):
    """Lazy lower triangle of m (of each matrix of the last two axes): m where j - i <= k, else 0.
    A 1-D m is taken as the rows of a square matrix, as numpy does."""
    return _tri(m, k, False)


def triu(m, k=0):
    """Lazy upper triangle of m (of each matrix of the last two axes): m where j - i >= k, else 0."""
    return _tri(m, k, True)


def outer(a, b):
    """Lazy outer product: out[i, j] = a.ravel()[i] * b.ravel()[j]."""
    return ravel(a)[:, None] * ravel(b)[None, :]


def tile(A, reps):
    """A new tensor of A repeated reps times along each axis (numpy's rules: the shorter of A's
    shape and reps is padded with leading 1s)."""
    v = _kiln.value(_kiln_arg(A, "A"))
    tup = tuple(_int_arg(r, "reps", 0) for r in _int_tuple(reps, "reps"))
    nd = builtin_max(len(tup), v.ndim)
    shape = (1,) * (nd - v.ndim) + tuple(v.shape)
    tup = (1,) * (nd - len(tup)) + tup
    out = empty(tuple(s * r for s, r in zip(shape, tup)), dtype=v.dtype, ctx=v.ctx)
    if out.size:
        # out seen as (r0, s0, r1, s1, ...) gets A seen as (1, s0, 1, s1, ...), broadcast
        dst = out._reshape(tuple(x for pair in zip(tup, shape) for x in pair))
        src = v[(None, None) * (nd - v.ndim) + (None, slice(None)) * v.ndim]
        _kiln.assign(dst, src)
    return out


def repeat(a, repeats, axis=None):
    """A new tensor with each element of a repeated `repeats` times along axis (None: of the
    flattened a). repeats: an int, or one count per element (computed by numpy on the host)."""
    v = _kiln.value(_kiln_arg(a, "a"))
    if axis is None:
        v, ax = v.reshape(-1), 0
    else:
        ax = _axis_arg(axis, v.ndim)
    if not isinstance(repeats, _numbers.Integral):
        rep = _np.asarray(get(repeats))
        if rep.dtype.kind not in "biu":
            raise TypeError(f"argument 'repeats': {repeats!r} is not an int or a sequence of ints")
        if rep.ndim > 1 or (rep.size != 1 and rep.size != v.shape[ax]):
            raise ArgumentError(f"argument 'repeats': {rep.size} counts for an axis of length {v.shape[ax]}")
        if rep.size != 1:
            if (rep < 0).any():
                raise ArgumentError(f"argument 'repeats': a count is negative ({int(rep.min())})")
            return array(_np.repeat(v.get(), rep, axis=ax), dtype=v.dtype, ctx=v.ctx)
        repeats = int(rep.reshape(-1)[0])
    r = _int_arg(repeats, "repeats", 0)
    s = tuple(v.shape)
    out = empty(s[:ax] + (s[ax] * r,) + s[ax + 1:], dtype=v.dtype, ctx=v.ctx)
    if out.size:
        # out seen as (..., s[ax], r, ...) gets a seen as (..., s[ax], 1, ...), broadcast
        _kiln.assign(out._reshape(s[:ax + 1] + (r,) + s[ax + 1:]), v[(slice(None),) * (ax + 1) + (None,)])
    return out


def diag(v, k=0):
    """1-D v: a new square tensor with v on diagonal k (0 the main one, > 0 above, < 0 below),
    zeros elsewhere. 2-D v: its diagonal k, a view when v or v.T is contiguous, else a copy."""
    t = _kiln.value(_kiln_arg(v, "v"))
    k = _int_arg(k, "k")
    if t.ndim == 1:
        n = t.shape[0] + _builtin_abs(k)
        out = zeros((n, n), dtype=t.dtype, ctx=t.ctx)
        sl = _diag_slice(n, n, k)
        if sl is not None:
            _kiln.assign(out.reshape(-1)[sl], t)
        return out
    if t.ndim != 2:
        raise ShapeError(f"argument 'v': diag needs 1 or 2 axes, v has {t.ndim}")
    if not t._is_contiguous and t.T._is_contiguous:
        return diag(t.T, -k)
    rows, cols = t.shape
    sl = _diag_slice(rows, cols, k)
    return t.reshape(-1)[sl if sl is not None else slice(0, 0)]


def evaluate(x, dtype=None):
    """A new tensor with the value of x (an Expr is computed now)."""
    return _kiln.eval(x, _to_dtype(dtype).code if dtype is not None else 0)


def get(x):
    """numpy array of x (for a kiln object) or x itself."""
    return x.get() if _is_kiln(x) else _np.asarray(x)


asnumpy = get

# ---------------------------------------------------------------------------------------
# interop
# ---------------------------------------------------------------------------------------


def _device_narrow(obj, dt, mod, target, argname="obj"):
    """A PyTorch or CuPy device array of numpy dtype dt, which kiln lacks, converted on its
    device to a kiln dtype by the host path's rules (_np_src): bool to uint8, int16/uint16 to
    int32; int64, uint32 and uint64 to int32 when every value fits, else to float64 where target
    is a float dtype and an OverflowError naming the value where it is not; complex to the
    float64 of its real part when every imaginary part is 0 (TypeError otherwise)."""
    if mod == "torch":
        import torch as lib
        n, conv = obj.numel(), obj.to
    else:
        import cupy as lib
        n, conv = obj.size, obj.astype
    if dt.kind == "c":
        if n and bool((obj.imag != 0).any()):
            raise TypeError(f"argument '{argname}': complex values with non-zero imaginary parts; kiln has no "
                            "complex dtype (pass .real or .imag)")
        real = obj.real
        return real.to(lib.float64) if mod == "torch" else real.astype(lib.float64)
    near = _NP_FALLBACK.get(dt)
    if near is None:
        raise TypeError(f"argument '{argname}': device dtype {dt} cannot become a kiln tensor")
    if near is int32 and dt.itemsize >= 4 and n:
        near = _wide_int_dtype(int(obj.min()), int(obj.max()), dt, target, argname)
    return conv(lib.float64 if near is float64 else lib.int32 if near is int32 else lib.uint8)


def _from_device(obj, d, c):
    """Copy of a CUDA array (PyTorch, CuPy, anything with __cuda_array_interface__) into a
    new kiln tensor, device to device: the path for producers from_dlpack cannot wrap
    (__cuda_array_interface__ without __dlpack__, another GPU, a dtype kiln lacks). A PyTorch
    or CuPy dtype kiln lacks is first converted on the device as host data would be
    (_device_narrow)."""
    mod = type(obj).__module__.split(".")[0]
    cai = obj.__cuda_array_interface__
    dt = _np.dtype(cai["typestr"])
    if dt not in _BY_NP and mod in ("torch", "cupy"):
        obj = _device_narrow(obj, dt, mod, d)
        cai = obj.__cuda_array_interface__
    shape = tuple(cai["shape"])
    src_d = _to_dtype(_np.dtype(cai["typestr"]))
    t = _kiln.empty(c, src_d.code, shape)
    # The copy runs on the producer library's current stream, which knows nothing of kiln's:
    # kiln's stream is drained first (t's memory may be a block that queued kiln work still
    # uses) and the producer's after (kiln's later work on t must see the copy: without it
    # kn.array(cupy_view).get() read zeros once on the H100, 2026-11-26)
    if mod in ("torch", "cupy"):
        c.synchronize()
    if mod == "torch":
        import torch
        torch.as_tensor(t, device="cuda").copy_(obj)
        torch.cuda.current_stream().synchronize()
    elif mod == "cupy":
        import cupy
        cupy.asarray(t)[...] = obj
        cupy.cuda.get_current_stream().synchronize()
    else:
        raise TypeError(f"argument 'obj': copying a {type(obj).__name__} device array needs PyTorch or CuPy")
    return t if d is None or d is src_d else t._copy(d.code)


def _wrap_dlpack(obj, c):
    """A Tensor of context c over obj's memory (zero copy, through DLPack), or a str saying
    why obj cannot be wrapped (then nothing was consumed)."""
    try:
        dev_type, dev_id = (int(v) for v in obj.__dlpack_device__())
    except (AttributeError, TypeError, ValueError) as e:
        return f"__dlpack_device__ failed ({e})"
    if c.device() == 2:
        if dev_type != 2 or dev_id != c.device_index():
            return f"the memory is on DLPack device ({dev_type}, {dev_id}), the context on (2, {c.device_index()})"
        # The producer orders its pending writes before kiln's stream (DLPack's stream argument).
        kw = {"stream": c.stream()}
    else:
        if dev_type != 1:
            return f"the memory is on DLPack device ({dev_type}, {dev_id}), the context on the CPU"
        kw = {}
    try:
        cap = obj.__dlpack__(**kw)
    except (BufferError, TypeError, ValueError, RuntimeError) as e:
        return f"its __dlpack__ refused ({e})"
    return _kiln.wrap_dlpack(c, cap)


def from_dlpack(obj, ctx=None, copy=None):
    """A kiln tensor from a DLPack producer (numpy, PyTorch, CuPy, kiln).
    Zero copy when obj's memory is where the context works (host memory on the CPU backend,
    the context's GPU on CUDA) and its dtype is a kiln dtype (float32/16/64, bfloat16, int8,
    uint8, int32): the tensor is a view of obj's memory, so writes through either show in
    the other, and it keeps that memory alive (after `del obj` too). On CUDA, kiln's work
    is queued on its own stream: kn.synchronize() before another library reads what kiln
    wrote. kiln tensors come back as themselves.
    Otherwise a copy, as kn.array makes it (int64 becomes int32 where every value fits, bool
    uint8); a dtype that cannot be copied either raises TypeError naming it. copy=True always copies;
    copy=False raises BufferError instead of copying."""
    if _is_kiln(obj):
        v = _kiln.value(obj)
        return v._copy(0) if copy else v
    c = _ctx(ctx)
    why = None
    if copy is not True:
        w = _wrap_dlpack(obj, c)
        if not isinstance(w, str):
            return w
        why = w
        if copy is False:
            raise BufferError(f"argument 'obj': cannot be used without a copy: {why}")
    dev = obj.__dlpack_device__()[0] if hasattr(obj, "__dlpack_device__") else 1
    if dev == 1:
        if isinstance(obj, _np.ndarray):
            return array(obj, ctx=c)
        try:
            a = _np.from_dlpack(obj)
        except (BufferError, TypeError, ValueError, RuntimeError) as e:
            if c.device() != 1:      # host memory numpy cannot read (bfloat16): through a CPU wrap
                w = _wrap_dlpack(obj, _kiln.Context(device=1))
                if not isinstance(w, str):
                    return array(w.get(), dtype=w.dtype, ctx=c)
            raise TypeError(f"argument 'obj': {why or e}") from None
        return array(a, ctx=c)
    if c.device() != 2:
        raise Error("argument 'obj': a GPU array cannot come into a CPU context")
    if not hasattr(obj, "__cuda_array_interface__"):
        raise TypeError(f"argument 'obj': {why or 'a device array without __cuda_array_interface__ to copy from'}")
    return _from_device(obj, None, c)


# numpy functions whose leading arguments mean what kiln's namesakes' do (the reductions are
# left out: numpy's 4th positional is out=, kiln's keepdims; they reach kiln through the
# methods numpy calls)
_ARRAY_FUNCTION_NAMES = (
    "where", "concatenate", "stack", "vstack", "hstack", "split", "array_split", "tril", "triu", "outer",
    "tile", "repeat", "diag", "flip", "fliplr", "flipud", "ravel", "squeeze", "expand_dims", "broadcast_to",
    "transpose", "reshape", "clip", "round", "around", "fix", "nan_to_num", "count_nonzero", "isclose",
    "allclose", "array_equal", "zeros_like", "ones_like", "full_like", "empty_like", "dot", "swapaxes",
    "moveaxis", "copy", "diff", "atleast_1d", "atleast_2d", "atleast_3d", "tensordot", "inner", "pad",
    "meshgrid", "take", "roll", "broadcast_arrays",
)
_ARRAY_FUNCTIONS = {getattr(_np, n): globals()[n] for n in _ARRAY_FUNCTION_NAMES if hasattr(_np, n)}
_ARRAY_FUNCTION_SIGNATURES = {}
# calls whose arguments kiln's function takes but reads differently or not at all: numpy's way
_ARRAY_FUNCTION_GUARDS = {
    dot: lambda a=None, b=None, *r, **k: _np.ndim(a) in (1, 2) and _np.ndim(b) in (1, 2),  # else not a matmul
    pad: lambda array=None, pad_width=None, mode="constant", constant_values=0, *r, **k:
        mode in ("constant", "edge") and isinstance(constant_values, _numbers.Real),
}


def _array_function_signature(fn):
    sig = _ARRAY_FUNCTION_SIGNATURES.get(fn)
    if sig is None:
        import inspect
        sig = _ARRAY_FUNCTION_SIGNATURES[fn] = inspect.signature(fn)
    return sig


def _numpy_tree(x):
    """x with every kiln value inside lists, tuples and dicts replaced by its numpy array."""
    if _is_kiln(x):
        return _np.asarray(x)
    if isinstance(x, (list, tuple)):
        return type(x)(_numpy_tree(v) for v in x)
    if isinstance(x, dict):
        return {k: _numpy_tree(v) for k, v in x.items()}
    return x


_UFUNCS = {
    "add": add, "subtract": subtract, "multiply": multiply, "true_divide": divide, "divide": divide,
    "power": power, "negative": negative, "absolute": absolute, "sqrt": sqrt, "square": square, "exp": exp,
    "exp2": exp2, "log": log, "log2": log2, "tanh": tanh, "maximum": maximum, "minimum": minimum,
    "equal": equal, "not_equal": not_equal, "less": less, "less_equal": less_equal, "greater": greater,
    "greater_equal": greater_equal, "reciprocal": reciprocal, "isfinite": isfinite, "sign": sign,
    "matmul": dot, "log1p": log1p, "expm1": expm1, "sin": sin, "cos": cos, "floor": floor, "ceil": ceil,
    "rint": rint, "trunc": trunc, "isnan": isnan, "isinf": isinf, "log10": log10, "sinh": sinh, "cosh": cosh,
    "logaddexp": logaddexp, "hypot": hypot, "floor_divide": floor_divide, "remainder": mod,
    "fmod": fmod, "logical_and": logical_and, "logical_or": logical_or, "logical_xor": logical_xor,
    "logical_not": logical_not,
}
