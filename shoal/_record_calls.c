/* The runtime's bookkeeping for an element-wise call recorded from a remembered signature
 * (Runtime.record_new and Runtime.record_call, shoal/runtime.py and shoal/recording_calls.py),
 * in C for the common case.
 *
 * Recording such a call in Python spent about 2 us on the runtime's side: taking the lock,
 * declaring the result's base, making its LazyBase, View and Instruction, recording the release
 * of the bases that died since, and noting what the batch reads and writes. record_new() and
 * record_call() do the same work on the runtime's own attributes, with the same results, when
 * nothing unusual is going on; otherwise (an engine not made yet, NumPy data carried or held,
 * a base held back or held by NumPy that the call names, a flush due) they call the Python
 * method of the same name, which does everything, so the answer is always the Python path's.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include "_runtime_attributes.h"
#include "_slot_offset.h"

static PyObject *make_base = NULL;        /* shoal.base_lives.make_base */
static PyObject *new_view = NULL;         /* shoal.frozen_values.new_view */
static PyObject *new_decl = NULL;         /* shoal.frozen_values.new_decl */
static PyObject *new_instruction = NULL;  /* shoal.frozen_values.new_instruction */
static PyTypeObject *view_type = NULL;    /* shoal.bytecode.View */
static Py_ssize_t view_base_offset = -1;  /* where a View keeps its base id */
static Py_ssize_t product_read_factor = 0;

static PyObject *zero = NULL;
static PyObject *one = NULL;

/* What record() read of the runtime: its __dict__, and the batch being recorded. */
typedef struct {
    PyObject *dict;
    PyObject *pending;       /* new reference */
    PyObject *instructions;  /* new reference */
    PyObject *released;      /* new reference */
    Py_ssize_t releases;
    PyObject *data;          /* new reference: the batch's NumPy data, read where bases were released */
} State;

/* 1 if the base of a View among `values` (a tuple) is a key of the runtime's dict `name`. */
static int
names_a_key_of(PyObject *dict, int name, PyObject *values, PyObject *output)
{
    PyObject *keys = attribute(dict, name);
    if (keys == NULL || !PyDict_Check(keys)) {
        return 1;
    }
    if (PyDict_GET_SIZE(keys) == 0) {
        return 0;
    }
    if (output != NULL && PyDict_Contains(keys, *(PyObject **)((char *)output + view_base_offset)) != 0) {
        return 1;
    }
    Py_ssize_t count = PyTuple_GET_SIZE(values);
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *value = PyTuple_GET_ITEM(values, i);
        if (Py_IS_TYPE(value, view_type) && PyDict_Contains(keys, *(PyObject **)((char *)value + view_base_offset)) != 0) {
            return 1;
        }
    }
    return 0;
}

/* The bytes of `data` (base id -> NumPy array) of the ids in `released`, or -1. */
static Py_ssize_t
dead_bytes(PyObject *data, PyObject *released)
{
    PyObject *iterator = PyObject_GetIter(released);
    if (iterator == NULL) {
        return -1;
    }
    Py_ssize_t total = 0;
    PyObject *base_id;
    while (total >= 0 && (base_id = PyIter_Next(iterator)) != NULL) {
        PyObject *array = PyDict_GetItemWithError(data, base_id);
        Py_DECREF(base_id);
        if (array != NULL) {
            PyObject *nbytes = PyObject_GetAttrString(array, "nbytes");
            Py_ssize_t count = nbytes == NULL ? -1 : PyLong_AsSsize_t(nbytes);
            Py_XDECREF(nbytes);
            total = count < 0 ? -1 : total + count;
        }
        else if (PyErr_Occurred()) {
            total = -1;
        }
    }
    Py_DECREF(iterator);
    return PyErr_Occurred() ? -1 : total;
}

/* Whether the common case holds (the State filled in), else 0: the Python method decides. The
 * call's output is `output` (a View, or NULL for a new base), its inputs `inputs`. */
static int
common_case(PyObject *output, PyObject *inputs, State *state)
{
    PyObject *dict = state->dict;
    PyObject *engine = attribute(dict, N_ENGINE);
    if (engine == NULL || engine == Py_None || !PyTuple_CheckExact(inputs)) {
        return 0;
    }
    if (!is_empty(dict, N_DROPPED) || !is_empty(dict, N_ORPHANS) || !is_empty(dict, N_CARRIED)) {
        return 0;
    }
    if (names_a_key_of(dict, N_HELD, inputs, output) || names_a_key_of(dict, N_DEFERRED, inputs, output)) {
        return 0;
    }
    Py_ssize_t dead_so_far = count_of(dict, N_DEAD_BYTES), flush_bytes = count_of(dict, N_FLUSH_BYTES);
    if (dead_so_far < 0 || flush_bytes < 0 || dead_so_far >= flush_bytes) {
        return 0;
    }
    state->released = Py_XNewRef(attribute(dict, N_RELEASED));
    PyObject *pending = attribute(dict, N_PENDING);
    if (state->released == NULL || pending == NULL) {
        return 0;
    }
    state->releases = PyObject_Length(state->released);
    if (state->releases < 0) {
        return 0;
    }
    if (state->releases > 0) {
        /* NumPy data the batch carries for a released base counts as dead bytes; where they
         * reach flush_bytes the Python path flushes first. */
        state->data = PyObject_GetAttr(pending, names[N_DATA]);
        if (state->data == NULL || !PyDict_Check(state->data)) {
            return 0;
        }
        if (PyDict_GET_SIZE(state->data) > 0) {
            Py_ssize_t dead = dead_bytes(state->data, state->released);
            if (dead < 0 || dead_so_far + dead >= flush_bytes) {
                return 0;
            }
        }
    }
    PyObject *instructions = PyObject_GetAttr(pending, names[N_INSTRUCTIONS]);
    if (instructions == NULL || !PyList_CheckExact(instructions)) {
        Py_XDECREF(instructions);
        return 0;
    }
    Py_ssize_t limit = count_of(dict, N_FLUSH_THRESHOLD);
    if (limit < 0 || PyList_GET_SIZE(instructions) + state->releases + 1 >= limit) {  /* a flush may be due */
        Py_DECREF(instructions);
        return 0;
    }
    Py_INCREF(pending);
    state->pending = pending;
    state->instructions = instructions;
    return 1;
}

/* Runtime._record_releases for the common case: a release instruction for every base that died. */
static int
record_releases(State *state)
{
    if (state->releases == 0) {
        return 0;
    }
    Py_ssize_t count = 0, dead = 0;
    int carried = state->data != NULL && PyDict_GET_SIZE(state->data) > 0;
    while (PyObject_Length(state->released) > 0) {
        PyObject *base_id = PyObject_CallMethodNoArgs(state->released, names[N_POPLEFT]);
        if (base_id == NULL) {
            return -1;
        }
        if (carried) {
            PyObject *array = PyDict_GetItemWithError(state->data, base_id);
            PyObject *nbytes = array == NULL ? NULL : PyObject_GetAttrString(array, "nbytes");
            if (nbytes != NULL) {
                dead += PyLong_AsSsize_t(nbytes);
                Py_DECREF(nbytes);
            }
            if (PyErr_Occurred()) {
                Py_DECREF(base_id);
                return -1;
            }
        }
        PyObject *attrs = Py_BuildValue("((OO))", names[N_BASE], base_id);
        Py_DECREF(base_id);
        if (attrs == NULL) {
            return -1;
        }
        PyObject *empty = PyTuple_New(0);
        PyObject *arguments[4] = {names[N_RELEASE], empty, empty, attrs};
        PyObject *instruction = empty == NULL ? NULL : PyObject_Vectorcall(new_instruction, arguments, 4, NULL);
        Py_XDECREF(empty);
        Py_DECREF(attrs);
        if (instruction == NULL || PyList_Append(state->instructions, instruction) < 0) {
            Py_XDECREF(instruction);
            return -1;
        }
        Py_DECREF(instruction);
        count++;
    }
    if (dead > 0) {
        PyObject *before = attribute(state->dict, N_DEAD_BYTES);
        PyObject *added = PyLong_FromSsize_t(dead);
        PyObject *sum = before == NULL || added == NULL ? NULL : PyNumber_Add(before, added);
        Py_XDECREF(added);
        int failed = sum == NULL || PyDict_SetItem(state->dict, names[N_DEAD_BYTES], sum) < 0;
        Py_XDECREF(sum);
        if (failed) {
            return -1;
        }
    }
    PyObject *stats = Py_XNewRef(attribute(state->dict, N_STATS));
    int failed = stats == NULL ? -1 : add_to_counter(stats, N_BASES_RELEASED, count);
    Py_XDECREF(stats);
    return failed;
}

/* The rest of Runtime._record_call once its checks passed: the instruction `op` writing
 * `output` from `inputs`, what it writes and reads, the run of small instructions, its site. */
static int
append_call(State *state, PyObject *op, PyObject *output, PyObject *inputs, PyObject *output_size, PyObject *largest_input, PyObject *site)
{
    PyObject *dict = state->dict;
    if (PyDict_SetItem(dict, names[N_DIRECT_RUN], zero) < 0) {
        return -1;
    }
    PyObject *outputs = PyTuple_Pack(1, output);
    if (outputs == NULL) {
        return -1;
    }
    PyObject *arguments[3] = {op, outputs, inputs};
    PyObject *instruction = PyObject_Vectorcall(new_instruction, arguments, 3, NULL);
    Py_DECREF(outputs);
    if (instruction == NULL || PyList_Append(state->instructions, instruction) < 0) {
        Py_XDECREF(instruction);
        return -1;
    }
    Py_DECREF(instruction);
    if (add_to_set(dict, N_WRITTEN, *(PyObject **)((char *)output + view_base_offset)) < 0) {
        return -1;
    }
    Py_ssize_t count = PyTuple_GET_SIZE(inputs);
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *value = PyTuple_GET_ITEM(inputs, i);
        if (Py_IS_TYPE(value, view_type) && add_to_set(dict, N_READ, *(PyObject **)((char *)value + view_base_offset)) < 0) {
            return -1;
        }
    }
    PyObject *threshold = attribute(dict, N_SETTLED_THRESHOLD);
    PyObject *run = attribute(dict, N_SMALL_RUN);
    if (threshold == NULL || run == NULL) {
        return -1;
    }
    Py_ssize_t limit = PyLong_AsSsize_t(threshold);
    Py_ssize_t size = PyLong_AsSsize_t(output_size);
    Py_ssize_t largest = PyLong_AsSsize_t(largest_input);
    if ((limit == -1 || size == -1 || largest == -1) && PyErr_Occurred()) {
        return -1;
    }
    int small = size < limit && largest <= product_read_factor * limit;
    PyObject *next = small ? PyNumber_Add(run, one) : Py_NewRef(zero);
    if (next == NULL || PyDict_SetItem(dict, names[N_SMALL_RUN], next) < 0) {
        Py_XDECREF(next);
        return -1;
    }
    Py_DECREF(next);
    if (site != Py_None) {
        PyObject *sites = attribute(dict, N_SITES);
        PyObject *position = PyLong_FromSsize_t(PyList_GET_SIZE(state->instructions) - 1);
        int failed = sites == NULL || position == NULL || PyDict_SetItem(sites, position, site) < 0;
        Py_XDECREF(position);
        if (failed) {
            return -1;
        }
    }
    return 0;
}

/* The new base of a record_new: its id, declaration, LazyBase and whole View, as
 * Runtime.record_new makes them. Returns the (base, view) pair. */
static PyObject *
declare_new_base(State *state, PyObject *runtime, PyObject *dtype, PyObject *shape, PyObject *strides, PyObject *size)
{
    PyObject *dict = state->dict;
    PyObject *base_id = NULL;
    PyObject *base = claim_new_base(runtime, dict, make_base, dtype, size, &base_id);
    if (base == NULL) {
        return NULL;
    }
    PyObject *result = NULL, *view = NULL;
    PyObject *decl_arguments[3] = {base_id, dtype, size};
    PyObject *decl = PyObject_Vectorcall(new_decl, decl_arguments, 3, NULL);
    PyObject *bases = decl == NULL ? NULL : PyObject_GetAttr(state->pending, names[N_BASES]);
    int failed = bases == NULL || PyList_Append(bases, decl) < 0 || add_to_set(dict, N_DECLARED, base_id) < 0;
    Py_XDECREF(bases);
    if (!failed) {
        PyObject *view_arguments[5] = {base_id, dtype, zero, shape, strides};
        view = PyObject_Vectorcall(new_view, view_arguments, 5, NULL);
        result = view == NULL ? NULL : PyTuple_Pack(2, base, view);
    }
    Py_DECREF(base_id);
    Py_XDECREF(decl);
    Py_DECREF(base);
    Py_XDECREF(view);
    return result;
}

/* The Python method `method` of the runtime args[0], called with the other arguments. */
static PyObject *
python_path(int method, PyObject *const *args, Py_ssize_t nargs)
{
    return PyObject_VectorcallMethod(names[method], args, nargs, NULL);
}

static PyObject *
record(PyObject *const *args, Py_ssize_t nargs, int method, Py_ssize_t expected)
{
    if (nargs != expected) {
        PyErr_Format(PyExc_TypeError, "%U takes %zd arguments (%zd given)", names[method], expected, nargs);
        return NULL;
    }
    if (make_base == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "shoal._record_calls is not configured");
        return NULL;
    }
    PyObject *runtime = args[0];
    State state = {NULL, NULL, NULL, NULL, 0, NULL};
    state.dict = PyObject_GenericGetDict(runtime, NULL);
    if (state.dict == NULL) {
        return NULL;
    }
    PyObject *lock = acquire(state.dict);
    if (lock == NULL) {
        Py_DECREF(state.dict);
        return NULL;
    }
    PyObject *result = NULL;
    PyObject *output = method == N_RECORD_CALL ? args[2] : NULL;
    PyObject *inputs = method == N_RECORD_CALL ? args[3] : args[6];
    if (output != NULL && !Py_IS_TYPE(output, view_type)) {
        result = python_path(method, args, nargs);
    }
    else if (!common_case(output, inputs, &state)) {
        PyErr_Clear();  /* an attribute of an unexpected kind: the Python path reads it */
        result = python_path(method, args, nargs);
    }
    else if (record_releases(&state) == 0) {
        if (method == N_RECORD_CALL) {  /* runtime, op, output, inputs, output_size, largest_input, site */
            if (append_call(&state, args[1], output, inputs, args[4], args[5], args[6]) == 0) {
                result = Py_NewRef(Py_None);
            }
        }
        else {  /* runtime, op, dtype, shape, strides, size, inputs, largest_input, site */
            PyObject *made = declare_new_base(&state, runtime, args[2], args[3], args[4], args[5]);
            if (made != NULL && append_call(&state, args[1], PyTuple_GET_ITEM(made, 1), inputs, args[5], args[7], args[8]) == 0) {
                result = made;
            }
            else {
                Py_XDECREF(made);
            }
        }
    }
    Py_XDECREF(state.pending);
    Py_XDECREF(state.instructions);
    Py_XDECREF(state.data);
    Py_XDECREF(state.released);
    Py_DECREF(state.dict);
    return release(lock, result);
}

static PyObject *
record_new(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    return record(args, nargs, N_RECORD_NEW, 9);
}

static PyObject *
record_call(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    return record(args, nargs, N_RECORD_CALL, 7);
}

static PyObject *
configure(PyObject *module, PyObject *args)
{
    PyObject *makers[4];
    PyTypeObject *view;
    Py_ssize_t factor;
    if (!PyArg_ParseTuple(args, "OOOOO!n:configure", &makers[0], &makers[1], &makers[2], &makers[3], &PyType_Type, &view, &factor)) {
        return NULL;
    }
    Py_ssize_t offset = slot_offset(view, names[N_BASE], 0);
    if (offset < 0) {
        return NULL;
    }
    Py_XSETREF(make_base, Py_NewRef(makers[0]));
    Py_XSETREF(new_view, Py_NewRef(makers[1]));
    Py_XSETREF(new_decl, Py_NewRef(makers[2]));
    Py_XSETREF(new_instruction, Py_NewRef(makers[3]));
    Py_XSETREF(view_type, (PyTypeObject *)Py_NewRef(view));
    view_base_offset = offset;
    product_read_factor = factor;
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(make_base, new_view, new_decl, new_instruction, View, product_read_factor): the makers of "
     "the objects recording builds, the bytecode's View class and the settled memory's factor."},
    {"record_new", (PyCFunction)(void (*)(void))record_new, METH_FASTCALL,
     "record_new(runtime, op, dtype, shape, strides, size, inputs, largest_input, site): "
     "Runtime.record_new, in C when nothing unusual is going on."},
    {"record_call", (PyCFunction)(void (*)(void))record_call, METH_FASTCALL,
     "record_call(runtime, op, output, inputs, output_size, largest_input, site): "
     "Runtime.record_call, in C when nothing unusual is going on."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef record_calls_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "shoal._record_calls",
    .m_doc = "The runtime's bookkeeping for a remembered element-wise call, in C.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__record_calls(void)
{
    if (init_names() < 0) {
        return NULL;
    }
    zero = PyLong_FromLong(0);
    one = PyLong_FromLong(1);
    if (zero == NULL || one == NULL) {
        return NULL;
    }
    return PyModule_Create(&record_calls_module);
}
