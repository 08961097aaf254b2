/* A fused group's view-block through NumPy's own inner loops, over small tiles, without the
 * interpreter lock (the Python side is shoal/engine/node/run/tile_loops.py).
 *
 * loop_of(ufunc, type numbers) finds the inner loop NumPy's ufunc has for exactly those types.
 * copy_loop(itemsize) is a same-dtype copy in the same form (``copy`` and ``fill`` steps).
 * cast_loop(from, to) is a cast between two type numbers in that form, for the casts that are
 * the C conversion and meet no floating-point condition.
 * run_loops(steps, operands, shape, tile) calls, tile after tile of the view-block, each step's loop
 * on each row of the tile: the same loops NumPy calls, so the same values, with the
 * temporaries a tile long instead of a NumPy call per step. It returns, per step, the
 * floating-point conditions its loops left in the processor's status (NumPy's bits: 1 divide
 * by zero, 2 overflow, 4 underflow, 8 invalid), read and cleared after each call as NumPy does
 * around a ufunc's loop; or -1 where an operand is not aligned to its items (the caller then
 * takes the NumPy path). The status flags are clear when it returns.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <fenv.h>
#include <string.h>

#define NPY_NO_DEPRECATED_API NPY_1_22_API_VERSION
#include <numpy/arrayobject.h>
#include <numpy/ufuncobject.h>

#define MAX_ARGS 8
#define WATCHED (FE_INVALID | FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW)

typedef void (*inner_loop)(char **, const npy_intp *, const npy_intp *, void *);

typedef struct {
    inner_loop function;
    void *data;
    int count;
    int operands[MAX_ARGS];
} Step;

enum { VIEW = 0, TEMP = 1, CONSTANT = 2 };

typedef struct {
    int kind;
    char *start;        /* VIEW: the view-block's first element; TEMP: the tile; CONSTANT: the value */
    npy_intp itemsize;
    npy_intp *strides;  /* VIEW: byte strides of the view-block's axes */
} Operand;

static PyObject *loop_of(PyObject *self, PyObject *args) {
    PyObject *object, *types;
    if (!PyArg_ParseTuple(args, "OO!", &object, &PyTuple_Type, &types)) {
        return NULL;
    }
    if (!PyObject_TypeCheck(object, &PyUFunc_Type)) {
        PyErr_SetString(PyExc_TypeError, "loop_of needs a ufunc");
        return NULL;
    }
    PyUFuncObject *ufunc = (PyUFuncObject *)object;
    int count = ufunc->nin + ufunc->nout;
    if (PyTuple_GET_SIZE(types) != count || count > MAX_ARGS || ufunc->functions == NULL) {
        Py_RETURN_NONE;
    }
    int wanted[MAX_ARGS];
    for (int k = 0; k < count; k++) {
        wanted[k] = (int)PyLong_AsLong(PyTuple_GET_ITEM(types, k));
        if (wanted[k] == -1 && PyErr_Occurred()) {
            return NULL;
        }
    }
    for (int i = 0; i < ufunc->ntypes; i++) {
        const char *loop_types = ufunc->types + (Py_ssize_t)i * count;
        int match = 1;
        for (int k = 0; k < count && match; k++) {
            match = (int)(unsigned char)loop_types[k] == wanted[k];
        }
        if (match && ufunc->functions[i] != NULL) {
            void *data = ufunc->data == NULL ? NULL : ufunc->data[i];
            return Py_BuildValue("(NN)", PyLong_FromVoidPtr((void *)ufunc->functions[i]), PyLong_FromVoidPtr(data));
        }
    }
    Py_RETURN_NONE;
}

/* Same-dtype copies (``copy``, ``fill``): the item size is the loop's data. */
static void copy_items(char **args, const npy_intp *count, const npy_intp *steps, void *data) {
    npy_intp size = (npy_intp)data, n = *count;
    char *in = args[0], *out = args[1];
    if (steps[0] == size && steps[1] == size) {
        memmove(out, in, (size_t)(n * size));
        return;
    }
    for (npy_intp i = 0; i < n; i++, in += steps[0], out += steps[1]) {
        memmove(out, in, (size_t)size);
    }
}

static PyObject *copy_loop(PyObject *self, PyObject *args) {
    Py_ssize_t itemsize;
    if (!PyArg_ParseTuple(args, "n", &itemsize)) {
        return NULL;
    }
    return Py_BuildValue("(NN)", PyLong_FromVoidPtr((void *)copy_items), PyLong_FromVoidPtr((void *)itemsize));
}

/* Casts NumPy makes as the C conversion (``(to)x``; into bool ``x != 0``), which meet no
 * condition it reports: into bool, out of bool, between integers, integers into floats, float32
 * into float64. A narrowing float cast (overflow) or a float into an integer (invalid) is not
 * among them. The loop's data is unused. */
#define CAST_LOOP(NAME, FROM, TO, CONVERT)                                                        \
    static void NAME(char **args, const npy_intp *count, const npy_intp *steps, void *data) {   \
        npy_intp n = *count;                                                                    \
        char *in = args[0], *out = args[1];                                                     \
        for (npy_intp i = 0; i < n; i++, in += steps[0], out += steps[1]) {                     \
            FROM x = *(FROM *)in;                                                               \
            *(TO *)out = CONVERT;                                                               \
        }                                                                                       \
    }

/* The casts out of one type, whose value each converts from ``VALUE`` (``x``, or ``x != 0``
 * out of bool, whose bytes other than 0 and 1 are True); into bool is always ``x != 0``. */
#define CASTS_FROM(FROM, F, VALUE)                                                                \
    CAST_LOOP(cast_##F##_b, FROM, npy_bool, (npy_bool)(x != 0))                                 \
    CAST_LOOP(cast_##F##_i1, FROM, npy_byte, (npy_byte)(VALUE))                                 \
    CAST_LOOP(cast_##F##_i2, FROM, npy_short, (npy_short)(VALUE))                               \
    CAST_LOOP(cast_##F##_i4, FROM, npy_int, (npy_int)(VALUE))                                   \
    CAST_LOOP(cast_##F##_i8, FROM, npy_longlong, (npy_longlong)(VALUE))                         \
    CAST_LOOP(cast_##F##_u1, FROM, npy_ubyte, (npy_ubyte)(VALUE))                               \
    CAST_LOOP(cast_##F##_u2, FROM, npy_ushort, (npy_ushort)(VALUE))                             \
    CAST_LOOP(cast_##F##_u4, FROM, npy_uint, (npy_uint)(VALUE))                                 \
    CAST_LOOP(cast_##F##_u8, FROM, npy_ulonglong, (npy_ulonglong)(VALUE))                       \
    CAST_LOOP(cast_##F##_f4, FROM, npy_float, (npy_float)(VALUE))                               \
    CAST_LOOP(cast_##F##_f8, FROM, npy_double, (npy_double)(VALUE))

CASTS_FROM(npy_bool, b, x != 0)
CASTS_FROM(npy_byte, i1, x)
CASTS_FROM(npy_short, i2, x)
CASTS_FROM(npy_int, i4, x)
CASTS_FROM(npy_longlong, i8, x)
CASTS_FROM(npy_ubyte, u1, x)
CASTS_FROM(npy_ushort, u2, x)
CASTS_FROM(npy_uint, u4, x)
CASTS_FROM(npy_ulonglong, u8, x)
CAST_LOOP(cast_f4_b, npy_float, npy_bool, (npy_bool)(x != 0))
CAST_LOOP(cast_f8_b, npy_double, npy_bool, (npy_bool)(x != 0))
CAST_LOOP(cast_f4_f8, npy_float, npy_double, (npy_double)x)

#define ROW(F) {cast_##F##_b, cast_##F##_i1, cast_##F##_i2, cast_##F##_i4, cast_##F##_i8, cast_##F##_u1, \
                cast_##F##_u2, cast_##F##_u4, cast_##F##_u8, cast_##F##_f4, cast_##F##_f8}

enum { CAST_TYPES = 11 };
/* Rows and columns: bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float32,
 * float64; NULL where the cast is not among those above. The diagonal is no cast (a same-dtype
 * step is a copy): cast_loop never hands it out. */
static const inner_loop CASTS[CAST_TYPES][CAST_TYPES] = {
    ROW(b), ROW(i1), ROW(i2), ROW(i4), ROW(i8), ROW(u1), ROW(u2), ROW(u4), ROW(u8),
    {cast_f4_b, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, cast_f4_f8},
    {cast_f8_b, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};

/* The position of a NumPy type in CASTS (sized types: the C names behind each type number), or -1. */
static int cast_position(int type, npy_intp itemsize) {
    switch (type) {
        case NPY_BOOL: return 0;
        case NPY_FLOAT: return 9;
        case NPY_DOUBLE: return 10;
        default: break;
    }
    int is_signed = PyTypeNum_ISSIGNED(type), is_unsigned = PyTypeNum_ISUNSIGNED(type);
    if (!is_signed && !is_unsigned) {
        return -1;
    }
    int size_index = itemsize == 1 ? 0 : itemsize == 2 ? 1 : itemsize == 4 ? 2 : itemsize == 8 ? 3 : -1;
    return size_index < 0 ? -1 : 1 + size_index + (is_unsigned ? 4 : 0);
}

static PyObject *cast_loop(PyObject *self, PyObject *args) {
    int from, to;
    if (!PyArg_ParseTuple(args, "ii", &from, &to)) {
        return NULL;
    }
    PyArray_Descr *from_descr = PyArray_DescrFromType(from), *to_descr = PyArray_DescrFromType(to);
    if (from_descr == NULL || to_descr == NULL) {
        Py_XDECREF(from_descr);
        Py_XDECREF(to_descr);
        return NULL;
    }
    int row = cast_position(from, PyDataType_ELSIZE(from_descr)), column = cast_position(to, PyDataType_ELSIZE(to_descr));
    Py_DECREF(from_descr);
    Py_DECREF(to_descr);
    if (row < 0 || column < 0 || row == column || CASTS[row][column] == NULL) {
        Py_RETURN_NONE;
    }
    return Py_BuildValue("(NO)", PyLong_FromVoidPtr((void *)CASTS[row][column]), Py_None);
}

static char *data_of(PyObject *array) {
    if (!PyArray_Check(array)) {
        PyErr_SetString(PyExc_TypeError, "an operand's memory must be an ndarray");
        return NULL;
    }
    return PyArray_BYTES((PyArrayObject *)array);
}

static int parse_steps(PyObject *steps, Step *parsed, Py_ssize_t step_count, Py_ssize_t operand_count) {
    for (Py_ssize_t s = 0; s < step_count; s++) {
        PyObject *item = PyTuple_GET_ITEM(steps, s);
        PyObject *function, *data, *indices;
        if (!PyArg_ParseTuple(item, "OOO!", &function, &data, &PyTuple_Type, &indices)) {
            return -1;
        }
        parsed[s].function = (inner_loop)PyLong_AsVoidPtr(function);
        parsed[s].data = data == Py_None ? NULL : PyLong_AsVoidPtr(data);
        if (PyErr_Occurred()) {
            return -1;
        }
        Py_ssize_t count = PyTuple_GET_SIZE(indices);
        if (count > MAX_ARGS || parsed[s].function == NULL) {
            PyErr_SetString(PyExc_ValueError, "a step has too many operands or no loop");
            return -1;
        }
        parsed[s].count = (int)count;
        for (Py_ssize_t k = 0; k < count; k++) {
            long index = PyLong_AsLong(PyTuple_GET_ITEM(indices, k));
            if (index < 0 || index >= operand_count) {
                if (!PyErr_Occurred()) {
                    PyErr_SetString(PyExc_ValueError, "a step names an operand that does not exist");
                }
                return -1;
            }
            parsed[s].operands[k] = (int)index;
        }
    }
    return 0;
}

/* 1 if parsed, 0 if an operand is misaligned, -1 on error. */
static int parse_operands(PyObject *operands, Operand *parsed, Py_ssize_t count, int ndim, npy_intp *strides) {
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *item = PyTuple_GET_ITEM(operands, i);
        int kind;
        PyObject *array, *item_strides;
        Py_ssize_t offset, itemsize;
        if (!PyArg_ParseTuple(item, "iOnnO!", &kind, &array, &offset, &itemsize, &PyTuple_Type, &item_strides)) {
            return -1;
        }
        char *data = data_of(array);
        if (data == NULL) {
            return -1;
        }
        Operand *operand = &parsed[i];
        operand->kind = kind;
        operand->start = data + offset;
        operand->itemsize = itemsize;
        operand->strides = strides + i * ndim;
        if (itemsize <= 0 || ((npy_uintp)operand->start % (npy_uintp)itemsize) != 0) {
            return 0;
        }
        if (kind == VIEW) {
            if (PyTuple_GET_SIZE(item_strides) != ndim) {
                PyErr_SetString(PyExc_ValueError, "a view's strides do not match the block's axes");
                return -1;
            }
            for (int d = 0; d < ndim; d++) {
                operand->strides[d] = PyLong_AsSsize_t(PyTuple_GET_ITEM(item_strides, d));
                if (operand->strides[d] % itemsize != 0) {
                    return PyErr_Occurred() ? -1 : 0;
                }
            }
        } else if (kind != TEMP && kind != CONSTANT) {
            PyErr_SetString(PyExc_ValueError, "an operand's kind is unknown");
            return -1;
        }
    }
    return 1;
}

typedef struct {
    int ndim;
    npy_intp *shape;
    npy_intp tile;
    Py_ssize_t step_count, operand_count;
    Step *steps;
    Operand *operands;
    npy_intp *row_offsets; /* per operand, per row of a tile */
    char **pointers;       /* per operand */
} Work;

static int numpy_bits(int raised) {
    return ((raised & FE_DIVBYZERO) ? 1 : 0) | ((raised & FE_OVERFLOW) ? 2 : 0) | ((raised & FE_UNDERFLOW) ? 4 : 0)
           | ((raised & FE_INVALID) ? 8 : 0);
}

/* The loops over the view-block; per step the conditions (<fenv.h> bits) they raised. */
static void run_block(Work *work, int *raised) {
    int ndim = work->ndim;
    npy_intp length = ndim == 0 ? 1 : work->shape[ndim - 1];
    npy_intp rows = 1;
    for (int d = 0; d + 1 < ndim; d++) {
        rows *= work->shape[d];
    }
    if (length == 0 || rows == 0) {
        return;
    }
    npy_intp chunk = length < work->tile ? length : work->tile;
    npy_intp rows_per_tile = length < work->tile ? work->tile / length : 1;
    npy_intp index[NPY_MAXDIMS];
    memset(index, 0, sizeof(index));
    feclearexcept(WATCHED);
    for (npy_intp row = 0; row < rows; row += rows_per_tile) {
        npy_intp tile_rows = rows - row < rows_per_tile ? rows - row : rows_per_tile;
        for (npy_intp r = 0; r < tile_rows; r++) {
            for (Py_ssize_t i = 0; i < work->operand_count; i++) {
                Operand *operand = &work->operands[i];
                npy_intp offset = 0;
                if (operand->kind == VIEW) {
                    for (int d = 0; d + 1 < ndim; d++) {
                        offset += index[d] * operand->strides[d];
                    }
                }
                work->row_offsets[i * work->tile + r] = offset;
            }
            for (int d = ndim - 2; d >= 0; d--) {
                if (++index[d] < work->shape[d]) {
                    break;
                }
                index[d] = 0;
            }
        }
        for (npy_intp column = 0; column < length; column += chunk) {
            npy_intp n = length - column < chunk ? length - column : chunk;
            for (Py_ssize_t s = 0; s < work->step_count; s++) {
                Step *step = &work->steps[s];
                npy_intp step_strides[MAX_ARGS];
                char *arguments[MAX_ARGS];
                for (int k = 0; k < step->count; k++) {
                    Operand *operand = &work->operands[step->operands[k]];
                    step_strides[k] = operand->kind == VIEW ? (ndim == 0 ? 0 : operand->strides[ndim - 1])
                                      : operand->kind == TEMP ? operand->itemsize : 0;
                }
                for (npy_intp r = 0; r < tile_rows; r++) {
                    for (int k = 0; k < step->count; k++) {
                        int i = step->operands[k];
                        Operand *operand = &work->operands[i];
                        if (operand->kind == VIEW) {
                            arguments[k] = operand->start + work->row_offsets[i * work->tile + r] + column * step_strides[k];
                        } else if (operand->kind == TEMP) {
                            arguments[k] = operand->start + r * n * operand->itemsize;
                        } else {
                            arguments[k] = operand->start;
                        }
                    }
                    step->function(arguments, &n, step_strides, step->data);
                    int flags = fetestexcept(WATCHED);
                    if (flags) {
                        raised[s] |= flags;
                        feclearexcept(flags);
                    }
                }
            }
        }
    }
}

static PyObject *run(PyObject *self, PyObject *args) {
    PyObject *steps, *operands, *shape;
    Py_ssize_t tile;
    if (!PyArg_ParseTuple(args, "O!O!O!n", &PyTuple_Type, &steps, &PyTuple_Type, &operands, &PyTuple_Type, &shape, &tile)) {
        return NULL;
    }
    int ndim = (int)PyTuple_GET_SIZE(shape);
    if (ndim > NPY_MAXDIMS || tile < 1) {
        PyErr_SetString(PyExc_ValueError, "too many axes or no tile");
        return NULL;
    }
    Work work;
    work.ndim = ndim;
    work.tile = tile;
    work.step_count = PyTuple_GET_SIZE(steps);
    work.operand_count = PyTuple_GET_SIZE(operands);
    npy_intp block_shape[NPY_MAXDIMS];
    for (int d = 0; d < ndim; d++) {
        block_shape[d] = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, d));
        if (block_shape[d] < 0) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_ValueError, "a negative extent");
            }
            return NULL;
        }
    }
    work.shape = block_shape;
    Py_ssize_t operand_count = work.operand_count > 0 ? work.operand_count : 1;
    work.steps = PyMem_Malloc(sizeof(Step) * (work.step_count > 0 ? work.step_count : 1));
    work.operands = PyMem_Malloc(sizeof(Operand) * operand_count);
    npy_intp *strides = PyMem_Malloc(sizeof(npy_intp) * operand_count * (ndim > 0 ? ndim : 1));
    work.row_offsets = PyMem_Malloc(sizeof(npy_intp) * operand_count * tile);
    PyObject *result = NULL;
    int *raised = NULL;
    if (work.steps == NULL || work.operands == NULL || strides == NULL || work.row_offsets == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (parse_steps(steps, work.steps, work.step_count, work.operand_count) < 0) {
        goto done;
    }
    int parsed = parse_operands(operands, work.operands, work.operand_count, ndim, strides);
    if (parsed < 0) {
        goto done;
    }
    if (parsed == 0) {
        result = PyLong_FromLong(-1);
        goto done;
    }
    raised = PyMem_Calloc(work.step_count > 0 ? work.step_count : 1, sizeof(int));
    if (raised == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    run_block(&work, raised);
    Py_END_ALLOW_THREADS
    if (PyErr_Occurred()) {
        goto done;
    }
    result = PyTuple_New(work.step_count);
    for (Py_ssize_t s = 0; result != NULL && s < work.step_count; s++) {
        PyTuple_SET_ITEM(result, s, PyLong_FromLong(numpy_bits(raised[s])));
    }
done:
    PyMem_Free(raised);
    PyMem_Free(work.steps);
    PyMem_Free(work.operands);
    PyMem_Free(strides);
    PyMem_Free(work.row_offsets);
    return result;
}

static PyMethodDef methods[] = {
    {"loop_of", loop_of, METH_VARARGS, "loop_of(ufunc, type numbers): (loop address, data address) of the ufunc's loop for exactly those types, or None."},
    {"copy_loop", copy_loop, METH_VARARGS, "copy_loop(itemsize): (loop address, data address) of a copy of items of that size."},
    {"cast_loop", cast_loop, METH_VARARGS, "cast_loop(from type number, to type number): (loop address, None) of a cast that meets no condition, or None."},
    {"run_loops", run, METH_VARARGS, "run_loops(steps, operands, shape, tile): per step the conditions its loops raised, or -1 where an operand is misaligned."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_tile_loops", NULL, -1, methods};

PyMODINIT_FUNC PyInit__tile_loops(void) {
    import_array();
    import_umath();
    return PyModule_Create(&module);
}
