/* NumPy calls on settled memory (shoal/numpy/_settled.py) in C for the common case.
 *
 * A loop of small operations on lazy arrays whose values are NumPy memory already (results
 * held back with their data, held bases, settled bases) ran each operation in Python: finding
 * each operand's memory (the runtime's lock, its tables, the count towards a hold), the call at
 * the user's line, and the result's new base held back with its data. That was 6-7 us an
 * operation against NumPy's 0.3-0.6 us. call() does the same work on the runtime's own
 * attributes when nothing unusual is going on, and answers None otherwise (a hold due, a base
 * that recorded work still changes, a scalar, a result of another kind), before it has changed
 * anything: the caller's Python path then decides everything, so the answer is always its
 * answer.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

#include "_runtime_attributes.h"
#include "_slot_offset.h"

#define MOST_OPERANDS 4

enum { S_BASE, S_VIEW, S_SCALAR, S_HELD, S_RUNTIME, S_ACCESSES, S_SHAPE, S_DTYPE, S_OFFSET, S_STRIDES, S_MEMORY,
       S_NOUT, S_BASE_ATTR, S_RESHAPE, S_SETTLED, S_MIRRORS, S_EAGER, S_SIZE, S_ITEMSIZE, S_READONLY, S_WRITABLE, S_OUT, S_CASTING, S_SAME_KIND, S_NAMES };
static const char *slot_texts[S_NAMES] = {"_base", "_view", "_scalar", "_held", "runtime", "accesses", "shape", "dtype", "offset",
                                          "strides", "memory", "nout", "base", "reshape", "_settled", "_mirrors",
                                          "eager_threshold", "size", "itemsize", "_readonly", "_writable", "out", "casting", "same_kind"};
static PyObject *slot_names[S_NAMES];

static PyTypeObject *lazy_type = NULL;   /* shoal.numpy.ndarray */
static PyTypeObject *numpy_type = NULL;  /* numpy.ndarray */
static PyTypeObject *view_type = NULL;   /* shoal.bytecode.View */
static Py_ssize_t lazy_offsets[5];       /* _base, _view, _scalar, _held, _readonly of a lazy array */
static Py_ssize_t base_offsets[2];       /* runtime, accesses of a LazyBase */
static Py_ssize_t view_offsets[5];       /* base, dtype, offset, shape, strides of a View */
static PyObject *make_base = NULL, *new_view = NULL, *make_lazy_array = NULL, *no_quiet_stores = NULL;
static PyObject *component_memory = NULL;  /* Component.memory: an engine whose class keeps it offers no memory */
static PyObject *internal_files = NULL;    /* fp_warnings._internal_files: file name -> Shoal's or NumPy's */
static PyObject *trampolines = NULL;       /* fp_warnings._trampolines: (id(code), line) -> (code, trampoline) */
static PyObject *at_user_line = NULL, *wrap_numpy = NULL, *is_supported = NULL, *not_settled = NULL;
static PyObject *drawn_noted = NULL;      /* drawn._noted: id(data) -> the recipe of a random draw */
static PyObject *supported = NULL;         /* dtype -> is_supported(dtype), filled as dtypes are met */
static PyObject *no_keywords = NULL;
static PyObject *single_output = NULL;    /* ufunc -> True where it has one output, as met */
static PyObject *minus_one = NULL;
static PyObject *hold_settings = NULL;  /* shoal.held's __dict__: HOLD_RUN, HOLD_BACK_ACCESSES, read per call (tests change them) */
static PyObject *hold_run_name = NULL, *hold_back_name = NULL;

#define SLOT(object, offset) (*(PyObject **)((char *)(object) + (offset)))

/* One lazy operand: its memory and what reading it counts towards a hold. */
typedef struct {
    PyObject *memory;   /* new reference */
    PyObject *base;     /* borrowed from the array: its LazyBase */
    Py_ssize_t needed;  /* accesses at which its base is held (0: not counted, a held base) */
    Py_ssize_t size;    /* the view's elements */
    PyObject *spoiled;  /* borrowed: data held back that a write changes (its draw's recipe forgotten), or NULL */
} Operand;

/* What the Python path's hold rules (shoal.held) read, once per call: HOLD_RUN and HOLD_BACK_ACCESSES. */
typedef struct {
    Py_ssize_t run;
    Py_ssize_t back;
} HoldRules;

static Py_ssize_t
shape_size(PyObject *shape)
{
    if (!PyTuple_CheckExact(shape)) {
        return -1;
    }
    Py_ssize_t size = 1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(shape); i++) {
        Py_ssize_t n = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, i));
        if (n < 0 || (n && size > PY_SSIZE_T_MAX / n)) {
            PyErr_Clear();
            return -1;
        }
        size *= n;
    }
    return size;
}

/* The runtime's count `name` (an int of at least 0), or -1 (no error set). */
static Py_ssize_t
dict_count(PyObject *dict, PyObject *name)
{
    PyObject *value = PyDict_GetItemWithError(dict, name);
    Py_ssize_t count = value == NULL || !PyLong_CheckExact(value) ? -1 : PyLong_AsSsize_t(value);
    if (count < 0) {
        PyErr_Clear();
    }
    return count;
}

/* Releases `lock` (a new reference, dropped); -1 with an error set where that failed. */
static int
unlock(PyObject *lock)
{
    return release(lock, Py_NewRef(Py_None)) == NULL ? -1 : (Py_DECREF(Py_None), 0);
}

static PyObject *
dict_named(PyObject *dict, PyObject *name)
{
    PyObject *value = PyDict_GetItemWithError(dict, name);
    return value != NULL && PyDict_CheckExact(value) ? value : NULL;
}

/* `view` of `whole` (an ndarray): `whole` itself where it is 1-D and contiguous, of `whole_size`
 * elements (a base's data held back), and the view is all of it; else a new ndarray over it. */
static PyObject *
view_of(PyObject *whole, PyObject *view, Py_ssize_t whole_size)
{
    PyObject *shape = SLOT(view, view_offsets[3]);
    PyObject *dtype = SLOT(view, view_offsets[1]);
    PyObject *offset = SLOT(view, view_offsets[2]);
    PyObject *strides = SLOT(view, view_offsets[4]);
    if (shape == NULL || dtype == NULL || offset == NULL || strides == NULL) {
        PyErr_SetString(PyExc_AttributeError, "a View without its shape, dtype, offset or strides");
        return NULL;
    }
    if (whole_size > 0 && PyLong_CheckExact(offset) && PyLong_AsLong(offset) == 0 && PyTuple_CheckExact(shape) && PyTuple_GET_SIZE(shape) == 1 &&
        PyTuple_CheckExact(strides) && PyTuple_GET_SIZE(strides) == 1 && PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, 0)) == whole_size) {
        PyObject *itemsize = PyObject_GetAttr(dtype, slot_names[S_ITEMSIZE]);
        int same = itemsize != NULL && PyObject_RichCompareBool(itemsize, PyTuple_GET_ITEM(strides, 0), Py_EQ) == 1;
        Py_XDECREF(itemsize);
        if (same) {
            return Py_NewRef(whole);
        }
        if (PyErr_Occurred()) {
            return NULL;
        }
    }
    PyObject *arguments[5] = {shape, dtype, whole, offset, strides};
    return PyObject_Vectorcall((PyObject *)numpy_type, arguments, 5, NULL);
}

/* Fills `operand` for lazy array `array` of a call whose runtime's __dict__ is `dict`; 0 if it
 * is not the common case (nothing changed), -1 on an error. A view of fewer than `limit`
 * elements of a held, held-back or settled base (_settled._memory); with `held_any_size`, a view
 * of a held base of any size too (held_product: the caller checks the sizes where not every
 * operand is held). */
static int
find_memory(PyObject *dict, PyObject *array, Operand *operand, Py_ssize_t limit, int held_any_size, const HoldRules *rules, int write)
{
    PyObject *base = SLOT(array, lazy_offsets[0]);
    PyObject *view = SLOT(array, lazy_offsets[1]);
    PyObject *scalar = SLOT(array, lazy_offsets[2]);
    PyObject *held_memory = SLOT(array, lazy_offsets[3]);
    if (base == NULL || view == NULL || scalar != Py_False || !Py_IS_TYPE(view, view_type) ||
        (write && SLOT(array, lazy_offsets[4]) != Py_False)) {
        return 0;
    }
    operand->base = base;
    operand->needed = 0;
    operand->spoiled = NULL;
    PyObject *base_id = SLOT(view, view_offsets[0]);
    PyObject *held = dict_named(dict, names[N_HELD]);
    Py_ssize_t size = operand->size = shape_size(SLOT(view, view_offsets[3]));
    if (base_id == NULL || held == NULL || size < 0 || (!held_any_size && size >= limit)) {
        PyErr_Clear();
        return 0;
    }
    if (held_memory != NULL && held_memory != Py_None) {
        operand->memory = Py_NewRef(held_memory);
        return 1;
    }
    PyObject *kept = PyDict_GetItemWithError(held, base_id);
    if (kept != NULL) {
        operand->memory = view_of(kept, view, 0);
        return operand->memory == NULL ? -1 : 1;
    }
    if (PyErr_Occurred() || size >= limit) {
        return PyErr_Occurred() ? -1 : 0;
    }
    PyObject *written = attribute(dict, N_WRITTEN);
    PyObject *read = write ? attribute(dict, N_READ) : NULL;
    if (written == NULL || !PyAnySet_Check(written) || PySet_Contains(written, base_id) != 0 ||
        (write && (read == NULL || !PyAnySet_Check(read) || PySet_Contains(read, base_id) != 0))) {  /* recorded work reads its old values */
        PyErr_Clear();
        return 0;
    }
    PyObject *deferred = dict_named(dict, names[N_DEFERRED]);
    PyObject *entry = deferred == NULL ? NULL : PyDict_GetItemWithError(deferred, base_id);
    PyObject *whole = NULL;
    Py_ssize_t whole_size = 0;
    if (entry != NULL) {  /* held back with its data: its memory until an instruction names it */
        if (!PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 3 || !PyLong_CheckExact(PyTuple_GET_ITEM(entry, 1))) {
            return 0;
        }
        whole = PyTuple_GET_ITEM(entry, 2);
        operand->spoiled = write ? whole : NULL;
        whole_size = PyLong_AsSsize_t(PyTuple_GET_ITEM(entry, 1));
        if (whole_size <= 0) {  /* never held: the Python path counts it */
            PyErr_Clear();
            return 0;
        }
        operand->needed = rules->back;
    }
    else {
        PyObject *settled = PyErr_Occurred() ? NULL : dict_named(dict, slot_names[write ? S_WRITABLE : S_SETTLED]);
        PyObject *declared = attribute(dict, N_DECLARED);
        PyObject *mirrors = dict_named(dict, slot_names[S_MIRRORS]);
        whole = settled == NULL ? NULL : PyDict_GetItemWithError(settled, base_id);
        if (whole == NULL || declared == NULL || !PyAnySet_Check(declared) || PySet_Contains(declared, base_id) != 0 || mirrors == NULL ||
            PyDict_GET_SIZE(mirrors) != 0) {
            PyErr_Clear();
            return 0;
        }
        operand->needed = rules->run;
    }
    if (!Py_IS_TYPE(whole, numpy_type) || operand->needed <= 0) {
        PyErr_Clear();
        return 0;
    }
    PyObject *whole_dtype = PyObject_GetAttr(whole, slot_names[S_DTYPE]);
    int same = whole_dtype == SLOT(view, view_offsets[1]);  /* a settled base's memory read as another dtype: Python's path */
    Py_XDECREF(whole_dtype);
    if (!same) {
        PyErr_Clear();
        return 0;
    }
    operand->memory = view_of(whole, view, whole_size);
    return operand->memory == NULL ? -1 : 1;
}

/* The memory of every lazy operand among `given` into `operands` (`*found` of them) and the
 * arguments NumPy is called with into `arguments`: 1 if every lazy operand has it, 0 if one
 * has not (none kept), -1 on an error (none kept). With `product`, views of held bases of any
 * size where every lazy operand is one (held_product), else views of fewer than `limit`
 * elements (settled_call). */
static int
gather(PyObject *dict, PyObject *given, Operand *operands, PyObject **arguments, int *found, Py_ssize_t limit, int product,
       const HoldRules *rules)
{
    int status = 1, all_held = 1;
    Py_ssize_t largest = 0;
    *found = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(given) && status == 1; i++) {
        PyObject *value = PyTuple_GET_ITEM(given, i);
        if (!Py_IS_TYPE(value, lazy_type)) {
            arguments[i] = value;
            continue;
        }
        Operand *operand = &operands[*found];
        status = find_memory(dict, value, operand, limit, product, rules, 0);
        if (status == 1) {
            arguments[i] = operand->memory;
            all_held = all_held && operand->needed == 0;
            largest = operand->size > largest ? operand->size : largest;
            (*found)++;
        }
    }
    if (status == 1 && !all_held && largest >= limit) {
        status = 0;
    }
    if (status != 1) {
        for (int j = 0; j < *found; j++) {
            Py_CLEAR(operands[j].memory);
        }
        *found = 0;
    }
    return status;
}

/* 0 if counting the accesses of `operands` would hold a base (the Python path holds it), else
 * counts them as Runtime._counted and held.due do and returns 1; -1 on an error. */
static int
count_accesses(PyObject *dict, Operand *operands, int count, const HoldRules *rules)
{
    Py_ssize_t run = dict_count(dict, names[N_DIRECT_RUN]);
    Py_ssize_t hold_run = rules->run;
    if (run < 0) {
        return 0;
    }
    Py_ssize_t start = run;
    Py_ssize_t accesses[MOST_OPERANDS];
    for (int i = 0; i < count; i++) {
        accesses[i] = -1;
        if (!operands[i].needed) {
            continue;
        }
        run += 1;
        if (run < hold_run) {
            continue;
        }
        Py_ssize_t before = -1;
        for (int j = 0; j < i; j++) {
            if (operands[j].base == operands[i].base && accesses[j] >= 0) {
                before = accesses[j];
            }
        }
        if (before < 0) {
            PyObject *value = SLOT(operands[i].base, base_offsets[1]);
            before = value == NULL || !PyLong_CheckExact(value) ? -1 : PyLong_AsSsize_t(value);
            if (before < 0) {
                PyErr_Clear();
                return 0;
            }
        }
        accesses[i] = before + 1;
        if (accesses[i] >= operands[i].needed) {
            return 0;
        }
    }
    if (run != start) {
        PyObject *value = PyLong_FromSsize_t(run);
        if (value == NULL || PyDict_SetItem(dict, names[N_DIRECT_RUN], value) < 0) {
            Py_XDECREF(value);
            return -1;
        }
        Py_DECREF(value);
    }
    for (int i = 0; i < count; i++) {
        if (accesses[i] >= 0) {
            PyObject *value = PyLong_FromSsize_t(accesses[i]);
            if (value == NULL) {
                return -1;
            }
            Py_XSETREF(SLOT(operands[i].base, base_offsets[1]), value);
        }
    }
    return 1;
}

/* True (1) if the runtime's engine hands out its memory (its class overrides Component.memory). */
static int
offers_memory(PyObject *dict)
{
    static PyObject *last_class = NULL;  /* the class last asked about (a new reference), and its answer */
    static int last_answer = 0;
    PyObject *engine = PyDict_GetItemWithError(dict, names[N_ENGINE]);
    if (engine == NULL || engine == Py_None) {
        PyErr_Clear();
        return 0;
    }
    if ((PyObject *)Py_TYPE(engine) == last_class) {
        return last_answer;
    }
    PyObject *memory = PyObject_GetAttr((PyObject *)Py_TYPE(engine), slot_names[S_MEMORY]);
    int offers = memory != NULL && memory != component_memory;
    Py_XDECREF(memory);
    PyErr_Clear();
    Py_XSETREF(last_class, Py_NewRef((PyObject *)Py_TYPE(engine)));
    last_answer = offers;
    return offers;
}

/* 1 if ndarrays among `arguments` of different shapes broadcast to `limit` elements or more
 * (the caller records such work), 0 otherwise (also where they do not broadcast: NumPy raises
 * its own error), -1 on an error. */
static int
broadcasts_large(PyObject **arguments, Py_ssize_t count, Py_ssize_t limit)
{
    PyObject *shapes[MOST_OPERANDS];
    Py_ssize_t found = 0, most = 0;
    int differ = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        if (Py_IS_TYPE(arguments[i], numpy_type)) {
            PyObject *shape = PyObject_GetAttr(arguments[i], slot_names[S_SHAPE]);
            if (shape == NULL) {
                for (Py_ssize_t j = 0; j < found; j++) {
                    Py_DECREF(shapes[j]);
                }
                return -1;
            }
            if (found && PyObject_RichCompareBool(shape, shapes[0], Py_EQ) != 1) {
                differ = 1;
            }
            most = PyTuple_GET_SIZE(shape) > most ? PyTuple_GET_SIZE(shape) : most;
            shapes[found++] = shape;
        }
    }
    int large = 0;
    if (differ) {
        Py_ssize_t size = 1;
        for (Py_ssize_t axis = 1; axis <= most && size >= 0; axis++) {
            Py_ssize_t n = 1;
            for (Py_ssize_t j = 0; j < found; j++) {
                Py_ssize_t ndim = PyTuple_GET_SIZE(shapes[j]);
                Py_ssize_t m = ndim >= axis ? PyLong_AsSsize_t(PyTuple_GET_ITEM(shapes[j], ndim - axis)) : 1;
                if (m != n && m != 1 && n != 1) {
                    size = -1;  /* NumPy raises its own error */
                    break;
                }
                n = m == 1 ? n : m;
            }
            if (size >= 0) {
                size = n && size > PY_SSIZE_T_MAX / n ? PY_SSIZE_T_MAX : size * n;
            }
        }
        large = size >= limit;
    }
    for (Py_ssize_t j = 0; j < found; j++) {
        Py_DECREF(shapes[j]);
    }
    return large;
}

/* function(*arguments) at the user's line (fp_warnings.at_user_line): through the trampoline
 * kept for the first user frame outwards, else through the Python function, which makes it. */
static PyObject *
call_at_user_line(PyObject *function, PyObject *arguments, PyObject *keywords)
{
    PyFrameObject *frame = PyEval_GetFrame();
    Py_XINCREF(frame);
    PyCodeObject *code = NULL;
    while (frame != NULL) {
        code = PyFrame_GetCode(frame);
        PyObject *inside = PyDict_GetItemWithError(internal_files, code->co_filename);
        if (inside == Py_False) {
            break;
        }
        Py_DECREF(code);
        code = NULL;
        if (inside != Py_True) {  /* a file not seen yet (or an error): the Python function decides */
            Py_DECREF(frame);
            frame = NULL;
            goto python;
        }
        PyFrameObject *back = PyFrame_GetBack(frame);
        Py_DECREF(frame);
        frame = back;
    }
    if (frame == NULL) {
        return PyObject_Call(function, arguments, keywords);
    }
    PyObject *key = Py_BuildValue("(Ni)", PyLong_FromVoidPtr(code), PyFrame_GetLineNumber(frame));
    PyObject *known = key == NULL ? NULL : PyDict_GetItemWithError(trampolines, key);
    Py_XDECREF(key);
    PyObject *result = NULL;
    if (known != NULL && PyTuple_CheckExact(known) && PyTuple_GET_SIZE(known) == 2 && PyTuple_GET_ITEM(known, 0) == (PyObject *)code) {
        PyObject *trampoline = Py_NewRef(PyTuple_GET_ITEM(known, 1));
        PyObject *globals = PyFrame_GetGlobals(frame);
        PyObject *its_globals = PyFunction_Check(trampoline) ? Py_NewRef(PyFunction_GET_GLOBALS(trampoline)) : NULL;
        if (its_globals != NULL && its_globals == globals) {
            PyObject *call[3] = {function, arguments, keywords == NULL ? no_keywords : keywords};
            result = PyObject_Vectorcall(trampoline, call, 3, NULL);
            Py_DECREF(trampoline);
            Py_XDECREF(globals);
            Py_DECREF(its_globals);
            Py_DECREF(code);
            Py_DECREF(frame);
            return result;
        }
        Py_DECREF(trampoline);
        Py_XDECREF(globals);
        Py_XDECREF(its_globals);
    }
    Py_DECREF(code);
    Py_DECREF(frame);
    if (PyErr_Occurred()) {
        return NULL;
    }
python:;
    PyObject *function_first = PyTuple_New(PyTuple_GET_SIZE(arguments) + 1);
    if (function_first == NULL) {
        return NULL;
    }
    PyTuple_SET_ITEM(function_first, 0, Py_NewRef(function));
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(arguments); i++) {
        PyTuple_SET_ITEM(function_first, i + 1, Py_NewRef(PyTuple_GET_ITEM(arguments, i)));
    }
    result = PyObject_Call(at_user_line, function_first, keywords);
    Py_DECREF(function_first);
    return result;
}

/* The strides of a C-contiguous array of `shape` (a tuple of `ndim` sizes) and `itemsize`, as
 * shoal.numpy._lazy.contiguous_strides gives them; with `actual`, 1 if an array's strides
 * `actual` are C-contiguous ones (sizes of 1 aside), else 0. */
static PyObject *
contiguous_strides(PyObject *shape, Py_ssize_t itemsize, PyObject *actual, int *contiguous)
{
    Py_ssize_t ndim = PyTuple_GET_SIZE(shape);
    PyObject *strides = PyTuple_New(ndim);
    if (strides == NULL) {
        return NULL;
    }
    *contiguous = actual != NULL && PyTuple_CheckExact(actual) && PyTuple_GET_SIZE(actual) == ndim;
    Py_ssize_t step = itemsize;
    for (Py_ssize_t i = ndim - 1; i >= 0; i--) {
        Py_ssize_t n = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, i));
        PyObject *stride = PyLong_FromSsize_t(step);
        if (stride == NULL) {
            Py_DECREF(strides);
            return NULL;
        }
        PyTuple_SET_ITEM(strides, i, stride);
        if (*contiguous && n != 1 && PyLong_AsSsize_t(PyTuple_GET_ITEM(actual, i)) != step) {
            *contiguous = 0;
        }
        step *= n > 1 ? n : 1;
    }
    return strides;
}

/* The item size of `dtype` if bytecode carries it (is_supported, kept per dtype), 0 if not, -1. */
static Py_ssize_t
carried(PyObject *dtype)
{
    PyObject *known = PyDict_GetItemWithError(supported, dtype);
    if (known == NULL) {
        if (PyErr_Occurred() || PyDict_GET_SIZE(supported) > 256) {
            PyErr_Clear();
            return 0;
        }
        PyObject *answer = PyObject_CallOneArg(is_supported, dtype);
        int truth = answer == NULL ? -1 : PyObject_IsTrue(answer);
        Py_XDECREF(answer);
        known = truth < 0 ? NULL : truth ? PyObject_GetAttr(dtype, slot_names[S_ITEMSIZE]) : PyLong_FromLong(0);
        if (known == NULL || !PyLong_CheckExact(known) || PyDict_SetItem(supported, dtype, known) < 0) {
            Py_XDECREF(known);
            return PyErr_Occurred() ? -1 : 0;
        }
        Py_DECREF(known);
    }
    return PyLong_AsSsize_t(known);
}

/* A new lazy array holding `result` (a fresh, C-contiguous ndarray NumPy computed, given away)
 * as Runtime.new_base holds a result back with its data; NULL with an error, or a new
 * reference to Py_None where `result` is not that common case (the caller wraps it in Python). */
static PyObject *
hold_back(PyObject *runtime, PyObject *dict, PyObject *result, PyObject *shape, Py_ssize_t size)
{
    PyObject *dtype = PyObject_GetAttr(result, slot_names[S_DTYPE]);
    Py_ssize_t itemsize = dtype == NULL ? -1 : carried(dtype);
    PyObject *owner = itemsize <= 0 ? NULL : PyObject_GetAttr(result, slot_names[S_BASE_ATTR]);
    PyObject *actual = owner == NULL ? NULL : PyObject_GetAttr(result, slot_names[S_STRIDES]);
    int contiguous = 0;
    PyObject *strides = actual == NULL ? NULL : contiguous_strides(shape, itemsize, actual, &contiguous);
    PyObject *answer = NULL, *data = NULL, *entry = NULL, *base = NULL, *view = NULL, *ref = NULL, *holders = NULL;
    PyObject *base_id = NULL, *lock = NULL;
    if (itemsize < 0 || (itemsize > 0 && strides == NULL)) {
        goto done;
    }
    if (itemsize == 0 || owner != Py_None || !contiguous || size == 0) {
        answer = Py_NewRef(Py_None);
        goto done;
    }
    data = PyTuple_GET_SIZE(shape) == 1 ? Py_NewRef(result) : PyObject_CallMethodOneArg(result, slot_names[S_RESHAPE], minus_one);
    PyObject *count = data == NULL ? NULL : PyLong_FromSsize_t(size);
    entry = count == NULL ? NULL : PyTuple_Pack(3, dtype, count, data);
    holders = entry == NULL ? NULL : PyList_New(0);
    lock = holders == NULL ? NULL : acquire(dict);
    if (lock == NULL) {
        Py_XDECREF(count);
        goto done;
    }
    base_id = Py_XNewRef(attribute(dict, N_NEXT_ID));
    PyObject *next = base_id == NULL ? NULL : PyLong_FromSsize_t(PyLong_AsSsize_t(base_id) + 1);
    PyObject *stats = next == NULL ? NULL : Py_XNewRef(attribute(dict, N_STATS));
    PyObject *deferred = dict_named(dict, names[N_DEFERRED]);
    PyObject *own_bases = dict_named(dict, names[N_OWN_BASES]);
    int failed = stats == NULL || deferred == NULL || own_bases == NULL || PyDict_SetItem(dict, names[N_NEXT_ID], next) < 0 ||
                 add_to_counter(stats, N_BASES_CREATED, 1) < 0 || PyDict_SetItem(deferred, base_id, entry) < 0;
    if (!failed) {
        PyObject *base_arguments[5] = {runtime, base_id, dtype, count, holders};
        base = PyObject_Vectorcall(make_base, base_arguments, 5, NULL);
        ref = base == NULL ? NULL : PyWeakref_NewRef(base, NULL);
        failed = ref == NULL || PyDict_SetItem(own_bases, base_id, ref) < 0;
    }
    Py_XDECREF(next);
    Py_XDECREF(stats);
    if (unlock(lock) < 0 || failed) {
        Py_XDECREF(count);
        goto done;
    }
    PyObject *zero = PyLong_FromLong(0);
    PyObject *view_arguments[5] = {base_id, dtype, zero, shape, strides};
    view = zero == NULL ? NULL : PyObject_Vectorcall(new_view, view_arguments, 5, NULL);
    Py_XDECREF(zero);
    Py_XDECREF(count);
    if (view != NULL) {
        PyObject *array_arguments[7] = {base, view, Py_None, Py_False, Py_False, Py_None, no_quiet_stores};
        answer = PyObject_Vectorcall(make_lazy_array, array_arguments, 7, NULL);
    }
done:
    Py_XDECREF(dtype);
    Py_XDECREF(owner);
    Py_XDECREF(actual);
    Py_XDECREF(strides);
    Py_XDECREF(data);
    Py_XDECREF(entry);
    Py_XDECREF(holders);
    Py_XDECREF(base_id);
    Py_XDECREF(ref);
    Py_XDECREF(base);
    Py_XDECREF(view);
    return answer;
}

/* What a result NumPy computed becomes: a lazy array held back with it where it has at least
 * the runtime's eager threshold of elements (wrap_numpy in Python for uncommon ones), else
 * itself. Steals `result`. */
static PyObject *
wrapped(PyObject *runtime, PyObject *dict, PyObject *result)
{
    if (result == NULL || !Py_IS_TYPE(result, numpy_type)) {
        return result;
    }
    PyObject *shape = PyObject_GetAttr(result, slot_names[S_SHAPE]);
    Py_ssize_t size = shape == NULL ? -1 : shape_size(shape);
    Py_ssize_t eager = dict_count(dict, slot_names[S_EAGER]);
    PyObject *answer = NULL;
    if (size >= 0 && eager >= 0 && size < eager) {
        answer = Py_NewRef(result);
    }
    else if (size >= 0 && eager >= 0) {
        answer = hold_back(runtime, dict, result, shape, size);
        if (answer == Py_None) {
            Py_DECREF(answer);
            answer = PyObject_CallOneArg(wrap_numpy, result);
        }
    }
    else if (!PyErr_Occurred()) {
        answer = PyObject_CallOneArg(wrap_numpy, result);
    }
    Py_XDECREF(shape);
    Py_DECREF(result);
    return answer;
}

/* call(function, arguments, kind): see the module methods below. */
static PyObject *
call(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 && nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "call(function, arguments, kind[, out]) takes 3 or 4 arguments");
        return NULL;
    }
    PyObject *out = nargs == 4 && args[3] != Py_None ? args[3] : NULL;  /* a lazy array the ufunc writes */
    if (!PyTuple_CheckExact(args[1])) {
        Py_RETURN_NONE;
    }
    if (lazy_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "shoal._settled_calls is not configured");
        return NULL;
    }
    PyObject *function = args[0], *given = args[1];
    long kind = PyLong_AsLong(args[2]);  /* 0: a ufunc's call, 1: a product */
    Py_ssize_t count = PyTuple_GET_SIZE(given);
    if (count > MOST_OPERANDS || (kind != 0 && kind != 1) || (out != NULL && (kind != 0 || !Py_IS_TYPE(out, lazy_type)))) {
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    }
    if (kind == 0) {
        PyObject *single = PyDict_GetItemWithError(single_output, function);  /* ufunc -> whether nout is 1 */
        if (single == NULL) {
            PyObject *nout = PyErr_Occurred() ? NULL : PyObject_GetAttr(function, slot_names[S_NOUT]);
            single = nout != NULL && PyLong_CheckExact(nout) && PyLong_AsLong(nout) == 1 ? Py_True : Py_False;
            Py_XDECREF(nout);
            PyErr_Clear();
            if (PyDict_GET_SIZE(single_output) < 1024 && PyDict_SetItem(single_output, function, single) < 0) {
                return NULL;
            }
        }
        if (single != Py_True) {
            Py_RETURN_NONE;
        }
    }
    PyObject *runtime = NULL;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *value = PyTuple_GET_ITEM(given, i);
        if (Py_IS_TYPE(value, lazy_type)) {
            PyObject *base = SLOT(value, lazy_offsets[0]);
            PyObject *its = base == NULL ? NULL : SLOT(base, base_offsets[0]);
            if (its == NULL || (runtime != NULL && its != runtime)) {
                Py_RETURN_NONE;
            }
            runtime = its;
        }
    }
    if (out != NULL) {
        PyObject *base = SLOT(out, lazy_offsets[0]);
        if (base == NULL || SLOT(base, base_offsets[0]) != runtime) {
            Py_RETURN_NONE;
        }
    }
    if (runtime == NULL) {
        Py_RETURN_NONE;
    }
    Py_INCREF(runtime);
    PyObject *dict = PyObject_GenericGetDict(runtime, NULL);
    if (dict == NULL) {
        Py_DECREF(runtime);
        return NULL;
    }
    Operand operands[MOST_OPERANDS + 1];
    PyObject *arguments[MOST_OPERANDS];
    int found = 0, status = 0;
    PyObject *answer = NULL;
    Py_ssize_t limit = dict_count(dict, names[N_SETTLED_THRESHOLD]);
    if (limit <= 0 || !offers_memory(dict)) {
        answer = Py_NewRef(Py_None);
        goto done;
    }
    PyObject *lock = acquire(dict);
    if (lock == NULL) {
        goto done;
    }
    HoldRules rules = {dict_count(hold_settings, hold_run_name), dict_count(hold_settings, hold_back_name)};
    status = rules.run < 0 || rules.back < 0 ? 0 : gather(dict, given, operands, arguments, &found, limit, kind == 1, &rules);
    if (status == 1 && out != NULL) {  /* the output last, written: settled_ufunc's targets */
        status = find_memory(dict, out, &operands[found], limit, 0, &rules, 1);
        found += status == 1;
    }
    if (status == 1) {
        status = count_accesses(dict, operands, found, &rules);
    }
    if (status == 1 && out != NULL && operands[found - 1].spoiled != NULL && PyDict_GET_SIZE(drawn_noted)) {
        PyObject *key = PyLong_FromVoidPtr(operands[found - 1].spoiled);  /* drawn.spoil */
        PyObject *recipe = key == NULL ? NULL : PyObject_CallMethod(drawn_noted, "pop", "OO", key, Py_None);
        status = recipe == NULL ? -1 : 1;
        Py_XDECREF(key);
        Py_XDECREF(recipe);
    }
    if (unlock(lock) < 0 || status < 0) {
        goto done;
    }
    if (status == 0) {
        answer = Py_NewRef(Py_None);
        goto done;
    }
    if (kind == 0 && out == NULL) {
        int large = broadcasts_large(arguments, count, limit);
        if (large != 0) {
            answer = large < 0 ? NULL : Py_NewRef(not_settled);
            goto done;
        }
    }
    PyObject *packed = PyTuple_New(count);
    if (packed == NULL) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyTuple_SET_ITEM(packed, i, Py_NewRef(arguments[i]));
    }
    if (out == NULL) {
        for (int j = 0; j < found; j++) {
            Py_CLEAR(operands[j].memory);
        }
        found = 0;
        PyObject *result = call_at_user_line(function, packed, NULL);
        Py_DECREF(packed);
        answer = wrapped(runtime, dict, result);
        goto done;
    }
    PyObject *keywords = Py_BuildValue("{s(O)sO}", "out", operands[found - 1].memory, "casting", slot_names[S_SAME_KIND]);
    PyObject *result = keywords == NULL ? NULL : call_at_user_line(function, packed, keywords);
    Py_DECREF(packed);
    Py_XDECREF(keywords);
    if (result != NULL) {
        Py_DECREF(result);
        answer = Py_NewRef(out);
    }
done:
    for (int j = 0; j < found; j++) {
        Py_XDECREF(operands[j].memory);
    }
    Py_DECREF(dict);
    Py_DECREF(runtime);
    return answer;
}

static int
configure_offsets(PyTypeObject *type, const int *which, Py_ssize_t *offsets, int count)
{
    for (int i = 0; i < count; i++) {
        offsets[i] = slot_offset(type, slot_names[which[i]], 0);
        if (offsets[i] < 0) {
            return -1;
        }
    }
    return 0;
}

static PyObject *
configure(PyObject *module, PyObject *args)
{
    PyTypeObject *lazy, *numpy, *view, *base;
    PyObject *makers[3], *quiet, *memory, *internal, *kept, *fallbacks[3], *marker, *settings, *noted;
    if (!PyArg_ParseTuple(args, "O!O!O!O!OOOOOO!O!OOOOO!O!:configure", &PyType_Type, &lazy, &PyType_Type, &numpy, &PyType_Type, &view,
                          &PyType_Type, &base, &makers[0], &makers[1], &makers[2], &quiet, &memory, &PyDict_Type, &internal,
                          &PyDict_Type, &kept, &fallbacks[0], &fallbacks[1], &fallbacks[2], &marker, &PyDict_Type, &settings, &PyDict_Type, &noted)) {
        return NULL;
    }
    static const int lazy_slots[5] = {S_BASE, S_VIEW, S_SCALAR, S_HELD, S_READONLY};
    static const int base_slots[2] = {S_RUNTIME, S_ACCESSES};
    if (configure_offsets(lazy, lazy_slots, lazy_offsets, 5) < 0 || configure_offsets(base, base_slots, base_offsets, 2) < 0) {
        return NULL;
    }
    PyObject *view_names[5] = {names[N_BASE], slot_names[S_DTYPE], slot_names[S_OFFSET], slot_names[S_SHAPE], slot_names[S_STRIDES]};
    for (int i = 0; i < 5; i++) {
        view_offsets[i] = slot_offset(view, view_names[i], 0);
        if (view_offsets[i] < 0) {
            return NULL;
        }
    }
    Py_XSETREF(lazy_type, (PyTypeObject *)Py_NewRef(lazy));
    Py_XSETREF(numpy_type, (PyTypeObject *)Py_NewRef(numpy));
    Py_XSETREF(view_type, (PyTypeObject *)Py_NewRef(view));
    Py_XSETREF(make_base, Py_NewRef(makers[0]));
    Py_XSETREF(new_view, Py_NewRef(makers[1]));
    Py_XSETREF(make_lazy_array, Py_NewRef(makers[2]));
    Py_XSETREF(no_quiet_stores, Py_NewRef(quiet));
    Py_XSETREF(component_memory, Py_NewRef(memory));
    Py_XSETREF(internal_files, Py_NewRef(internal));
    Py_XSETREF(trampolines, Py_NewRef(kept));
    Py_XSETREF(at_user_line, Py_NewRef(fallbacks[0]));
    Py_XSETREF(wrap_numpy, Py_NewRef(fallbacks[1]));
    Py_XSETREF(is_supported, Py_NewRef(fallbacks[2]));
    Py_XSETREF(not_settled, Py_NewRef(marker));
    Py_XSETREF(hold_settings, Py_NewRef(settings));
    Py_XSETREF(drawn_noted, Py_NewRef(noted));
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(ndarray, numpy.ndarray, View, LazyBase, make_base, new_view, make_lazy_array, NO_QUIET_STORES, "
     "Component.memory, internal_files, trampolines, at_user_line, wrap_numpy, is_supported, NOT_SETTLED, "
     "shoal.held's __dict__, drawn._noted)."},
    {"call", (PyCFunction)(void (*)(void))call, METH_FASTCALL,
     "call(function, arguments, kind[, out]): function(*arguments) on the memory of its lazy operands, computed by "
     "NumPy at the user's line, its result held back as a new lazy array where large enough; kind 0 a ufunc's plain "
     "call (_settled._plain_ufunc: NOT_SETTLED where small operands broadcast large; with `out`, a lazy array, "
     "settled_ufunc writing it), kind 1 a product (held_product, settled_call). None where it is not the common case: "
     "nothing was changed, the Python path decides."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef settled_calls_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "shoal._settled_calls",
    .m_doc = "NumPy calls on settled memory, in C for the common case.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__settled_calls(void)
{
    if (init_names() < 0) {
        return NULL;
    }
    for (int i = 0; i < S_NAMES; i++) {
        slot_names[i] = PyUnicode_InternFromString(slot_texts[i]);
        if (slot_names[i] == NULL) {
            return NULL;
        }
    }
    supported = PyDict_New();
    no_keywords = PyDict_New();
    minus_one = PyLong_FromLong(-1);
    single_output = PyDict_New();
    hold_run_name = PyUnicode_InternFromString("HOLD_RUN");
    hold_back_name = PyUnicode_InternFromString("HOLD_BACK_ACCESSES");
    if (supported == NULL || no_keywords == NULL || minus_one == NULL || single_output == NULL || hold_run_name == NULL || hold_back_name == NULL) {
        return NULL;
    }
    return PyModule_Create(&settled_calls_module);
}
