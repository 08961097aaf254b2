/* Recording a remembered ufunc call (shoal/numpy/_fast_ufunc.py, record) in C for the common case.
 *
 * A loop body replayed from the plan cache spent about 3.6 us recording each operation, over
 * half of it in the Python of record() around the compiled bookkeeping: building the call's key
 * of operand kinds, reading the warnings filters and NumPy's error state from their caches,
 * looking up the call's warning site, making the operands. record() here does the same steps
 * on the same caches and tables, reading each module global that the Python reads where the
 * Python reads it (a test or a program that replaces one sees it used), and calls the same
 * functions for everything else. Whenever a step is not the common case (an operand of another
 * kind, an axis order other than C's, a signature not kept, a cache that is stale, small
 * settled operands), it calls _fast_ufunc.recorded, the Python rest of the path, having changed
 * nothing: the answer is always the Python path's.
 */
#include "../_shape_size.h"
#include "../_slot_offset.h"
#include "_fast_record_reads.h"
#include "_fast_record_state.h"

/* 1 if `strides` (a tuple of ints) has an axis with a smaller stride than the next one. */
static int
reordered(PyObject *strides)
{
    Py_ssize_t count = PyTuple_GET_SIZE(strides);
    for (Py_ssize_t i = 0; i + 1 < count; i++) {
        Py_ssize_t here = PyLong_AsSsize_t(PyTuple_GET_ITEM(strides, i));
        Py_ssize_t next = PyLong_AsSsize_t(PyTuple_GET_ITEM(strides, i + 1));
        if (PyErr_Occurred()) {
            PyErr_Clear();
            return 1;
        }
        if (here < next) {
            return 1;
        }
    }
    return 0;
}

/* _fast_ufunc._int_kind: which of the integer dtypes bBhHiIqQ hold `value` (a tuple of 8 bools),
 * or NULL (no error) where no 64-bit integer holds it. */
static PyObject *
int_kind(PyObject *value)
{
    static const long long low[8] = {-128, 0, -32768, 0, -2147483648LL, 0, LLONG_MIN, 0};
    static const long long high[8] = {127, 255, 32767, 65535, 2147483647LL, 4294967295LL, LLONG_MAX, LLONG_MAX};  /* Q: and above, where it overflows */
    int overflow = 0;
    long long number = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (overflow < 0 || (number == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return NULL;
    }
    if (overflow > 0) {
        PyLong_AsUnsignedLongLong(value);
        if (PyErr_Occurred()) {
            PyErr_Clear();
            return NULL;
        }
    }
    PyObject *kind = PyTuple_New(8);
    if (kind == NULL) {
        PyErr_Clear();
        return NULL;
    }
    for (int i = 0; i < 8; i++) {
        int holds = overflow > 0 ? i == 7 : number >= low[i] && number <= high[i];
        PyTuple_SET_ITEM(kind, i, Py_NewRef(holds ? Py_True : Py_False));
    }
    return kind;
}

/* A lazy operand's kind (its view's dtype and shape); NULL without an error where the view is
 * missing or its axes are not in C's order (the Python key then orders them). */
static PyObject *
lazy_kind(PyObject *value)
{
    PyObject *view = slot(value, S_LAZY_VIEW);
    PyObject *dtype = view == NULL ? NULL : slot(view, S_VIEW_DTYPE);
    PyObject *shape = view == NULL ? NULL : slot(view, S_VIEW_SHAPE);
    PyObject *strides = view == NULL ? NULL : slot(view, S_VIEW_STRIDES);
    if (dtype == NULL || shape == NULL || strides == NULL || !PyTuple_CheckExact(shape) || !PyTuple_CheckExact(strides) || reordered(strides)) {
        return NULL;
    }
    return PyTuple_Pack(2, dtype, shape);
}

/* _fast_ufunc.key for the common case: NULL with *declined set where the Python key decides
 * (or would answer None), NULL with an error, or the key. */
static PyObject *
key_of(PyObject *ufunc, PyObject *inputs, PyObject *out, int *declined)
{
    Py_ssize_t count = PyTuple_GET_SIZE(inputs);
    PyObject *key = PyTuple_New(count + 1 + (out != Py_None));
    if (key == NULL) {
        return NULL;
    }
    PyTuple_SET_ITEM(key, 0, Py_NewRef(ufunc));
    int lazy = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *value = PyTuple_GET_ITEM(inputs, i);
        PyTypeObject *type = Py_TYPE(value);
        PyObject *kind = NULL;
        if (type == (PyTypeObject *)configured[C_LAZY]) {
            kind = lazy_kind(value);
            lazy = 1;
        }
        else if (type == &PyFloat_Type || type == &PyBool_Type || type == &PyComplex_Type) {
            kind = Py_NewRef((PyObject *)type);
        }
        else if (type == &PyLong_Type) {
            kind = int_kind(value);
        }
        else if (PyObject_TypeCheck(value, (PyTypeObject *)configured[C_GENERIC]) && type != (PyTypeObject *)configured[C_OBJECT_SCALAR]) {
            kind = PyObject_GetAttr(value, interned[I_DTYPE]);
        }
        if (kind == NULL) {
            *declined = !PyErr_Occurred();
            Py_DECREF(key);
            return NULL;
        }
        PyTuple_SET_ITEM(key, i + 1, kind);
    }
    if (out != Py_None) {
        PyObject *view = slot(out, S_LAZY_VIEW);
        PyObject *readonly = slot(out, S_LAZY_READONLY), *scalar = slot(out, S_LAZY_SCALAR);
        if (view == NULL || readonly != Py_False || scalar != Py_False) {
            *declined = 1;
            Py_DECREF(key);
            return NULL;
        }
        PyObject *kind = PyTuple_Pack(3, interned[I_OUT], slot(view, S_VIEW_DTYPE), slot(view, S_VIEW_SHAPE));
        if (kind == NULL) {
            Py_DECREF(key);
            return NULL;
        }
        PyTuple_SET_ITEM(key, count + 1, kind);
    }
    if (!lazy) {
        *declined = 1;
        Py_DECREF(key);
        return NULL;
    }
    return key;
}

/* The operands recorded for `inputs`: each lazy array's view, each scalar's constant. */
static PyObject *
operands_of(PyObject *inputs)
{
    Py_ssize_t count = PyTuple_GET_SIZE(inputs);
    PyObject *operands = PyTuple_New(count);
    for (Py_ssize_t i = 0; operands != NULL && i < count; i++) {
        PyObject *value = PyTuple_GET_ITEM(inputs, i);
        PyObject *operand = Py_IS_TYPE(value, (PyTypeObject *)configured[C_LAZY]) ? Py_NewRef(slot(value, S_LAZY_VIEW))
                                                                                   : PyObject_CallOneArg(configured[C_NEW_CONST], value);
        if (operand == NULL) {
            Py_CLEAR(operands);
            break;
        }
        PyTuple_SET_ITEM(operands, i, operand);
    }
    return operands;
}

/* The recording itself, once the signature, modes and site are known: compiled_recording's
 * record_call into `out`, or record_new and the new lazy array. */
static PyObject *
record_with(PyObject *runtime, PyObject *signature, PyObject *inputs, PyObject *out, PyObject *site)
{
    PyObject *operands = operands_of(inputs);
    if (operands == NULL) {
        return NULL;
    }
    PyObject *result = NULL;
    if (out != Py_None) {
        PyObject *function = global(C_RECORDING_GLOBALS, I_RECORD_CALL);
        PyObject *arguments[7] = {runtime, slot(signature, S_SIG_OPCODE), slot(out, S_LAZY_VIEW), operands, slot(signature, S_SIG_OUT_SIZE),
                                  slot(signature, S_SIG_LARGEST), site};
        PyObject *done = function == NULL ? NULL : PyObject_Vectorcall(function, arguments, 7, NULL);
        result = done == NULL ? NULL : Py_NewRef(out);
        Py_XDECREF(done);
    }
    else {
        PyObject *function = global(C_RECORDING_GLOBALS, I_RECORD_NEW);
        PyObject *shape = slot(signature, S_SIG_SHAPE);
        PyObject *arguments[9] = {runtime, slot(signature, S_SIG_OPCODE), slot(signature, S_SIG_DTYPE), shape, slot(signature, S_SIG_STRIDES),
                                  slot(signature, S_SIG_SIZE), operands, slot(signature, S_SIG_LARGEST), site};
        PyObject *made = function == NULL ? NULL : PyObject_Vectorcall(function, arguments, 9, NULL);
        if (made != NULL && PyTuple_Check(made) && PyTuple_GET_SIZE(made) == 2) {
            PyObject *scalar = PyTuple_GET_SIZE(shape) == 0 ? Py_True : Py_False;
            PyObject *lazy[7] = {PyTuple_GET_ITEM(made, 0), PyTuple_GET_ITEM(made, 1), Py_None, Py_False, scalar, Py_None, configured[C_NO_QUIET_STORES]};
            result = PyObject_Vectorcall(configured[C_MAKE_LAZY], lazy, 7, NULL);
        }
        else if (made != NULL) {
            PyErr_SetString(PyExc_TypeError, "record_new did not answer a (base, view) pair");
        }
        Py_XDECREF(made);
    }
    Py_DECREF(operands);
    return result;
}

/* The element count of lazy array `value`'s view; -1 where it has no view or the count does not
 * fit a Py_ssize_t (the Python path then counts it). */
static Py_ssize_t
lazy_elements(PyObject *value)
{
    PyObject *view = slot(value, S_LAZY_VIEW);
    PyObject *shape = view == NULL ? NULL : slot(view, S_VIEW_SHAPE);
    return shape == NULL ? -1 : shape_size(shape);
}

/* 1 where the output and every lazy operand are below `limit` (below_threshold: in elements or
 * bytes; the Python path's settled_ufunc decides such a call), 0 where one is not, -1 where one
 * cannot be told. */
static int
small_settled(PyObject *inputs, PyObject *out, Py_ssize_t limit)
{
    Py_ssize_t count = PyTuple_GET_SIZE(inputs);
    for (Py_ssize_t i = -1; i < count; i++) {
        PyObject *value = i < 0 ? out : PyTuple_GET_ITEM(inputs, i);
        if (value == Py_None || !Py_IS_TYPE(value, (PyTypeObject *)configured[C_LAZY])) {
            continue;
        }
        Py_ssize_t elements = lazy_elements(value);
        if (elements < 0) {
            return -1;
        }
        PyObject *view = slot(value, S_LAZY_VIEW);
        int below = below_threshold_of(elements, view == NULL ? NULL : slot(view, S_VIEW_DTYPE), interned[I_ITEMSIZE], limit);
        if (below != 1) {
            return below;  /* 0: one is not; -1: its dtype cannot be read */
        }
    }
    return 1;
}

/* The common case of _fast_ufunc.recorded. 1 where it was taken (*result: the answer, or NULL
 * with an error), 0 where the Python rest of the path decides (nothing was changed). */
static int
common_case(PyObject *ufunc, PyObject *inputs, PyObject *out, PyObject *eager, PyObject **result)
{
    PyObject *runtime = NULL;
    Py_ssize_t count = PyTuple_GET_SIZE(inputs);
    for (Py_ssize_t i = 0; i < count && runtime == NULL; i++) {
        PyObject *value = PyTuple_GET_ITEM(inputs, i);
        if (Py_IS_TYPE(value, (PyTypeObject *)configured[C_LAZY])) {
            PyObject *base = slot(value, S_LAZY_BASE);
            if (base == NULL || slot(value, S_LAZY_VIEW) == NULL || !PyObject_TypeCheck(base, (PyTypeObject *)configured[C_BASE_TYPE])) {
                return 0;
            }
            runtime = slot(base, S_BASE_RUNTIME);
            if (runtime == NULL) {
                return 0;
            }
        }
    }
    if (runtime == NULL || (out != Py_None && slot(out, S_LAZY_VIEW) == NULL)) {
        return 0;
    }
    Py_INCREF(runtime);
    PyObject *threshold = PyObject_GetAttr(runtime, interned[I_SETTLED_THRESHOLD]);
    Py_ssize_t limit = threshold == NULL ? -1 : PyLong_AsSsize_t(threshold);
    Py_XDECREF(threshold);
    int declined = 0;
    PyObject *key = NULL, *signature = NULL, *filters = NULL, *site = NULL;
    if (limit < 0 || (eager == Py_None && limit > 0 && small_settled(inputs, out, limit) != 0)) {
        declined = 1;
    }
    else if ((key = key_of(ufunc, inputs, out, &declined)) != NULL) {
        signature = Py_XNewRef(PyDict_GetItemWithError(configured[C_SIGNATURES], key));
        declined = signature == NULL || !Py_IS_TYPE(signature, (PyTypeObject *)configured[C_SIGNATURE_TYPE]);
    }
    long modes = 0;
    if (!declined && !PyErr_Occurred() && (filters = filters_now()) != NULL) {
        modes = modes_now(filters);
        declined = modes == -1;
    }
    if (!declined && !PyErr_Occurred()) {
        site = slot(signature, S_SIG_SILENT) == Py_True || modes == 0 ? Py_NewRef(Py_None) : site_of(modes, filters, &declined);
    }
    if (declined || PyErr_Occurred()) {
        PyErr_Clear();  /* the Python path meets any error again, where NumPy's caller sees it */
        declined = 1;
    }
    else {
        *result = record_with(runtime, signature, inputs, out, site);
    }
    Py_DECREF(runtime);
    Py_XDECREF(key);
    Py_XDECREF(signature);
    Py_XDECREF(filters);
    Py_XDECREF(site);
    return !declined;
}

static PyObject *
record(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "record takes 3 arguments (%zd given)", nargs);
        return NULL;
    }
    if (configured[C_RECORDED] == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "shoal.numpy._fast_record is not configured");
        return NULL;
    }
    PyObject *ufunc = args[0], *inputs = args[1], *out = args[2];
    if (ufunc == configured[C_MATMUL] || !PyTuple_CheckExact(inputs)) {
        return PyObject_Vectorcall(configured[C_RECORD_PYTHON], args, 3, NULL);
    }
    if (out != Py_None && !Py_IS_TYPE(out, (PyTypeObject *)configured[C_LAZY])) {
        return Py_NewRef(configured[C_NOT_FAST]);
    }
    PyObject *eager = Py_None;
    PyObject *settled = global(C_FAST_GLOBALS, I_SETTLED_CALLS);  /* as the Python reads it: None where not built (or switched off) */
    if (settled == NULL) {
        return PyErr_Occurred() ? NULL : PyObject_Vectorcall(configured[C_RECORD_PYTHON], args, 3, NULL);
    }
    if (settled != Py_None) {
        PyObject *call = PyObject_GetAttr(settled, interned[I_CALL]);
        PyObject *arguments[4] = {ufunc, inputs, configured[C_UFUNC_KIND], out};
        eager = call == NULL ? NULL : PyObject_Vectorcall(call, arguments, 4, NULL);
        Py_XDECREF(call);
        if (eager == NULL || (eager != Py_None && eager != configured[C_NOT_SETTLED])) {
            return eager;
        }
        Py_DECREF(eager);  /* None or the marker, which configured[] keeps alive */
    }
    PyObject *result = NULL;
    if (!common_case(ufunc, inputs, out, eager, &result)) {
        PyObject *arguments[5] = {ufunc, inputs, out, eager, two};
        result = PyObject_Vectorcall(configured[C_RECORDED], arguments, 5, NULL);
    }
    return result;
}

static int
offset_of(int which, int type_index, const char *name)
{
    PyObject *text = PyUnicode_InternFromString(name);
    if (text == NULL) {
        return -1;
    }
    offsets[which] = slot_offset((PyTypeObject *)configured[type_index], text, 0);
    Py_DECREF(text);
    return offsets[which] < 0 ? -1 : 0;
}

static PyObject *
configure(PyObject *module, PyObject *settings)
{
    if (!PyDict_Check(settings)) {
        PyErr_SetString(PyExc_TypeError, "configure takes a dict of the objects record() works with");
        return NULL;
    }
    PyObject *given[C_COUNT];
    for (int i = 0; i < C_COUNT; i++) {
        given[i] = PyDict_GetItemString(settings, configured_names[i]);
        if (given[i] == NULL) {
            PyErr_Format(PyExc_KeyError, "configure is missing %s", configured_names[i]);
            return NULL;
        }
    }
    for (int i = C_LAZY; i <= C_OBJECT_SCALAR; i++) {
        if (!PyType_Check(given[i])) {
            PyErr_Format(PyExc_TypeError, "%s is not a class", configured_names[i]);
            return NULL;
        }
    }
    if (!PyDict_Check(given[C_SIGNATURES]) || !PyDict_Check(given[C_FAST_GLOBALS]) || !PyDict_Check(given[C_FP_GLOBALS]) ||
        !PyDict_Check(given[C_FILTER_GLOBALS]) || !PyDict_Check(given[C_WARNINGS_GLOBALS]) || !PyDict_Check(given[C_RECORDING_GLOBALS]) ||
        (given[C_STATE] != Py_None && !PyContextVar_CheckExact(given[C_STATE]))) {
        PyErr_SetString(PyExc_TypeError, "configure: the tables must be dicts and the state a context variable or None");
        return NULL;
    }
    for (int i = 0; i < C_COUNT; i++) {
        Py_XSETREF(configured[i], Py_NewRef(given[i]));
    }
    static const struct {
        int which, type;
        const char *name;
    } slots[S_COUNT] = {
        {S_LAZY_VIEW, C_LAZY, "_view"}, {S_LAZY_BASE, C_LAZY, "_base"}, {S_LAZY_READONLY, C_LAZY, "_readonly"},
        {S_LAZY_SCALAR, C_LAZY, "_scalar"}, {S_BASE_RUNTIME, C_BASE_TYPE, "runtime"}, {S_VIEW_DTYPE, C_VIEW_TYPE, "dtype"},
        {S_VIEW_SHAPE, C_VIEW_TYPE, "shape"}, {S_VIEW_STRIDES, C_VIEW_TYPE, "strides"}, {S_SIG_OPCODE, C_SIGNATURE_TYPE, "opcode"},
        {S_SIG_DTYPE, C_SIGNATURE_TYPE, "dtype"}, {S_SIG_SHAPE, C_SIGNATURE_TYPE, "shape"}, {S_SIG_STRIDES, C_SIGNATURE_TYPE, "strides"},
        {S_SIG_SIZE, C_SIGNATURE_TYPE, "size"}, {S_SIG_LARGEST, C_SIGNATURE_TYPE, "largest"}, {S_SIG_OUT_SIZE, C_SIGNATURE_TYPE, "out_size"},
        {S_SIG_SILENT, C_SIGNATURE_TYPE, "silent"},
    };
    for (int i = 0; i < S_COUNT; i++) {
        if (offset_of(slots[i].which, slots[i].type, slots[i].name) < 0) {
            Py_CLEAR(configured[C_RECORDED]);  /* record() refuses to run half configured */
            return NULL;
        }
    }
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"configure", configure, METH_O,
     "configure(settings): the classes, tables, module globals and functions record() works with, by name."},
    {"record", (PyCFunction)(void (*)(void))record, METH_FASTCALL,
     "record(ufunc, inputs, out): shoal.numpy._fast_ufunc.record, in C for the common case."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef fast_record_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "shoal.numpy._fast_record",
    .m_doc = "Recording a remembered ufunc call, in C for the common case.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__fast_record(void)
{
    for (int i = 0; i < I_COUNT; i++) {
        interned[i] = PyUnicode_InternFromString(interned_texts[i]);
        if (interned[i] == NULL) {
            return NULL;
        }
    }
    two = PyLong_FromLong(2);
    if (two == NULL) {
        return NULL;
    }
    return PyModule_Create(&fast_record_module);
}
