/* The memory of a settled call's lazy operands (shoal/_settled_calls.c): held, held back
 * with their data or settled, and the count of accesses towards a hold, as shoal/settled_memory.py
 * and shoal/held.py decide them. */
#ifndef SHOAL_SETTLED_OPERANDS_H
#define SHOAL_SETTLED_OPERANDS_H

#include "_settled_state.h"

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
 * is not the common case (nothing changed), -1 on an error. A view below `limit` (in elements,
 * or bytes: below_threshold) of a held, held-back or settled base (_settled._memory); with `held_any_size`, a view
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
    operand->held = 1;
    PyObject *base_id = SLOT(view, view_offsets[0]);
    PyObject *held = dict_named(dict, names[N_HELD]);
    Py_ssize_t size = operand->size = shape_size(SLOT(view, view_offsets[3]));
    if (base_id == NULL || held == NULL || size < 0 || (!held_any_size && below_threshold_of(size, SLOT(view, view_offsets[1]), slot_names[S_ITEMSIZE], limit) != 1)) {
        PyErr_Clear();
        return 0;
    }
    if (held_memory != NULL && held_memory != Py_None) {
        operand->memory = Py_NewRef(held_memory);
        return 1;
    }
    PyObject *kept = PyDict_GetItemWithError(held, base_id);
    if (kept != NULL) {
        PyObject *whole = PyObject_GetAttr(kept, slot_names[S_SIZE]);
        int all = whole != NULL && PyLong_CheckExact(whole) && PyLong_AsSsize_t(whole) == size;
        Py_XDECREF(whole);
        if (PyErr_Occurred()) {
            return -1;
        }
        /* an array over all of its held base (a loop's matrix) keeps its view for the next call, as
         * its indexing does (_held_indexing.own_view); a row's view is made for this call only */
        operand->memory = all ? PyObject_CallOneArg(own_view, array) : view_of(kept, view, 0);
        return operand->memory == NULL ? -1 : 1;
    }
    if (PyErr_Occurred() || size >= limit) {
        return PyErr_Occurred() ? -1 : 0;
    }
    operand->held = 0;
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


#endif
