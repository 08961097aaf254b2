/* A chunked pair of element-wise calls (shoal/engine/node/run/chunked_pairs.py) run row by row
 * in C: out = x OP2 (a OP1 b), the temporary one row (or a piece of one) in a buffer that stays
 * in L1, no NumPy call per chunk and no broadcast iterator. ``a -= np.outer(x, y)`` at 1000 x 1000
 * took NumPy 2.1-2.6 ms (its broadcast multiply alone 1.3 ms); this loop streams ``a`` once.
 *
 * Each operation is IEEE's, in NumPy's operand order, each result rounded before the next
 * (built with -ffp-contract=off, the two operations in separate loops: no fused multiply-add),
 * so the values are bit for bit NumPy's two calls'.
 * The status flags are read after each piece of each operation and returned per operation as
 * NumPy's condition bits (divide 1, overflow 2, underflow 4, invalid 8), as its two calls would
 * report them. Operands are float64 or float32, all of the output's type, two-dimensional and of
 * the output's shape (broadcast ones with zero strides); anything else raises TypeError.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <fenv.h>
#include <string.h>

#define PIECE 4096 /* elements of the temporary per step: 32 KiB of float64, in L1 */

enum { ADD = 0, SUBTRACT = 1, MULTIPLY = 2, DIVIDE = 3 };

static int numpy_bits(int raised) {
    int bits = 0;
    if (raised & FE_DIVBYZERO) bits |= 1;
    if (raised & FE_OVERFLOW) bits |= 2;
    if (raised & FE_UNDERFLOW) bits |= 4;
    if (raised & FE_INVALID) bits |= 8;
    return bits;
}

#define FE_WATCHED (FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW | FE_INVALID)

/* One operation over n elements: r[j] = p[j*sp] OP q[j*sq] (strides in elements; r contiguous). */
#define DEFINE_APPLY(NAME, T)                                                                      \
    static void NAME(int op, T *r, const T *p, Py_ssize_t sp, const T *q, Py_ssize_t sq,  \
                     Py_ssize_t n) {                                                               \
        Py_ssize_t j;                                                                              \
        if (sp == 1 && sq == 1) {                                                                  \
            switch (op) {                                                                          \
            case ADD: for (j = 0; j < n; j++) r[j] = p[j] + q[j]; break;                           \
            case SUBTRACT: for (j = 0; j < n; j++) r[j] = p[j] - q[j]; break;                      \
            case MULTIPLY: for (j = 0; j < n; j++) r[j] = p[j] * q[j]; break;                      \
            default: for (j = 0; j < n; j++) r[j] = p[j] / q[j]; break;                            \
            }                                                                                      \
        } else if (sp == 0 && sq == 1) {                                                           \
            const T s = p[0];                                                                      \
            switch (op) {                                                                          \
            case ADD: for (j = 0; j < n; j++) r[j] = s + q[j]; break;                              \
            case SUBTRACT: for (j = 0; j < n; j++) r[j] = s - q[j]; break;                         \
            case MULTIPLY: for (j = 0; j < n; j++) r[j] = s * q[j]; break;                         \
            default: for (j = 0; j < n; j++) r[j] = s / q[j]; break;                               \
            }                                                                                      \
        } else if (sp == 1 && sq == 0) {                                                           \
            const T s = q[0];                                                                      \
            switch (op) {                                                                          \
            case ADD: for (j = 0; j < n; j++) r[j] = p[j] + s; break;                              \
            case SUBTRACT: for (j = 0; j < n; j++) r[j] = p[j] - s; break;                         \
            case MULTIPLY: for (j = 0; j < n; j++) r[j] = p[j] * s; break;                         \
            default: for (j = 0; j < n; j++) r[j] = p[j] / s; break;                               \
            }                                                                                      \
        } else {                                                                                   \
            switch (op) {                                                                          \
            case ADD: for (j = 0; j < n; j++) r[j] = p[j * sp] + q[j * sq]; break;                 \
            case SUBTRACT: for (j = 0; j < n; j++) r[j] = p[j * sp] - q[j * sq]; break;            \
            case MULTIPLY: for (j = 0; j < n; j++) r[j] = p[j * sp] * q[j * sq]; break;            \
            default: for (j = 0; j < n; j++) r[j] = p[j * sp] / q[j * sq]; break;                  \
            }                                                                                      \
        }                                                                                          \
    }

/* Rows [begin, end): t = a OP1 b for as many rows (or one row's pieces) as the buffer holds,
 * then out = x OP2 t (or t OP2 x) for them. The flags are read after each step of each
 * operation and cleared only when raised (reading them is the cheaper half). */
#define DEFINE_ROWS(NAME, APPLY, T)                                                                \
    DEFINE_APPLY(APPLY, T)                                                                         \
    static void NAME(int op1, int op2, int temporary_first, Py_buffer *out, Py_buffer *a,          \
                     Py_buffer *b, Py_buffer *x, Py_ssize_t begin, Py_ssize_t end, int *flags1,    \
                     int *flags2) {                                                                \
        T buffer[PIECE], result[PIECE];                                                            \
        const Py_ssize_t size = sizeof(T), columns = out->shape[1];                                \
        const Py_ssize_t so = out->strides[1] / size, sa = a->strides[1] / size;                  \
        const Py_ssize_t sb = b->strides[1] / size, sx = x->strides[1] / size;                     \
        const Py_ssize_t width = columns < PIECE ? columns : PIECE;                                \
        const Py_ssize_t rows = columns < PIECE && columns > 0 ? PIECE / columns : 1;              \
        int raised, raised1 = 0, raised2 = 0;                                                      \
        feclearexcept(FE_WATCHED);                                                                 \
        for (Py_ssize_t first = begin; first < end; first += rows) {                               \
            const Py_ssize_t last = end - first < rows ? end : first + rows;                       \
            for (Py_ssize_t j = 0; j < columns; j += width) {                                      \
                const Py_ssize_t n = columns - j < width ? columns - j : width;                    \
                for (Py_ssize_t i = first; i < last; i++) {                                        \
                    const T *pa = (const T *)((const char *)a->buf + i * a->strides[0]);           \
                    const T *pb = (const T *)((const char *)b->buf + i * b->strides[0]);           \
                    APPLY(op1, buffer + (i - first) * n, pa + j * sa, sa, pb + j * sb, sb, n);     \
                }                                                                                  \
                if ((raised = fetestexcept(FE_WATCHED)) != 0) {                                    \
                    raised1 |= raised;                                                             \
                    feclearexcept(FE_WATCHED);                                                     \
                }                                                                                  \
                for (Py_ssize_t i = first; i < last; i++) {                                        \
                    T *o = (T *)((char *)out->buf + i * out->strides[0]) + j * so;                 \
                    const T *px = (const T *)((const char *)x->buf + i * x->strides[0]) + j * sx;  \
                    const T *t = buffer + (i - first) * n;                                         \
                    T *target = so == 1 ? o : result;                                              \
                    if (temporary_first)                                                           \
                        APPLY(op2, target, t, 1, px, sx, n);                                       \
                    else                                                                           \
                        APPLY(op2, target, px, sx, t, 1, n);                                       \
                    if (so != 1)                                                                   \
                        for (Py_ssize_t k = 0; k < n; k++) o[k * so] = result[k];                  \
                }                                                                                  \
                if ((raised = fetestexcept(FE_WATCHED)) != 0) {                                    \
                    raised2 |= raised;                                                             \
                    feclearexcept(FE_WATCHED);                                                     \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
        *flags1 = numpy_bits(raised1);                                                             \
        *flags2 = numpy_bits(raised2);                                                             \
    }

DEFINE_ROWS(rows_double, apply_double, double)
DEFINE_ROWS(rows_float, apply_float, float)

static int fits(Py_buffer *view, Py_ssize_t itemsize, Py_buffer *shape_of) {
    return view->ndim == 2 && view->itemsize == itemsize && view->format != NULL &&
           strcmp(view->format, itemsize == 8 ? "d" : "f") == 0 && view->strides[0] % itemsize == 0 &&
           view->strides[1] % itemsize == 0 && view->shape[0] == shape_of->shape[0] &&
           view->shape[1] == shape_of->shape[1];
}

static PyObject *pair_rows(PyObject *self, PyObject *args) {
    PyObject *objects[4]; /* out, a, b, x */
    int op1, op2, temporary_first;
    Py_ssize_t begin, end;
    if (!PyArg_ParseTuple(args, "iipOOOOnn", &op1, &op2, &temporary_first, &objects[0], &objects[1], &objects[2], &objects[3], &begin, &end))
        return NULL;
    if (op1 < ADD || op1 > DIVIDE || op2 < ADD || op2 > DIVIDE) {
        PyErr_SetString(PyExc_ValueError, "pair rows: unknown operation");
        return NULL;
    }
    Py_buffer views[4];
    int got = 0;
    PyObject *result = NULL;
    for (; got < 4; got++) {
        int flags = PyBUF_STRIDES | PyBUF_FORMAT | (got == 0 ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(objects[got], &views[got], flags) < 0)
            goto done;
    }
    Py_ssize_t itemsize = views[0].itemsize;
    for (int k = 0; k < 4; k++) {
        if ((itemsize != 8 && itemsize != 4) || !fits(&views[k], itemsize, &views[0])) {
            PyErr_SetString(PyExc_TypeError, "pair rows: operands must be 2-d float64 or float32 of the output's shape");
            goto done;
        }
    }
    if (begin < 0 || end > views[0].shape[0] || begin > end) {
        PyErr_SetString(PyExc_ValueError, "pair rows: rows out of range");
        goto done;
    }
    int flags1 = 0, flags2 = 0;
    Py_BEGIN_ALLOW_THREADS
    if (itemsize == 8)
        rows_double(op1, op2, temporary_first, &views[0], &views[1], &views[2], &views[3], begin, end, &flags1, &flags2);
    else
        rows_float(op1, op2, temporary_first, &views[0], &views[1], &views[2], &views[3], begin, end, &flags1, &flags2);
    Py_END_ALLOW_THREADS
    result = Py_BuildValue("(ii)", flags1, flags2);
done:
    while (got > 0)
        PyBuffer_Release(&views[--got]);
    return result;
}

static PyMethodDef methods[] = {
    {"pair_rows", pair_rows, METH_VARARGS,
     "pair_rows(op1, op2, temporary_first, out, a, b, x, begin, end) -> (flags1, flags2): rows "
     "[begin, end) of out = x OP2 (a OP1 b) (temporary_first: (a OP1 b) OP2 x); operations 0 add, "
     "1 subtract, 2 multiply, 3 divide; the NumPy condition bits each operation met."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_pair_rows", "A chunked pair's rows in C.", -1, methods};

PyMODINIT_FUNC PyInit__pair_rows(void) { return PyModule_Create(&module); }
