/*
 * python/src/_kiln.c — the CPython extension under the kiln package. It binds only the
 * public C API of include/kiln.h: it holds kiln_ctx / kiln_tensor / kiln_expr handles,
 * passes scalars and statuses, and never mirrors a C struct of the library.
 *
 * What lives here (the hot path, so that building one lazy operation costs well under a
 * microsecond): the three handle types (Context, TensorBase, ExprBase) with their number
 * slots (+ - * / ** neg abs, comparisons, in-place forms on tensors), operand conversion,
 * the expression builders, evaluation, views, host transfer, the buffer protocol, DLPack
 * export and the zero-copy DLPack import (kiln_tensor_wrap over the producer's memory).
 * Everything else (numpy-like names, dtype objects, indexing rules) is the
 * pure-Python layer in python/kiln/__init__.py, which subclasses the two base types.
 *
 * Ownership: a TensorBase owns one kiln_tensor reference; an ExprBase owns one kiln_expr
 * reference (kiln builders consume their arguments, so every operand handed to a builder
 * is a fresh reference: kiln_t(...) or kiln_expr_retain(...)). Once an expression has been
 * evaluated for a value, the value is cached in the ExprBase and the node is dropped.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "kiln.h"

/* An operand expression of more than this many distinct nodes is evaluated (and cached)
 * before it is used in a new node, so that expressions carried across loop iterations stay
 * small. Distinct: a subexpression used several times counts once, as the kernel computes it
 * once (x - mean(x) used four times in a normalization is not four times its size). An
 * expression assigned or evaluated is never cut, whatever its size. */
#define MAX_LAZY_NODES 48

/* ---- module state (set up once by kiln/__init__.py through _setup) ------------------ */

static PyTypeObject *tensor_cls; /* kiln.Tensor (a subclass of TensorBase) */
static PyTypeObject *expr_cls;   /* kiln.Expr (a subclass of ExprBase) */
static PyObject *converter;      /* obj -> Tensor | float | None (not convertible) */
static PyObject *default_ctx_fn; /* () -> Context, makes the default context */
static PyObject *exc_map;        /* {status code: exception class} */
static PyObject *pkg_prefix;     /* str: frames whose file starts with it are skipped */
static PyObject *site_files;     /* {filename: filename}, kept forever (the report keeps char*) */
static PyObject *current_ctx;    /* Context or NULL */

typedef struct {
    PyObject_HEAD kiln_ctx *ctx;
    int device_index;
} CtxObject;

typedef struct {
    PyObject_HEAD kiln_tensor *t;
    PyObject *ctx; /* CtxObject */
} TensorObject;

typedef struct {
    PyObject_HEAD kiln_expr *e; /* NULL once value is set */
    PyObject *ctx;              /* CtxObject */
    PyObject *value;            /* TensorObject once evaluated, else NULL */
    Py_ssize_t size;            /* nodes in the tree, shared ones counted again (an upper bound) */
    Py_ssize_t distinct;        /* kiln_expr_nodes(e) once counted (size > MAX_LAZY_NODES), else 0 */
} ExprObject;

static PyTypeObject CtxType, TensorType, ExprType;

#define IS_TENSOR(o) PyObject_TypeCheck((o), &TensorType)
#define IS_EXPR(o) PyObject_TypeCheck((o), &ExprType)

/* ---- errors ---------------------------------------------------------------------------- */

/* Raises the Python exception mapped to status s, carrying msg (kiln's message). */
static PyObject *raise_status(kiln_status s, const char *msg)
{
    PyObject *cls = NULL;
    if (exc_map) {
        PyObject *key = PyLong_FromLong((long)s);
        if (key) {
            cls = PyDict_GetItemWithError(exc_map, key); /* borrowed */
            Py_DECREF(key);
        }
        if (PyErr_Occurred()) return NULL;
    }
    if (!cls) {
        int band = (int)s / 100;
        cls = s == KILN_ERR_OOM ? PyExc_MemoryError
              : s == KILN_ERR_DTYPE ? PyExc_TypeError
              : s == KILN_ERR_BOUNDS ? PyExc_IndexError
              : band == 2 ? PyExc_ValueError
                          : PyExc_RuntimeError;
    }
    if (!msg || !*msg) msg = kiln_status_string(s);
    PyObject *exc = PyObject_CallFunction(cls, "s", msg);
    if (!exc) return NULL;
    PyObject *name = PyUnicode_FromString(kiln_status_name(s));
    if (name) {
        PyObject_SetAttrString(exc, "status", name);
        Py_DECREF(name);
    }
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
    return NULL;
}

static PyObject *raise_ctx(kiln_status s, const kiln_ctx *ctx)
{
    return raise_status(s, kiln_last_error(ctx));
}

/* ---- call sites: the first Python frame outside the kiln package ------------------------ */

static void get_site(const char **file, int *line)
{
    *file = NULL;
    *line = 0;
    PyFrameObject *f = PyEval_GetFrame(); /* borrowed */
    if (!f) return;
    Py_INCREF(f);
    PyObject *fname = NULL;
    while (f) {
        PyCodeObject *code = PyFrame_GetCode(f);
        PyObject *fn = PyObject_GetAttrString((PyObject *)code, "co_filename");
        Py_DECREF(code);
        if (!fn) {
            PyErr_Clear();
            break;
        }
        int inside = pkg_prefix && PyUnicode_Check(fn) &&
                     PyUnicode_Tailmatch(fn, pkg_prefix, 0, PY_SSIZE_T_MAX, -1) == 1;
        if (!inside) {
            fname = fn;
            break;
        }
        Py_DECREF(fn);
        PyFrameObject *back = PyFrame_GetBack(f);
        if (!back) break;
        Py_DECREF(f);
        f = back;
    }
    if (!fname || !f) {
        Py_XDECREF(fname);
        Py_XDECREF(f);
        return;
    }
    *line = PyFrame_GetLineNumber(f);
    Py_DECREF(f);
    if (site_files && PyUnicode_Check(fname)) {
        PyObject *kept = PyDict_SetDefault(site_files, fname, fname); /* borrowed */
        if (kept) *file = PyUnicode_AsUTF8(kept);
    }
    if (PyErr_Occurred()) PyErr_Clear();
    Py_DECREF(fname);
}

/* ---- small helpers --------------------------------------------------------------------- */

static CtxObject *current_context(void)
{
    if (!current_ctx) {
        if (!default_ctx_fn) {
            PyErr_SetString(PyExc_RuntimeError, "kiln: no context (the package was not set up)");
            return NULL;
        }
        PyObject *c = PyObject_CallNoArgs(default_ctx_fn);
        if (!c) return NULL;
        if (!PyObject_TypeCheck(c, &CtxType)) {
            Py_DECREF(c);
            PyErr_SetString(PyExc_TypeError, "kiln: the default context function did not return a Context");
            return NULL;
        }
        Py_XSETREF(current_ctx, c);
    }
    return (CtxObject *)current_ctx;
}

static int parse_dtype(PyObject *o, kiln_dtype *dt, const char *argname)
{
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (v < 0 || v >= KILN_DTYPE_COUNT) {
        PyErr_Format(PyExc_TypeError, "argument '%s': unknown dtype code %ld", argname, v);
        return -1;
    }
    *dt = (kiln_dtype)v;
    return 0;
}

static int parse_shape(PyObject *o, int64_t *shape, int *ndim, const char *argname)
{
    if (PyLong_Check(o)) {
        shape[0] = PyLong_AsLongLong(o);
        if (shape[0] == -1 && PyErr_Occurred()) return -1;
        *ndim = 1;
        return 0;
    }
    PyObject *seq = PySequence_Fast(o, "shape must be an int or a sequence of ints");
    if (!seq) {
        PyErr_Format(PyExc_TypeError, "argument '%s': must be an int or a sequence of ints", argname);
        return -1;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > KILN_MAX_DIMS) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "argument '%s': %zd axes, kiln allows at most %d", argname, n,
                     KILN_MAX_DIMS);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *it = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyLong_Check(it) && !PyIndex_Check(it)) {
            Py_DECREF(seq);
            PyErr_Format(PyExc_TypeError, "argument '%s': axis %zd is not an int", argname, i);
            return -1;
        }
        shape[i] = PyLong_AsLongLong(it);
        if (shape[i] == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
    }
    Py_DECREF(seq);
    *ndim = (int)n;
    return 0;
}

static PyObject *shape_tuple(int ndim, const int64_t *shape)
{
    PyObject *t = PyTuple_New(ndim);
    if (!t) return NULL;
    for (int i = 0; i < ndim; i++) {
        PyObject *v = PyLong_FromLongLong(shape[i]);
        if (!v) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, v);
    }
    return t;
}

/* New Tensor object owning t (steals the reference; releases it on failure). */
static PyObject *wrap_tensor(kiln_tensor *t, PyObject *ctx)
{
    PyTypeObject *cls = tensor_cls ? tensor_cls : &TensorType;
    TensorObject *o = (TensorObject *)cls->tp_alloc(cls, 0);
    if (!o) {
        kiln_tensor_release(t);
        return NULL;
    }
    o->t = t;
    Py_XINCREF(ctx);
    o->ctx = ctx;
    return (PyObject *)o;
}

/* New Expr object owning e (steals; releases on failure). Raises when e is an error node. */
static PyObject *wrap_expr(kiln_expr *e, PyObject *ctx, Py_ssize_t size)
{
    const char *msg = NULL;
    kiln_status s = kiln_expr_status(e, &msg);
    if (s != KILN_OK) {
        raise_status(s, msg);
        kiln_expr_release(e);
        return NULL;
    }
    PyTypeObject *cls = expr_cls ? expr_cls : &ExprType;
    ExprObject *o = (ExprObject *)cls->tp_alloc(cls, 0);
    if (!o) {
        kiln_expr_release(e);
        return NULL;
    }
    o->e = e;
    Py_XINCREF(ctx);
    o->ctx = ctx;
    o->value = NULL;
    o->size = size;
    o->distinct = 0;
    return (PyObject *)o;
}

static kiln_ctx *ctx_of(PyObject *ctxobj)
{
    return ctxobj ? ((CtxObject *)ctxobj)->ctx : NULL;
}

/* Evaluates x once and caches the value; returns a borrowed TensorObject or NULL. */
static PyObject *materialize(ExprObject *x)
{
    if (x->value) return x->value;
    CtxObject *c = (CtxObject *)x->ctx;
    if (!c && !(c = current_context())) return NULL;
    const char *file;
    int line;
    get_site(&file, &line);
    kiln_tensor *out = NULL;
    kiln_status s = kiln_eval_at(c->ctx, kiln_expr_retain(x->e), KILN_DTYPE_AUTO, &out, file, line);
    if (s != KILN_OK) return raise_ctx(s, c->ctx);
    PyObject *v = wrap_tensor(out, (PyObject *)c);
    if (!v) return NULL;
    x->value = v;
    kiln_expr_release(x->e);
    x->e = NULL;
    return v;
}

/* Operand conversion. Returns a new kiln_expr reference, or NULL with an exception set, or
 * NULL with *notimpl set (the object is not something kiln can use). */
static kiln_expr *to_expr(PyObject *o, PyObject **ctx, Py_ssize_t *size, int *notimpl)
{
    if (IS_TENSOR(o)) {
        TensorObject *t = (TensorObject *)o;
        if (!*ctx) *ctx = t->ctx;
        *size += 1;
        return kiln_t(t->t);
    }
    if (IS_EXPR(o)) {
        ExprObject *x = (ExprObject *)o;
        if (!*ctx) *ctx = x->ctx;
        if (!x->value && x->size > MAX_LAZY_NODES) {
            if (!x->distinct) x->distinct = (Py_ssize_t)kiln_expr_nodes(x->e);
            if ((x->distinct < 0 || x->distinct > MAX_LAZY_NODES) && !materialize(x)) return NULL;
        }
        if (x->value) {
            *size += 1;
            return kiln_t(((TensorObject *)x->value)->t);
        }
        *size += x->size;
        return kiln_expr_retain(x->e);
    }
    if (PyFloat_CheckExact(o)) {
        *size += 1;
        return kiln_scalar(PyFloat_AS_DOUBLE(o));
    }
    if (PyLong_Check(o)) {
        double v = PyLong_AsDouble(o);
        if (v == -1.0 && PyErr_Occurred()) return NULL;
        *size += 1;
        return kiln_scalar(v);
    }
    if (PyFloat_Check(o)) {
        *size += 1;
        return kiln_scalar(PyFloat_AsDouble(o));
    }
    if (!converter) {
        *notimpl = 1;
        return NULL;
    }
    PyObject *r = PyObject_CallOneArg(converter, o);
    if (!r) return NULL;
    kiln_expr *e = NULL;
    if (r == Py_None) {
        *notimpl = 1;
    } else if (PyFloat_Check(r) || PyLong_Check(r)) {
        double v = PyFloat_AsDouble(r);
        if (!(v == -1.0 && PyErr_Occurred())) {
            *size += 1;
            e = kiln_scalar(v);
        }
    } else if (IS_TENSOR(r)) {
        TensorObject *t = (TensorObject *)r;
        if (!*ctx) *ctx = t->ctx;
        *size += 1;
        e = kiln_t(t->t);
    } else {
        PyErr_SetString(PyExc_TypeError, "kiln: the converter returned an unexpected object");
    }
    Py_DECREF(r);
    return e;
}

/* ---- expression builders ---------------------------------------------------------------- */

enum { B_ADD, B_SUB, B_MUL, B_DIV, B_POW, B_MAXIMUM, B_MINIMUM, B_EQ, B_NE, B_LT, B_LE, B_GT, B_GE, B_FMOD, B_COUNT };
typedef kiln_expr *(*binary_fn)(kiln_expr *, kiln_expr *);
static const binary_fn binary_fns[B_COUNT] = {kiln_add,     kiln_sub,     kiln_mul, kiln_div, kiln_pow,
                                              kiln_maximum, kiln_minimum, kiln_eq,  kiln_ne,  kiln_lt,
                                              kiln_le,      kiln_gt,      kiln_ge,  kiln_fmod};

enum {
    U_NEG, U_ABS, U_SQR, U_SQRT, U_RSQRT, U_RECIPROCAL, U_EXP, U_EXP2, U_LOG, U_LOG2, U_SIGMOID, U_TANH,
    U_RELU, U_FINITE, U_SIGN, U_LOG1P, U_EXPM1, U_SIN, U_COS, U_ERF, U_FLOOR, U_CEIL, U_RINT, U_TRUNC, U_COUNT
};
typedef kiln_expr *(*unary_fn)(kiln_expr *);
static const unary_fn unary_fns[U_COUNT] = {kiln_neg,     kiln_abs,  kiln_sqr,  kiln_sqrt, kiln_rsqrt,
                                            kiln_reciprocal, kiln_exp, kiln_exp2, kiln_log,  kiln_log2,
                                            kiln_sigmoid, kiln_tanh, kiln_relu, kiln_finite, kiln_sign,
                                            kiln_log1p,   kiln_expm1, kiln_sin, kiln_cos, kiln_erf,
                                            kiln_floor,   kiln_ceil, kiln_rint, kiln_trunc};

static PyObject *build_binary(int op, PyObject *a, PyObject *b)
{
    PyObject *ctx = NULL;
    Py_ssize_t size = 1;
    int notimpl = 0;
    kiln_expr *ea = to_expr(a, &ctx, &size, &notimpl);
    if (!ea) {
        if (notimpl) Py_RETURN_NOTIMPLEMENTED;
        return NULL;
    }
    kiln_expr *eb = to_expr(b, &ctx, &size, &notimpl);
    if (!eb) {
        kiln_expr_release(ea);
        if (notimpl) Py_RETURN_NOTIMPLEMENTED;
        return NULL;
    }
    if (!ctx) ctx = (PyObject *)current_context();
    if (!ctx) {
        kiln_expr_release(ea);
        kiln_expr_release(eb);
        return NULL;
    }
    return wrap_expr(binary_fns[op](ea, eb), ctx, size);
}

static PyObject *build_unary(int op, PyObject *x)
{
    PyObject *ctx = NULL;
    Py_ssize_t size = 1;
    int notimpl = 0;
    kiln_expr *ex = to_expr(x, &ctx, &size, &notimpl);
    if (!ex) {
        if (notimpl) PyErr_Format(PyExc_TypeError, "argument 'x': kiln cannot use a %s", Py_TYPE(x)->tp_name);
        return NULL;
    }
    if (!ctx) ctx = (PyObject *)current_context();
    if (!ctx) {
        kiln_expr_release(ex);
        return NULL;
    }
    return wrap_expr(unary_fns[op](ex), ctx, size);
}

/* Converts an argument that must be usable (raises TypeError naming it otherwise). */
static kiln_expr *arg_expr(PyObject *o, const char *argname, PyObject **ctx, Py_ssize_t *size)
{
    int notimpl = 0;
    kiln_expr *e = to_expr(o, ctx, size, &notimpl);
    if (!e && notimpl)
        PyErr_Format(PyExc_TypeError, "argument '%s': kiln cannot use a %s", argname, Py_TYPE(o)->tp_name);
    return e;
}

/* The whole right-hand side of an assignment or evaluation: an unevaluated Expr as it is
 * (the size limit is for operands of new nodes), anything else as arg_expr converts it. */
static kiln_expr *root_expr(PyObject *o, const char *argname, PyObject **ctx, Py_ssize_t *size)
{
    if (IS_EXPR(o) && !((ExprObject *)o)->value) {
        ExprObject *x = (ExprObject *)o;
        if (!*ctx) *ctx = x->ctx;
        *size += x->size;
        return kiln_expr_retain(x->e);
    }
    return arg_expr(o, argname, ctx, size);
}

static PyObject *m_binary(PyObject *self, PyObject *args)
{
    (void)self;
    int op;
    PyObject *a, *b;
    if (!PyArg_ParseTuple(args, "iOO", &op, &a, &b)) return NULL;
    if (op < 0 || op >= B_COUNT) return PyErr_Format(PyExc_ValueError, "argument 'op': unknown binary op %d", op);
    PyObject *r = build_binary(op, a, b);
    if (r == Py_NotImplemented) {
        Py_DECREF(r);
        return PyErr_Format(PyExc_TypeError, "arguments 'a', 'b': kiln cannot use a %s and a %s",
                            Py_TYPE(a)->tp_name, Py_TYPE(b)->tp_name);
    }
    return r;
}

static PyObject *m_unary(PyObject *self, PyObject *args)
{
    (void)self;
    int op;
    PyObject *x;
    if (!PyArg_ParseTuple(args, "iO", &op, &x)) return NULL;
    if (op < 0 || op >= U_COUNT) return PyErr_Format(PyExc_ValueError, "argument 'op': unknown unary op %d", op);
    return build_unary(op, x);
}

static PyObject *m_reduce(PyObject *self, PyObject *args)
{
    (void)self;
    int op, keepdims;
    PyObject *x, *axes_o;
    if (!PyArg_ParseTuple(args, "iOOp", &op, &x, &axes_o, &keepdims)) return NULL;
    if (op < 0 || op >= KILN_REDUCE_COUNT)
        return PyErr_Format(PyExc_ValueError, "argument 'op': unknown reduction %d", op);
    int axes[KILN_MAX_DIMS];
    int naxes = 0;
    if (axes_o != Py_None) {
        int64_t a64[KILN_MAX_DIMS];
        if (parse_shape(axes_o, a64, &naxes, "axis") < 0) return NULL;
        for (int i = 0; i < naxes; i++) {
            if (a64[i] < -KILN_MAX_DIMS - 1 || a64[i] > KILN_MAX_DIMS + 1)
                return PyErr_Format(PyExc_ValueError, "argument 'axis': axis %lld is out of range",
                                    (long long)a64[i]);
            axes[i] = (int)a64[i];
        }
    }
    PyObject *ctx = NULL;
    Py_ssize_t size = 1;
    kiln_expr *ex = arg_expr(x, "a", &ctx, &size);
    if (!ex) return NULL;
    if (!ctx) ctx = (PyObject *)current_context();
    if (!ctx) {
        kiln_expr_release(ex);
        return NULL;
    }
    return wrap_expr(kiln_reduce((kiln_reduce_op)op, ex, naxes, naxes ? axes : NULL, keepdims), ctx, size);
}

static PyObject *m_clip(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *x;
    double lo, hi;
    if (!PyArg_ParseTuple(args, "Odd", &x, &lo, &hi)) return NULL;
    PyObject *ctx = NULL;
    Py_ssize_t size = 1;
    kiln_expr *ex = arg_expr(x, "a", &ctx, &size);
    if (!ex) return NULL;
    if (!ctx) ctx = (PyObject *)current_context();
    if (!ctx) {
        kiln_expr_release(ex);
        return NULL;
    }
    return wrap_expr(kiln_clip(ex, lo, hi), ctx, size);
}

static PyObject *m_where(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *c, *a, *b;
    if (!PyArg_ParseTuple(args, "OOO", &c, &a, &b)) return NULL;
    PyObject *ctx = NULL;
    Py_ssize_t size = 1;
    kiln_expr *ec = arg_expr(c, "condition", &ctx, &size);
    if (!ec) return NULL;
    kiln_expr *ea = arg_expr(a, "x", &ctx, &size);
    if (!ea) {
        kiln_expr_release(ec);
        return NULL;
    }
    kiln_expr *eb = arg_expr(b, "y", &ctx, &size);
    if (!eb) {
        kiln_expr_release(ec);
        kiln_expr_release(ea);
        return NULL;
    }
    if (!ctx) ctx = (PyObject *)current_context();
    if (!ctx) {
        kiln_expr_release(ec);
        kiln_expr_release(ea);
        kiln_expr_release(eb);
        return NULL;
    }
    return wrap_expr(kiln_where(ec, ea, eb), ctx, size);
}

static PyObject *m_cast(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *x, *dto;
    kiln_dtype dt;
    if (!PyArg_ParseTuple(args, "OO", &x, &dto)) return NULL;
    if (parse_dtype(dto, &dt, "dtype") < 0) return NULL;
    PyObject *ctx = NULL;
    Py_ssize_t size = 1;
    kiln_expr *ex = arg_expr(x, "a", &ctx, &size);
    if (!ex) return NULL;
    if (!ctx) ctx = (PyObject *)current_context();
    if (!ctx) {
        kiln_expr_release(ex);
        return NULL;
    }
    return wrap_expr(kiln_cast(ex, dt), ctx, size);
}

/* generator(kind, p): 0 rand, 1 randn, 2 bernoulli(p). Shapeless (takes the shape of what
 * it is broadcast against). */
static PyObject *m_generator(PyObject *self, PyObject *args)
{
    (void)self;
    int kind;
    double p = 0.0;
    if (!PyArg_ParseTuple(args, "i|d", &kind, &p)) return NULL;
    PyObject *ctx = (PyObject *)current_context();
    if (!ctx) return NULL;
    kiln_expr *e = kind == 0 ? kiln_rand() : kind == 1 ? kiln_randn() : kiln_bernoulli(p);
    return wrap_expr(e, ctx, 1);
}

static PyObject *m_dropout(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *x;
    double p;
    if (!PyArg_ParseTuple(args, "Od", &x, &p)) return NULL;
    PyObject *ctx = NULL;
    Py_ssize_t size = 1;
    kiln_expr *ex = arg_expr(x, "x", &ctx, &size);
    if (!ex) return NULL;
    if (!ctx) ctx = (PyObject *)current_context();
    if (!ctx) {
        kiln_expr_release(ex);
        return NULL;
    }
    return wrap_expr(kiln_dropout(ex, p), ctx, size);
}

/* value(x): a Tensor for x (x itself when it is one; an Expr is evaluated once, cached). */
static PyObject *m_value(PyObject *self, PyObject *x)
{
    (void)self;
    if (IS_TENSOR(x)) {
        Py_INCREF(x);
        return x;
    }
    if (IS_EXPR(x)) {
        PyObject *v = materialize((ExprObject *)x);
        Py_XINCREF(v);
        return v;
    }
    return PyErr_Format(PyExc_TypeError, "argument 'x': expected a kiln Tensor or Expr, got %s", Py_TYPE(x)->tp_name);
}

/* eval(x, dtype): a new Tensor with the value of x in dtype (0 = its own). */
static PyObject *m_eval(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *x, *dto;
    kiln_dtype dt;
    if (!PyArg_ParseTuple(args, "OO", &x, &dto)) return NULL;
    if (parse_dtype(dto, &dt, "dtype") < 0) return NULL;
    PyObject *ctx = NULL;
    Py_ssize_t size = 1;
    kiln_expr *ex = root_expr(x, "a", &ctx, &size);
    if (!ex) return NULL;
    if (!ctx) ctx = (PyObject *)current_context();
    if (!ctx) {
        kiln_expr_release(ex);
        return NULL;
    }
    const char *file;
    int line;
    get_site(&file, &line);
    kiln_tensor *out = NULL;
    kiln_status s = kiln_eval_at(ctx_of(ctx), ex, dt, &out, file, line);
    if (s != KILN_OK) return raise_ctx(s, ctx_of(ctx));
    return wrap_tensor(out, ctx);
}

/* assign(dst, value, round): dst[...] = value (a Tensor, Expr, scalar or array-like). */
static PyObject *m_assign(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *dst, *val;
    int round = 0;
    if (!PyArg_ParseTuple(args, "OO|i", &dst, &val, &round)) return NULL;
    if (!IS_TENSOR(dst))
        return PyErr_Format(PyExc_TypeError, "argument 'out': expected a kiln Tensor, got %s", Py_TYPE(dst)->tp_name);
    TensorObject *d = (TensorObject *)dst;
    PyObject *ctx = d->ctx;
    Py_ssize_t size = 1;
    kiln_expr *e = root_expr(val, "value", &ctx, &size);
    if (!e) return NULL;
    kiln_assign_args a = {.round = (kiln_round)round};
    kiln_status s = kiln_assign_ex(d->t, e, &a);
    if (s != KILN_OK) return raise_ctx(s, kiln_tensor_ctx(d->t));
    Py_RETURN_NONE;
}

/* ---- number slots ------------------------------------------------------------------------ */

static PyObject *nb_add(PyObject *a, PyObject *b) { return build_binary(B_ADD, a, b); }
static PyObject *nb_sub(PyObject *a, PyObject *b) { return build_binary(B_SUB, a, b); }
static PyObject *nb_mul(PyObject *a, PyObject *b) { return build_binary(B_MUL, a, b); }
static PyObject *nb_div(PyObject *a, PyObject *b) { return build_binary(B_DIV, a, b); }
static PyObject *nb_pow(PyObject *a, PyObject *b, PyObject *mod)
{
    if (mod != Py_None) {
        PyErr_SetString(PyExc_TypeError, "argument 'mod': kiln has no modular power");
        return NULL;
    }
    return build_binary(B_POW, a, b);
}
static PyObject *nb_neg(PyObject *a) { return build_unary(U_NEG, a); }
static PyObject *nb_abs(PyObject *a) { return build_unary(U_ABS, a); }
static PyObject *nb_pos(PyObject *a)
{
    Py_INCREF(a);
    return a;
}

static PyObject *richcompare(PyObject *a, PyObject *b, int op)
{
    static const int map[6] = {[Py_LT] = B_LT, [Py_LE] = B_LE, [Py_EQ] = B_EQ,
                               [Py_NE] = B_NE, [Py_GT] = B_GT, [Py_GE] = B_GE};
    return build_binary(map[op], a, b);
}

/* In place on a tensor: self[...] = self op other, evaluated now, returns self. */
static PyObject *inplace(int op, PyObject *self, PyObject *other)
{
    if (!IS_TENSOR(self)) Py_RETURN_NOTIMPLEMENTED;
    TensorObject *d = (TensorObject *)self;
    PyObject *ctx = d->ctx;
    Py_ssize_t size = 2;
    int notimpl = 0;
    kiln_expr *eb = to_expr(other, &ctx, &size, &notimpl);
    if (!eb) {
        if (notimpl) Py_RETURN_NOTIMPLEMENTED;
        return NULL;
    }
    kiln_expr *e = binary_fns[op](kiln_t(d->t), eb);
    const char *msg = NULL;
    kiln_status s = kiln_expr_status(e, &msg);
    if (s != KILN_OK) {
        raise_status(s, msg);
        kiln_expr_release(e);
        return NULL;
    }
    s = kiln_assign(d->t, e);
    if (s != KILN_OK) return raise_ctx(s, kiln_tensor_ctx(d->t));
    Py_INCREF(self);
    return self;
}
static PyObject *nb_iadd(PyObject *a, PyObject *b) { return inplace(B_ADD, a, b); }
static PyObject *nb_isub(PyObject *a, PyObject *b) { return inplace(B_SUB, a, b); }
static PyObject *nb_imul(PyObject *a, PyObject *b) { return inplace(B_MUL, a, b); }
static PyObject *nb_idiv(PyObject *a, PyObject *b) { return inplace(B_DIV, a, b); }
static PyObject *nb_ipow(PyObject *a, PyObject *b, PyObject *mod)
{
    (void)mod;
    return inplace(B_POW, a, b);
}

static PyNumberMethods tensor_as_number = {
    .nb_add = nb_add,
    .nb_subtract = nb_sub,
    .nb_multiply = nb_mul,
    .nb_true_divide = nb_div,
    .nb_power = nb_pow,
    .nb_negative = nb_neg,
    .nb_absolute = nb_abs,
    .nb_positive = nb_pos,
    .nb_inplace_add = nb_iadd,
    .nb_inplace_subtract = nb_isub,
    .nb_inplace_multiply = nb_imul,
    .nb_inplace_true_divide = nb_idiv,
    .nb_inplace_power = nb_ipow,
};

static PyNumberMethods expr_as_number = {
    .nb_add = nb_add,
    .nb_subtract = nb_sub,
    .nb_multiply = nb_mul,
    .nb_true_divide = nb_div,
    .nb_power = nb_pow,
    .nb_negative = nb_neg,
    .nb_absolute = nb_abs,
    .nb_positive = nb_pos,
};

/* ---- Context ------------------------------------------------------------------------------- */

static int ctx_init(CtxObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"device", "seed", "round", "memory_limit", "allow_tf32", "device_index", "threads", NULL};
    int device = 0, round = 0, tf32 = 0, index = 0, threads = 0;
    unsigned long long seed = 0, limit = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|iKiKpii", kwlist, &device, &seed, &round, &limit, &tf32, &index,
                                     &threads))
        return -1;
    if (self->ctx) {
        kiln_ctx_destroy(self->ctx);
        self->ctx = NULL;
    }
    kiln_ctx_args a = {.device = (kiln_device)device,
                       .seed = seed,
                       .round = (kiln_round)round,
                       .memory_limit = (size_t)limit,
                       .allow_tf32 = tf32,
                       .device_index = index,
                       .threads = threads};
    kiln_status s = kiln_ctx_create(&self->ctx, &a);
    if (s != KILN_OK) {
        raise_ctx(s, NULL);
        return -1;
    }
    self->device_index = index;
    return 0;
}

static void ctx_dealloc(CtxObject *self)
{
    kiln_ctx_destroy(self->ctx);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

#define CTX_CHECK(self)                                                                       \
    do {                                                                                      \
        if (!(self)->ctx) {                                                                   \
            PyErr_SetString(PyExc_ValueError, "argument 'ctx': the context is not initialised"); \
            return NULL;                                                                      \
        }                                                                                     \
    } while (0)

static PyObject *ctx_backend(CtxObject *self, PyObject *unused)
{
    (void)unused;
    CTX_CHECK(self);
    return PyUnicode_FromString(kiln_ctx_backend_name(self->ctx));
}
static PyObject *ctx_description(CtxObject *self, PyObject *unused)
{
    (void)unused;
    CTX_CHECK(self);
    return PyUnicode_FromString(kiln_ctx_device_description(self->ctx));
}
static PyObject *ctx_device(CtxObject *self, PyObject *unused)
{
    (void)unused;
    CTX_CHECK(self);
    return PyLong_FromLong((long)kiln_ctx_device(self->ctx));
}
static PyObject *ctx_device_index(CtxObject *self, PyObject *unused)
{
    (void)unused;
    return PyLong_FromLong(self->device_index);
}
static PyObject *ctx_last_error(CtxObject *self, PyObject *unused)
{
    (void)unused;
    return PyUnicode_FromString(kiln_last_error(self->ctx));
}

#define CTX_STATUS_CALL(call)                                                                 \
    do {                                                                                      \
        kiln_status s_ = (call);                                                              \
        if (s_ != KILN_OK) return raise_ctx(s_, self->ctx);                                   \
        Py_RETURN_NONE;                                                                       \
    } while (0)

static PyObject *ctx_set_seed(CtxObject *self, PyObject *arg)
{
    CTX_CHECK(self);
    unsigned long long v = PyLong_AsUnsignedLongLongMask(arg);
    if (PyErr_Occurred()) return NULL;
    CTX_STATUS_CALL(kiln_ctx_set_seed(self->ctx, v));
}
static PyObject *ctx_set_round(CtxObject *self, PyObject *arg)
{
    CTX_CHECK(self);
    long v = PyLong_AsLong(arg);
    if (v == -1 && PyErr_Occurred()) return NULL;
    CTX_STATUS_CALL(kiln_ctx_set_round(self->ctx, (kiln_round)v));
}
static PyObject *ctx_threads(CtxObject *self, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromLong(kiln_ctx_threads(self->ctx));
}

static PyObject *ctx_set_allow_tf32(CtxObject *self, PyObject *arg)
{
    CTX_CHECK(self);
    int v = PyObject_IsTrue(arg);
    if (v < 0) return NULL;
    CTX_STATUS_CALL(kiln_ctx_set_allow_tf32(self->ctx, v));
}
static PyObject *ctx_set_limit(CtxObject *self, PyObject *arg)
{
    CTX_CHECK(self);
    unsigned long long v = PyLong_AsUnsignedLongLong(arg);
    if (PyErr_Occurred()) return NULL;
    CTX_STATUS_CALL(kiln_mem_set_limit(self->ctx, (size_t)v));
}
static PyObject *ctx_synchronize(CtxObject *self, PyObject *unused)
{
    (void)unused;
    CTX_CHECK(self);
    CTX_STATUS_CALL(kiln_ctx_synchronize(self->ctx));
}
static PyObject *ctx_release_cached(CtxObject *self, PyObject *unused)
{
    (void)unused;
    CTX_CHECK(self);
    CTX_STATUS_CALL(kiln_mem_release_cached(self->ctx));
}
static PyObject *ctx_reset_peak(CtxObject *self, PyObject *unused)
{
    (void)unused;
    CTX_CHECK(self);
    CTX_STATUS_CALL(kiln_mem_reset_peak(self->ctx));
}
static PyObject *ctx_stream(CtxObject *self, PyObject *unused)
{
    (void)unused;
    CTX_CHECK(self);
    return PyLong_FromVoidPtr(kiln_ctx_stream(self->ctx)); /* 0 on the CPU */
}
static PyObject *ctx_stats(CtxObject *self, PyObject *unused)
{
    (void)unused;
    CTX_CHECK(self);
    kiln_mem_stats st;
    kiln_status s = kiln_mem_get_stats(self->ctx, &st);
    if (s != KILN_OK) return raise_ctx(s, self->ctx);
    return Py_BuildValue("{s:K,s:K,s:K,s:K,s:L,s:L}", "in_use", (unsigned long long)st.in_use, "peak",
                         (unsigned long long)st.peak, "cached", (unsigned long long)st.cached, "limit",
                         (unsigned long long)st.limit, "live_blocks", (long long)st.live_blocks, "total_allocs",
                         (long long)st.total_allocs);
}
static PyObject *ctx_report(CtxObject *self, PyObject *unused)
{
    (void)unused;
    CTX_CHECK(self);
    size_t needed = 0;
    kiln_status s = kiln_mem_report(self->ctx, NULL, 0, &needed);
    if (s != KILN_OK) return raise_ctx(s, self->ctx);
    for (int attempt = 0; attempt < 4; attempt++) {
        size_t cap = needed + 256;
        char *buf = PyMem_Malloc(cap);
        if (!buf) return PyErr_NoMemory();
        s = kiln_mem_report(self->ctx, buf, cap, &needed);
        if (s != KILN_OK) {
            PyMem_Free(buf);
            return raise_ctx(s, self->ctx);
        }
        if (needed <= cap) {
            PyObject *r = PyUnicode_FromString(buf);
            PyMem_Free(buf);
            return r;
        }
        PyMem_Free(buf);
    }
    return PyErr_Format(PyExc_RuntimeError, "kiln: the memory report kept growing");
}

static PyMethodDef ctx_methods[] = {
    {"backend", (PyCFunction)ctx_backend, METH_NOARGS, "Backend name (\"cpu\", \"cuda\")."},
    {"description", (PyCFunction)ctx_description, METH_NOARGS, "What the backend runs on."},
    {"device", (PyCFunction)ctx_device, METH_NOARGS, "1 = cpu, 2 = cuda."},
    {"device_index", (PyCFunction)ctx_device_index, METH_NOARGS, "CUDA device index asked for."},
    {"last_error", (PyCFunction)ctx_last_error, METH_NOARGS, "The last error message."},
    {"set_seed", (PyCFunction)ctx_set_seed, METH_O, "Reseeds the RNG."},
    {"set_round", (PyCFunction)ctx_set_round, METH_O, "Default rounding: 1 nearest, 2 stochastic."},
    {"set_allow_tf32", (PyCFunction)ctx_set_allow_tf32, METH_O, "TF32 for f32 GEMM on CUDA."},
    {"threads", (PyCFunction)ctx_threads, METH_NOARGS, "Threads the context's host work runs on."},
    {"set_memory_limit", (PyCFunction)ctx_set_limit, METH_O, "Cap in bytes (0 = none)."},
    {"synchronize", (PyCFunction)ctx_synchronize, METH_NOARGS, "Waits for queued work."},
    {"release_cached", (PyCFunction)ctx_release_cached, METH_NOARGS, "Frees cached blocks."},
    {"reset_peak", (PyCFunction)ctx_reset_peak, METH_NOARGS, "Resets the peak statistic."},
    {"stats", (PyCFunction)ctx_stats, METH_NOARGS, "Memory statistics as a dict."},
    {"report", (PyCFunction)ctx_report, METH_NOARGS, "The memory report as text."},
    {"stream", (PyCFunction)ctx_stream, METH_NOARGS, "The cudaStream_t kiln queues work on (int; 0 on the CPU)."},
    {NULL, NULL, 0, NULL}};

static PyTypeObject CtxType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kiln._kiln.Context",
    .tp_basicsize = sizeof(CtxObject),
    .tp_dealloc = (destructor)ctx_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "A kiln context (backend, RNG, allocator). Context(device, seed, round, memory_limit, allow_tf32, "
              "device_index, threads)",
    .tp_methods = ctx_methods,
    .tp_init = (initproc)ctx_init,
    .tp_new = PyType_GenericNew,
};

/* ---- TensorBase -------------------------------------------------------------------------- */

static void tensor_dealloc(TensorObject *self)
{
    kiln_tensor_release(self->t);
    Py_XDECREF(self->ctx);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int tensor_init(TensorObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    (void)args;
    (void)kw;
    PyErr_SetString(PyExc_TypeError, "kiln tensors are made with kiln.array, kiln.empty, kiln.zeros, ...");
    return -1;
}

static PyObject *t_shape(TensorObject *self, void *c)
{
    (void)c;
    return shape_tuple(kiln_tensor_ndim(self->t), kiln_tensor_shape(self->t));
}
static PyObject *t_estrides(TensorObject *self, void *c)
{
    (void)c;
    return shape_tuple(kiln_tensor_ndim(self->t), kiln_tensor_strides(self->t));
}
static PyObject *t_dtype(TensorObject *self, void *c)
{
    (void)c;
    return PyLong_FromLong((long)kiln_tensor_dtype(self->t));
}
static PyObject *t_ndim(TensorObject *self, void *c)
{
    (void)c;
    return PyLong_FromLong(kiln_tensor_ndim(self->t));
}
static PyObject *t_size(TensorObject *self, void *c)
{
    (void)c;
    return PyLong_FromLongLong(kiln_tensor_numel(self->t));
}
static PyObject *t_data(TensorObject *self, void *c)
{
    (void)c;
    return PyLong_FromVoidPtr(kiln_tensor_data(self->t));
}
static PyObject *t_contig(TensorObject *self, void *c)
{
    (void)c;
    return PyBool_FromLong(kiln_tensor_is_contiguous(self->t));
}
static PyObject *t_ctx(TensorObject *self, void *c)
{
    (void)c;
    PyObject *r = self->ctx ? self->ctx : Py_None;
    Py_INCREF(r);
    return r;
}
static PyObject *t_name(TensorObject *self, void *c)
{
    (void)c;
    return PyUnicode_FromString(kiln_tensor_name(self->t));
}
static int t_set_name(TensorObject *self, PyObject *v, void *c)
{
    (void)c;
    const char *s = NULL;
    if (v && v != Py_None) {
        if (!PyUnicode_Check(v)) {
            PyErr_SetString(PyExc_TypeError, "argument 'name': must be a str or None");
            return -1;
        }
        s = PyUnicode_AsUTF8(v);
        if (!s) return -1;
    }
    kiln_status st = kiln_tensor_set_name(self->t, s);
    if (st != KILN_OK) {
        raise_ctx(st, kiln_tensor_ctx(self->t));
        return -1;
    }
    return 0;
}

static PyGetSetDef tensor_getset[] = {
    {"shape", (getter)t_shape, NULL, "Shape (tuple).", NULL},
    {"_estrides", (getter)t_estrides, NULL, "Strides in elements.", NULL},
    {"_dtype", (getter)t_dtype, NULL, "kiln dtype code.", NULL},
    {"ndim", (getter)t_ndim, NULL, "Number of axes.", NULL},
    {"size", (getter)t_size, NULL, "Number of elements.", NULL},
    {"_data", (getter)t_data, NULL, "Address of element [0,...,0].", NULL},
    {"_is_contiguous", (getter)t_contig, NULL, "Row-major contiguous.", NULL},
    {"ctx", (getter)t_ctx, NULL, "The Context.", NULL},
    {"name", (getter)t_name, (setter)t_set_name, "Name shown in the memory report.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

#define T_STATUS(self, s)                                                                     \
    do {                                                                                      \
        if ((s) != KILN_OK) return raise_ctx((s), kiln_tensor_ctx((self)->t));                \
    } while (0)

/* _slice(list of (start, stop, step, is_index)), None meaning omitted. */
static PyObject *t_slice(TensorObject *self, PyObject *arg)
{
    PyObject *seq = PySequence_Fast(arg, "argument 'index': must be a sequence");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > KILN_MAX_DIMS) {
        Py_DECREF(seq);
        return PyErr_Format(PyExc_IndexError, "argument 'index': too many indices (%zd) for %d axes", n,
                            kiln_tensor_ndim(self->t));
    }
    kiln_slice s[KILN_MAX_DIMS];
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *it = PySequence_Fast_GET_ITEM(seq, i);
        PyObject *a, *b, *c;
        int idx;
        if (!PyArg_ParseTuple(it, "OOOp", &a, &b, &c, &idx)) {
            Py_DECREF(seq);
            return NULL;
        }
        PyObject *parts[3] = {a, b, c};
        int64_t vals[3];
        for (int k = 0; k < 3; k++) {
            if (parts[k] == Py_None) {
                vals[k] = KILN_NONE;
                continue;
            }
            PyObject *num = PyNumber_Index(parts[k]);
            int over = 0;
            long long v = num ? PyLong_AsLongLongAndOverflow(num, &over) : -1;
            Py_XDECREF(num);
            if (!num || (v == -1 && PyErr_Occurred())) {
                Py_DECREF(seq);
                return NULL;
            }
            if (idx && over) {
                Py_DECREF(seq);
                return PyErr_Format(PyExc_IndexError, "argument 'index': index %S is out of bounds for axis %zd",
                                    parts[k], i);
            }
            /* numpy's clamping for any Python int: past int64 is as far as int64 reaches, and
             * INT64_MIN (kiln's "omitted") is one step short of it, which no axis can tell apart */
            vals[k] = over > 0 ? INT64_MAX : over < 0 || v == INT64_MIN ? INT64_MIN + 1 : (int64_t)v;
        }
        s[i] = (kiln_slice){vals[0], vals[1], vals[2], idx};
    }
    Py_DECREF(seq);
    kiln_tensor *out = NULL;
    kiln_status st = kiln_tensor_slice(self->t, (int)n, s, &out);
    T_STATUS(self, st);
    return wrap_tensor(out, self->ctx);
}

static PyObject *t_permute(TensorObject *self, PyObject *arg)
{
    kiln_tensor *out = NULL;
    kiln_status st;
    if (arg == Py_None) {
        st = kiln_tensor_permute(self->t, NULL, &out);
    } else {
        int64_t a64[KILN_MAX_DIMS];
        int n = 0;
        if (parse_shape(arg, a64, &n, "axes") < 0) return NULL;
        if (n != kiln_tensor_ndim(self->t))
            return PyErr_Format(PyExc_ValueError, "argument 'axes': %d axes given for a tensor of %d", n,
                                kiln_tensor_ndim(self->t));
        int axes[KILN_MAX_DIMS];
        for (int i = 0; i < n; i++) axes[i] = (int)a64[i];
        st = kiln_tensor_permute(self->t, axes, &out);
    }
    T_STATUS(self, st);
    return wrap_tensor(out, self->ctx);
}

static PyObject *t_reshape(TensorObject *self, PyObject *arg)
{
    int64_t shape[KILN_MAX_DIMS];
    int n = 0;
    if (parse_shape(arg, shape, &n, "shape") < 0) return NULL;
    kiln_tensor *out = NULL;
    kiln_status st = kiln_tensor_reshape(self->t, n, shape, &out);
    T_STATUS(self, st);
    return wrap_tensor(out, self->ctx);
}

static PyObject *t_broadcast_to(TensorObject *self, PyObject *arg)
{
    int64_t shape[KILN_MAX_DIMS];
    int n = 0;
    if (parse_shape(arg, shape, &n, "shape") < 0) return NULL;
    kiln_tensor *out = NULL;
    kiln_status st = kiln_tensor_broadcast_to(self->t, n, shape, &out);
    T_STATUS(self, st);
    return wrap_tensor(out, self->ctx);
}

static PyObject *t_copy(TensorObject *self, PyObject *arg)
{
    kiln_dtype dt;
    if (parse_dtype(arg, &dt, "dtype") < 0) return NULL;
    const char *file;
    int line;
    get_site(&file, &line);
    kiln_tensor *out = NULL;
    kiln_status st = kiln_tensor_copy_at(self->t, dt, &out, file, line);
    T_STATUS(self, st);
    return wrap_tensor(out, self->ctx);
}

static PyObject *t_contiguous(TensorObject *self, PyObject *unused)
{
    (void)unused;
    const char *file;
    int line;
    get_site(&file, &line);
    kiln_tensor *out = NULL;
    kiln_status st = kiln_tensor_contiguous_at(self->t, &out, file, line);
    T_STATUS(self, st);
    return wrap_tensor(out, self->ctx);
}

/* _read(buffer, dtype): copies the elements (row-major) into a writable C-contiguous buffer. */
static PyObject *t_read(TensorObject *self, PyObject *args)
{
    PyObject *buf, *dto;
    kiln_dtype dt;
    if (!PyArg_ParseTuple(args, "OO", &buf, &dto)) return NULL;
    if (parse_dtype(dto, &dt, "dtype") < 0) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(buf, &view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) return NULL;
    int64_t n = kiln_tensor_numel(self->t);
    if ((size_t)view.len != (size_t)n * kiln_dtype_size(dt)) {
        PyBuffer_Release(&view);
        return PyErr_Format(PyExc_ValueError, "argument 'out': %zd bytes, the tensor needs %lld", view.len,
                            (long long)((size_t)n * kiln_dtype_size(dt)));
    }
    kiln_status st = n ? kiln_tensor_read(self->t, view.buf, dt) : KILN_OK;
    PyBuffer_Release(&view);
    T_STATUS(self, st);
    Py_RETURN_NONE;
}

/* _write(buffer, dtype): copies a C-contiguous buffer of numel elements into the view. */
static PyObject *t_write(TensorObject *self, PyObject *args)
{
    PyObject *buf, *dto;
    kiln_dtype dt;
    if (!PyArg_ParseTuple(args, "OO", &buf, &dto)) return NULL;
    if (parse_dtype(dto, &dt, "dtype") < 0) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(buf, &view, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    int64_t n = kiln_tensor_numel(self->t);
    if ((size_t)view.len != (size_t)n * kiln_dtype_size(dt)) {
        PyBuffer_Release(&view);
        return PyErr_Format(PyExc_ValueError, "argument 'value': %zd bytes, the tensor needs %lld", view.len,
                            (long long)((size_t)n * kiln_dtype_size(dt)));
    }
    kiln_status st = n ? kiln_tensor_write(self->t, view.buf, dt) : KILN_OK;
    PyBuffer_Release(&view);
    T_STATUS(self, st);
    Py_RETURN_NONE;
}

/* ---- DLPack export (the DLPack ABI, v0.8 DLManagedTensor) ----------------------------------- */

typedef struct {
    int32_t device_type, device_id;
} DLDevice;
typedef struct {
    uint8_t code, bits;
    uint16_t lanes;
} DLDataType;
typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides;
    uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

typedef struct {
    DLManagedTensor m;
    kiln_tensor *t;
    int64_t shape[KILN_MAX_DIMS], strides[KILN_MAX_DIMS];
} dl_holder;

static void dl_deleter(DLManagedTensor *m)
{
    dl_holder *h = (dl_holder *)m->manager_ctx;
    kiln_tensor_release(h->t);
    free(h);
}

static void dl_capsule_destructor(PyObject *cap)
{
    if (PyCapsule_IsValid(cap, "dltensor")) {
        DLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
        if (m && m->deleter) m->deleter(m);
    } else {
        PyErr_Clear();
    }
}

static int dl_dtype(kiln_dtype dt, DLDataType *out)
{
    switch (dt) {
    case KILN_DTYPE_F32: *out = (DLDataType){2, 32, 1}; return 0;
    case KILN_DTYPE_F16: *out = (DLDataType){2, 16, 1}; return 0;
    case KILN_DTYPE_BF16: *out = (DLDataType){4, 16, 1}; return 0;
    case KILN_DTYPE_F64: *out = (DLDataType){2, 64, 1}; return 0;
    case KILN_DTYPE_I8: *out = (DLDataType){0, 8, 1}; return 0;
    case KILN_DTYPE_U8: *out = (DLDataType){1, 8, 1}; return 0;
    case KILN_DTYPE_I32: *out = (DLDataType){0, 32, 1}; return 0;
    default: return -1;
    }
}

static PyObject *t_dlpack_device(TensorObject *self, PyObject *unused)
{
    (void)unused;
    int cuda = kiln_ctx_device(kiln_tensor_ctx(self->t)) == KILN_DEVICE_CUDA;
    int index = self->ctx ? ((CtxObject *)self->ctx)->device_index : 0;
    return Py_BuildValue("(ii)", cuda ? 2 : 1, cuda ? index : 0);
}

static PyObject *dlpack_export(TensorObject *self, kiln_tensor *t);

static PyObject *t_dlpack(TensorObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"stream", "max_version", "dl_device", "copy", NULL};
    PyObject *stream = Py_None, *maxv = Py_None, *dev = Py_None, *copy = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|$OOOO", kwlist, &stream, &maxv, &dev, &copy)) return NULL;
    (void)stream;
    (void)maxv;
    (void)dev;
    kiln_tensor *src = self->t;
    if (copy == Py_True) { /* the consumer asks for memory of its own: export a fresh copy */
        const char *file;
        int line;
        get_site(&file, &line);
        kiln_status cs = kiln_tensor_copy_at(self->t, KILN_DTYPE_AUTO, &src, file, line);
        T_STATUS(self, cs);
    } else {
        kiln_tensor_retain(src);
    }
    PyObject *r = dlpack_export(self, src);
    kiln_tensor_release(src);
    return r;
}

/* Exports t (a view of self's context) as a DLPack capsule; the capsule holds its own
 * reference to t. */
static PyObject *dlpack_export(TensorObject *self, kiln_tensor *t)
{
    kiln_ctx *c = kiln_tensor_ctx(t);
    /* The consumer may use the data on any stream: finish kiln's queued work first. */
    kiln_status st = kiln_ctx_synchronize(c);
    if (st != KILN_OK) return raise_ctx(st, c);
    dl_holder *h = calloc(1, sizeof *h);
    if (!h) return PyErr_NoMemory();
    int nd = kiln_tensor_ndim(t);
    if (dl_dtype(kiln_tensor_dtype(t), &h->m.dl_tensor.dtype) < 0) {
        free(h);
        return PyErr_Format(PyExc_TypeError, "argument 'self': dtype %s has no DLPack code",
                            kiln_dtype_name(kiln_tensor_dtype(t)));
    }
    for (int i = 0; i < nd; i++) {
        h->shape[i] = kiln_tensor_shape(t)[i];
        h->strides[i] = kiln_tensor_strides(t)[i];
    }
    int cuda = kiln_ctx_device(c) == KILN_DEVICE_CUDA;
    h->t = kiln_tensor_retain(t);
    h->m.dl_tensor.data = kiln_tensor_data(t);
    h->m.dl_tensor.device =
        (DLDevice){cuda ? 2 : 1, cuda && self->ctx ? ((CtxObject *)self->ctx)->device_index : 0};
    h->m.dl_tensor.ndim = nd;
    h->m.dl_tensor.shape = h->shape;
    h->m.dl_tensor.strides = h->strides;
    h->m.dl_tensor.byte_offset = 0;
    h->m.manager_ctx = h;
    h->m.deleter = dl_deleter;
    PyObject *cap = PyCapsule_New(&h->m, "dltensor", dl_capsule_destructor);
    if (!cap) {
        dl_deleter(&h->m);
        return NULL;
    }
    return cap;
}

/* ---- DLPack import: a tensor over a producer's memory, without a copy ------------------------ */

/* The kiln dtype of a DLPack dtype; otherwise -1 with the DLPack dtype named in buf
 * ("int64 (code 0, bits 64, lanes 1)"). */
static int dl_to_kiln(DLDataType d, kiln_dtype *out, char *buf, size_t cap)
{
    kiln_dtype k = KILN_DTYPE_AUTO;
    if (d.lanes == 1) {
        switch (d.code) {
        case 0: k = d.bits == 8 ? KILN_DTYPE_I8 : d.bits == 32 ? KILN_DTYPE_I32 : k; break;
        case 1: k = d.bits == 8 ? KILN_DTYPE_U8 : k; break;
        case 2:
            k = d.bits == 16 ? KILN_DTYPE_F16 : d.bits == 32 ? KILN_DTYPE_F32 : d.bits == 64 ? KILN_DTYPE_F64 : k;
            break;
        case 4: k = d.bits == 16 ? KILN_DTYPE_BF16 : k; break;
        default: break;
        }
    }
    if (k != KILN_DTYPE_AUTO) {
        *out = k;
        return 0;
    }
    /* DLPack's codes: 0 int, 1 uint, 2 float, 3 opaque handle, 4 bfloat, 5 complex, 6 bool,
     * 7..14 float8 variants, 15..16 float6, 17 float4 */
    static const char *const kinds[] = {"int", "uint", "float", "opaque", "bfloat", "complex", "bool"};
    char kind[32];
    if (d.code == 6) snprintf(kind, sizeof kind, "bool");
    else if (d.code < 6) snprintf(kind, sizeof kind, "%s%u", kinds[d.code], (unsigned)d.bits);
    else
        snprintf(kind, sizeof kind, "%s",
                 d.code <= 14 ? "float8" : d.code <= 16 ? "float6" : d.code == 17 ? "float4" : "unknown");
    snprintf(buf, cap, "%s (code %u, bits %u, lanes %u)", kind, (unsigned)d.code, (unsigned)d.bits, (unsigned)d.lanes);
    return -1;
}

/* kiln's release callback for an imported DLManagedTensor: hands it back to its producer.
 * It may run where Python does not hold the GIL (a tensor released from C): take it. */
static void dl_import_release(void *user)
{
    DLManagedTensor *m = user;
    if (!m->deleter || !Py_IsInitialized()) return; /* interpreter gone: leak rather than crash */
    PyGILState_STATE g = PyGILState_Ensure();
    m->deleter(m);
    PyGILState_Release(g);
}

static PyMethodDef tensor_methods[] = {
    {"_slice", (PyCFunction)t_slice, METH_O, "Basic slicing view."},
    {"_permute", (PyCFunction)t_permute, METH_O, "Permuted view (None reverses)."},
    {"_reshape", (PyCFunction)t_reshape, METH_O, "Reshaped view."},
    {"_broadcast_to", (PyCFunction)t_broadcast_to, METH_O, "Broadcast view."},
    {"_copy", (PyCFunction)t_copy, METH_O, "Contiguous copy in dtype (0 = same)."},
    {"_contiguous", (PyCFunction)t_contiguous, METH_NOARGS, "Self when contiguous, else a copy."},
    {"_read", (PyCFunction)t_read, METH_VARARGS, "Copy into a host buffer."},
    {"_write", (PyCFunction)t_write, METH_VARARGS, "Copy from a host buffer."},
    {"__dlpack__", (PyCFunction)(void (*)(void))t_dlpack, METH_VARARGS | METH_KEYWORDS, "DLPack capsule."},
    {"__dlpack_device__", (PyCFunction)t_dlpack_device, METH_NOARGS, "(device type, device id)."},
    {NULL, NULL, 0, NULL}};

/* Buffer protocol: zero-copy access for numpy on the CPU backend. */
static int tensor_getbuffer(TensorObject *self, Py_buffer *view, int flags)
{
    view->obj = NULL;
    kiln_ctx *c = kiln_tensor_ctx(self->t);
    if (kiln_ctx_device(c) != KILN_DEVICE_CPU) {
        PyErr_SetString(PyExc_BufferError, "kiln: the buffer protocol works on the CPU backend only");
        return -1;
    }
    static char fmt_f[] = "f", fmt_e[] = "e", fmt_d[] = "d", fmt_b[] = "b", fmt_B[] = "B", fmt_i[] = "i";
    char *fmt;
    switch (kiln_tensor_dtype(self->t)) {
    case KILN_DTYPE_F32: fmt = fmt_f; break;
    case KILN_DTYPE_F16: fmt = fmt_e; break;
    case KILN_DTYPE_F64: fmt = fmt_d; break;
    case KILN_DTYPE_I8: fmt = fmt_b; break;
    case KILN_DTYPE_U8: fmt = fmt_B; break;
    case KILN_DTYPE_I32: fmt = fmt_i; break;
    default:
        PyErr_Format(PyExc_BufferError, "kiln: dtype %s has no buffer format",
                     kiln_dtype_name(kiln_tensor_dtype(self->t)));
        return -1;
    }
    int contiguous = kiln_tensor_is_contiguous(self->t);
    int nd0 = kiln_tensor_ndim(self->t);
    int want_c = (flags & PyBUF_C_CONTIGUOUS) == PyBUF_C_CONTIGUOUS;
    int want_f = (flags & PyBUF_F_CONTIGUOUS) == PyBUF_F_CONTIGUOUS;
    int want_any = (flags & PyBUF_ANY_CONTIGUOUS) == PyBUF_ANY_CONTIGUOUS;
    if (!contiguous && ((flags & PyBUF_STRIDES) != PyBUF_STRIDES || want_c || want_f || want_any)) {
        PyErr_SetString(PyExc_BufferError, "kiln: the view is not contiguous (ask for strides)");
        return -1;
    }
    if (want_f && nd0 > 1) {
        PyErr_SetString(PyExc_BufferError, "kiln: tensors are row-major (C order), not Fortran order");
        return -1;
    }
    /* A broadcast view (stride 0 on an axis longer than 1) aliases: read-only, as in kiln. */
    int readonly = 0;
    for (int i = 0; i < nd0; i++)
        if (kiln_tensor_strides(self->t)[i] == 0 && kiln_tensor_shape(self->t)[i] > 1) readonly = 1;
    if (readonly && (flags & PyBUF_WRITABLE)) {
        PyErr_SetString(PyExc_BufferError, "kiln: a broadcast view is read-only");
        return -1;
    }
    if (kiln_ctx_synchronize(c) != KILN_OK) {
        PyErr_SetString(PyExc_BufferError, kiln_last_error(c));
        return -1;
    }
    int nd = kiln_tensor_ndim(self->t);
    Py_ssize_t isz = (Py_ssize_t)kiln_dtype_size(kiln_tensor_dtype(self->t));
    Py_ssize_t *arr = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(2 * nd + 1));
    if (!arr) {
        PyErr_NoMemory();
        return -1;
    }
    for (int i = 0; i < nd; i++) {
        arr[i] = (Py_ssize_t)kiln_tensor_shape(self->t)[i];
        arr[nd + i] = (Py_ssize_t)kiln_tensor_strides(self->t)[i] * isz;
    }
    static char dummy[8];
    void *p = kiln_tensor_data(self->t);
    view->buf = p ? p : dummy;
    view->len = (Py_ssize_t)kiln_tensor_numel(self->t) * isz;
    view->readonly = readonly;
    view->itemsize = isz;
    view->format = (flags & PyBUF_FORMAT) ? fmt : NULL;
    view->ndim = nd;
    view->shape = (flags & PyBUF_ND) == PyBUF_ND ? arr : NULL;
    view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? arr + nd : NULL;
    view->suboffsets = NULL;
    view->internal = arr;
    Py_INCREF(self);
    view->obj = (PyObject *)self;
    return 0;
}

static void tensor_releasebuffer(TensorObject *self, Py_buffer *view)
{
    (void)self;
    PyMem_Free(view->internal);
}

static PyBufferProcs tensor_as_buffer = {(getbufferproc)tensor_getbuffer, (releasebufferproc)tensor_releasebuffer};

static PyTypeObject TensorType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kiln._kiln.TensorBase",
    .tp_basicsize = sizeof(TensorObject),
    .tp_dealloc = (destructor)tensor_dealloc,
    .tp_as_number = &tensor_as_number,
    .tp_as_buffer = &tensor_as_buffer,
    .tp_hash = PyObject_HashNotImplemented,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Handle of a kiln tensor (see kiln.Tensor).",
    .tp_richcompare = richcompare,
    .tp_methods = tensor_methods,
    .tp_getset = tensor_getset,
    .tp_init = (initproc)tensor_init,
    .tp_new = PyType_GenericNew,
};

/* ---- ExprBase ------------------------------------------------------------------------------ */

static void expr_dealloc(ExprObject *self)
{
    kiln_expr_release(self->e);
    Py_XDECREF(self->ctx);
    Py_XDECREF(self->value);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int expr_init(ExprObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    (void)args;
    (void)kw;
    PyErr_SetString(PyExc_TypeError, "kiln expressions are made by operators and kiln functions");
    return -1;
}

static PyObject *x_shape(ExprObject *self, void *c)
{
    (void)c;
    if (self->value) return t_shape((TensorObject *)self->value, NULL);
    return shape_tuple(kiln_expr_ndim(self->e), kiln_expr_shape(self->e));
}
static PyObject *x_ndim(ExprObject *self, void *c)
{
    (void)c;
    if (self->value) return t_ndim((TensorObject *)self->value, NULL);
    return PyLong_FromLong(kiln_expr_ndim(self->e));
}
static PyObject *x_dtype(ExprObject *self, void *c)
{
    (void)c;
    if (self->value) return t_dtype((TensorObject *)self->value, NULL);
    return PyLong_FromLong((long)kiln_expr_dtype(self->e));
}
static PyObject *x_size(ExprObject *self, void *c)
{
    (void)c;
    if (self->value) return t_size((TensorObject *)self->value, NULL);
    int nd = kiln_expr_ndim(self->e);
    const int64_t *sh = kiln_expr_shape(self->e);
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= sh[i];
    return PyLong_FromLongLong(n);
}
static PyObject *x_evaluated(ExprObject *self, void *c)
{
    (void)c;
    return PyBool_FromLong(self->value != NULL);
}
static PyObject *x_nodes(ExprObject *self, void *c)
{
    (void)c;
    return PyLong_FromSsize_t(self->value ? 1 : self->size);
}
static PyObject *x_ctx(ExprObject *self, void *c)
{
    (void)c;
    PyObject *r = self->ctx ? self->ctx : Py_None;
    Py_INCREF(r);
    return r;
}

static PyGetSetDef expr_getset[] = {
    {"shape", (getter)x_shape, NULL, "Shape of the result.", NULL},
    {"ndim", (getter)x_ndim, NULL, "Number of axes of the result.", NULL},
    {"_dtype", (getter)x_dtype, NULL, "kiln dtype code of the result.", NULL},
    {"size", (getter)x_size, NULL, "Number of elements of the result.", NULL},
    {"_evaluated", (getter)x_evaluated, NULL, "Whether the value has been computed.", NULL},
    {"_nodes", (getter)x_nodes, NULL, "Nodes in the tree (upper bound).", NULL},
    {"ctx", (getter)x_ctx, NULL, "The Context.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject ExprType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kiln._kiln.ExprBase",
    .tp_basicsize = sizeof(ExprObject),
    .tp_dealloc = (destructor)expr_dealloc,
    .tp_as_number = &expr_as_number,
    .tp_hash = PyObject_HashNotImplemented,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Handle of a lazy kiln expression (see kiln.Expr).",
    .tp_richcompare = richcompare,
    .tp_getset = expr_getset,
    .tp_init = (initproc)expr_init,
    .tp_new = PyType_GenericNew,
};

/* ---- module functions ------------------------------------------------------------------------ */

static PyObject *m_setup(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *tc, *ec, *conv, *dflt, *emap, *prefix;
    if (!PyArg_ParseTuple(args, "O!O!OOO!U", &PyType_Type, &tc, &PyType_Type, &ec, &conv, &dflt, &PyDict_Type, &emap,
                          &prefix))
        return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)tc, &TensorType) || !PyType_IsSubtype((PyTypeObject *)ec, &ExprType)) {
        PyErr_SetString(PyExc_TypeError, "argument 'tensor_cls'/'expr_cls': must subclass TensorBase / ExprBase");
        return NULL;
    }
    Py_INCREF(tc);
    Py_XSETREF(tensor_cls, (PyTypeObject *)tc);
    Py_INCREF(ec);
    Py_XSETREF(expr_cls, (PyTypeObject *)ec);
    Py_INCREF(conv);
    Py_XSETREF(converter, conv);
    Py_INCREF(dflt);
    Py_XSETREF(default_ctx_fn, dflt);
    Py_INCREF(emap);
    Py_XSETREF(exc_map, emap);
    Py_INCREF(prefix);
    Py_XSETREF(pkg_prefix, prefix);
    Py_RETURN_NONE;
}

static PyObject *m_set_current(PyObject *self, PyObject *c)
{
    (void)self;
    if (c != Py_None && !PyObject_TypeCheck(c, &CtxType))
        return PyErr_Format(PyExc_TypeError, "argument 'ctx': expected a Context, got %s", Py_TYPE(c)->tp_name);
    PyObject *old = current_ctx;
    if (c == Py_None) {
        current_ctx = NULL;
    } else {
        Py_INCREF(c);
        current_ctx = c;
    }
    if (old) return old; /* hands the reference back */
    Py_RETURN_NONE;
}

static PyObject *m_get_current(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    PyObject *c = (PyObject *)current_context();
    Py_XINCREF(c);
    return c;
}

static PyObject *get_ctx_arg(PyObject *c)
{
    if (c == Py_None) return (PyObject *)current_context();
    if (!PyObject_TypeCheck(c, &CtxType))
        return PyErr_Format(PyExc_TypeError, "argument 'ctx': expected a Context, got %s", Py_TYPE(c)->tp_name);
    return c;
}

static PyObject *m_empty(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *c, *dto, *shp;
    double value = 0.0;
    int fill = 0;
    if (!PyArg_ParseTuple(args, "OOO|pd", &c, &dto, &shp, &fill, &value)) return NULL;
    kiln_dtype dt;
    if (parse_dtype(dto, &dt, "dtype") < 0) return NULL;
    int64_t shape[KILN_MAX_DIMS];
    int nd = 0;
    if (parse_shape(shp, shape, &nd, "shape") < 0) return NULL;
    if (!(c = get_ctx_arg(c))) return NULL;
    const char *file;
    int line;
    get_site(&file, &line);
    kiln_tensor *out = NULL;
    kiln_status s = fill ? kiln_tensor_full_at(ctx_of(c), dt, nd, shape, value, &out, file, line)
                         : kiln_tensor_empty_at(ctx_of(c), dt, nd, shape, &out, file, line);
    if (s != KILN_OK) return raise_ctx(s, ctx_of(c));
    return wrap_tensor(out, c);
}

static PyObject *m_arange(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *c, *dto;
    double start, stop, step;
    if (!PyArg_ParseTuple(args, "OOddd", &c, &dto, &start, &stop, &step)) return NULL;
    kiln_dtype dt;
    if (parse_dtype(dto, &dt, "dtype") < 0) return NULL;
    if (!(c = get_ctx_arg(c))) return NULL;
    const char *file;
    int line;
    get_site(&file, &line);
    kiln_tensor *out = NULL;
    kiln_status s = kiln_tensor_arange_at(ctx_of(c), dt, start, stop, step, &out, file, line);
    if (s != KILN_OK) return raise_ctx(s, ctx_of(c));
    return wrap_tensor(out, c);
}

/* from_buffer(ctx, dtype, shape, buffer, src_dtype): a new tensor from C-contiguous host data. */
static PyObject *m_from_buffer(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *c, *dto, *shp, *buf, *sdto;
    if (!PyArg_ParseTuple(args, "OOOOO", &c, &dto, &shp, &buf, &sdto)) return NULL;
    kiln_dtype dt, sdt;
    if (parse_dtype(dto, &dt, "dtype") < 0 || parse_dtype(sdto, &sdt, "src_dtype") < 0) return NULL;
    int64_t shape[KILN_MAX_DIMS];
    int nd = 0;
    if (parse_shape(shp, shape, &nd, "shape") < 0) return NULL;
    if (!(c = get_ctx_arg(c))) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(buf, &view, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= shape[i];
    if (n < 0 || (size_t)view.len != (size_t)n * kiln_dtype_size(sdt)) {
        PyBuffer_Release(&view);
        return PyErr_Format(PyExc_ValueError, "argument 'buffer': %zd bytes do not hold the shape's %lld elements",
                            view.len, (long long)n);
    }
    const char *file;
    int line;
    get_site(&file, &line);
    kiln_tensor *out = NULL;
    static char dummy[8];
    kiln_status s = kiln_tensor_from_host_at(ctx_of(c), dt, nd, shape, view.buf ? view.buf : dummy, sdt, &out,
                                             file, line);
    PyBuffer_Release(&view);
    if (s != KILN_OK) return raise_ctx(s, ctx_of(c));
    return wrap_tensor(out, c);
}

/* wrap_dlpack(ctx, capsule): a Tensor over the memory of an unconsumed "dltensor" capsule,
 * which it consumes (renamed "used_dltensor"; kiln calls the producer's deleter when the last
 * view goes). When the memory cannot be wrapped (a dtype kiln lacks, another device, an
 * unaligned pointer) it returns a str saying why and leaves the capsule to its owner. */
static PyObject *m_wrap_dlpack(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *c, *cap;
    if (!PyArg_ParseTuple(args, "OO", &c, &cap)) return NULL;
    if (!(c = get_ctx_arg(c))) return NULL;
    if (!PyCapsule_IsValid(cap, "dltensor"))
        return PyErr_Format(PyExc_TypeError, "argument 'capsule': %s is not an unconsumed DLPack capsule ('dltensor')",
                            Py_TYPE(cap)->tp_name);
    DLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
    if (!m) return NULL;
    const DLTensor *dl = &m->dl_tensor;
    kiln_ctx *k = ctx_of(c);
    kiln_dtype dt;
    char name[96];
    if (dl_to_kiln(dl->dtype, &dt, name, sizeof name) < 0)
        return PyUnicode_FromFormat("DLPack dtype %s has no kiln dtype", name);
    int cuda = kiln_ctx_device(k) == KILN_DEVICE_CUDA;
    int want_type = cuda ? 2 : 1, want_id = cuda ? ((CtxObject *)c)->device_index : 0;
    if (dl->device.device_type != want_type || (cuda && dl->device.device_id != want_id))
        return PyUnicode_FromFormat("the memory is on DLPack device (%d, %d), the context works on (%d, %d)",
                                    (int)dl->device.device_type, (int)dl->device.device_id, want_type, want_id);
    if (dl->ndim < 0 || dl->ndim > KILN_MAX_DIMS)
        return PyUnicode_FromFormat("%d axes, kiln allows at most %d", (int)dl->ndim, KILN_MAX_DIMS);
    char *data = (char *)dl->data + dl->byte_offset;
    if ((uintptr_t)data % kiln_dtype_size(dt) != 0)
        return PyUnicode_FromFormat("the data pointer is not aligned to the %d-byte elements",
                                    (int)kiln_dtype_size(dt));
    const char *file;
    int line;
    get_site(&file, &line);
    kiln_tensor *t = NULL;
    kiln_status st = kiln_tensor_wrap_at(k, data, dt, (int)dl->ndim, dl->shape, dl->strides, dl_import_release, m, &t,
                                         file, line);
    if (st != KILN_OK) return raise_ctx(st, k); /* the capsule still owns m */
    /* From here kiln owns m: the capsule must never call the deleter (DLPack's rename). */
    if (PyCapsule_SetName(cap, "used_dltensor") < 0) {
        PyErr_Clear();
        PyCapsule_SetDestructor(cap, NULL);
        PyErr_Clear();
    }
    return wrap_tensor(t, c);
}

/* dot(C, A, B, alpha, beta, relu, bias, trans_a, trans_b) on tensors. */
static PyObject *m_dot(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *C, *A, *B, *bias, *stats = Py_None;
    double alpha, beta;
    int relu, ta = 0, tb = 0, bias_rows = 0;
    if (!PyArg_ParseTuple(args, "OOOddpO|pppO", &C, &A, &B, &alpha, &beta, &relu, &bias, &ta, &tb, &bias_rows,
                          &stats))
        return NULL;
    if (!IS_TENSOR(C)) return PyErr_Format(PyExc_TypeError, "argument 'out': expected a kiln Tensor");
    if (!IS_TENSOR(A)) return PyErr_Format(PyExc_TypeError, "argument 'a': expected a kiln Tensor");
    if (!IS_TENSOR(B)) return PyErr_Format(PyExc_TypeError, "argument 'b': expected a kiln Tensor");
    if (bias != Py_None && !IS_TENSOR(bias))
        return PyErr_Format(PyExc_TypeError, "argument 'bias': expected a kiln Tensor or None");
    if (stats != Py_None && !IS_TENSOR(stats))
        return PyErr_Format(PyExc_TypeError, "argument 'stats': expected a kiln Tensor or None");
    kiln_gemm_args g = {.trans_a = ta,
                        .trans_b = tb,
                        .relu = relu,
                        .bias = bias == Py_None ? NULL : ((TensorObject *)bias)->t,
                        .bias_rows = bias_rows,
                        .stats = stats == Py_None ? NULL : ((TensorObject *)stats)->t};
    TensorObject *c = (TensorObject *)C;
    kiln_status s = kiln_dot(c->t, ((TensorObject *)A)->t, ((TensorObject *)B)->t, alpha, beta, &g);
    if (s != KILN_OK) return raise_ctx(s, kiln_tensor_ctx(c->t));
    Py_RETURN_NONE;
}

static PyObject *m_version(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyUnicode_FromString(kiln_version());
}

static PyObject *m_status_name(PyObject *self, PyObject *arg)
{
    (void)self;
    long v = PyLong_AsLong(arg);
    if (v == -1 && PyErr_Occurred()) return NULL;
    return PyUnicode_FromString(kiln_status_name((kiln_status)v));
}

static PyObject *m_dtype_size(PyObject *self, PyObject *arg)
{
    (void)self;
    kiln_dtype dt;
    if (parse_dtype(arg, &dt, "dtype") < 0) return NULL;
    return PyLong_FromSize_t(kiln_dtype_size(dt));
}

static PyObject *m_last_error(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyUnicode_FromString(kiln_last_error(NULL));
}

static PyMethodDef module_methods[] = {
    {"_setup", m_setup, METH_VARARGS, "Registers the Python classes and hooks."},
    {"set_current", m_set_current, METH_O, "Sets the current Context; returns the previous one."},
    {"get_current", m_get_current, METH_NOARGS, "The current Context (made on first use)."},
    {"empty", m_empty, METH_VARARGS, "empty(ctx, dtype, shape[, fill, value])."},
    {"arange", m_arange, METH_VARARGS, "arange(ctx, dtype, start, stop, step)."},
    {"from_buffer", m_from_buffer, METH_VARARGS, "from_buffer(ctx, dtype, shape, buffer, src_dtype)."},
    {"wrap_dlpack", m_wrap_dlpack, METH_VARARGS, "wrap_dlpack(ctx, capsule) -> Tensor over its memory, or str."},
    {"binary", m_binary, METH_VARARGS, "binary(op, a, b) -> Expr."},
    {"unary", m_unary, METH_VARARGS, "unary(op, x) -> Expr."},
    {"reduce", m_reduce, METH_VARARGS, "reduce(op, x, axes|None, keepdims) -> Expr."},
    {"clip", m_clip, METH_VARARGS, "clip(x, lo, hi) -> Expr."},
    {"where", m_where, METH_VARARGS, "where(c, a, b) -> Expr."},
    {"cast", m_cast, METH_VARARGS, "cast(x, dtype) -> Expr."},
    {"generator", m_generator, METH_VARARGS, "generator(kind[, p]) -> Expr (0 rand, 1 randn, 2 bernoulli)."},
    {"dropout", m_dropout, METH_VARARGS, "dropout(x, p) -> Expr."},
    {"value", m_value, METH_O, "The Tensor value of a Tensor or Expr (cached)."},
    {"eval", m_eval, METH_VARARGS, "eval(x, dtype) -> new Tensor."},
    {"assign", m_assign, METH_VARARGS, "assign(dst, value[, round])."},
    {"dot", m_dot, METH_VARARGS, "dot(C, A, B, alpha, beta, relu, bias[, trans_a, trans_b, bias_rows, stats])."},
    {"version", m_version, METH_NOARGS, "Version of the linked C library."},
    {"status_name", m_status_name, METH_O, "Name of a status code."},
    {"dtype_size", m_dtype_size, METH_O, "Element size of a dtype code."},
    {"last_error", m_last_error, METH_NOARGS, "The thread's context-less last error."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_kiln", "kiln's CPython extension (binds include/kiln.h).",
                                        -1, module_methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__kiln(void)
{
    if (PyType_Ready(&CtxType) < 0 || PyType_Ready(&TensorType) < 0 || PyType_Ready(&ExprType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (!m) return NULL;
    site_files = PyDict_New();
    if (!site_files) goto fail;
    Py_INCREF(&CtxType);
    if (PyModule_AddObject(m, "Context", (PyObject *)&CtxType) < 0) goto fail;
    Py_INCREF(&TensorType);
    if (PyModule_AddObject(m, "TensorBase", (PyObject *)&TensorType) < 0) goto fail;
    Py_INCREF(&ExprType);
    if (PyModule_AddObject(m, "ExprBase", (PyObject *)&ExprType) < 0) goto fail;
    if (PyModule_AddIntConstant(m, "MAX_DIMS", KILN_MAX_DIMS) < 0 ||
        PyModule_AddIntConstant(m, "MAX_LAZY_NODES", MAX_LAZY_NODES) < 0)
        goto fail;
#define ADD_STATUS(name, value, text)                                                         \
    if (PyModule_AddIntConstant(m, #name, value) < 0) goto fail;
    KILN_STATUS_LIST(ADD_STATUS)
#undef ADD_STATUS
#define ADD_DTYPE(NAME, name, size, isfloat, ctype)                                           \
    if (PyModule_AddIntConstant(m, "DTYPE_" #NAME, KILN_DTYPE_##NAME) < 0) goto fail;
    KILN_DTYPE_LIST(ADD_DTYPE)
#undef ADD_DTYPE
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
