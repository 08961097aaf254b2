/* A settled call made at the user's line and its result held back as a new lazy array
 * (shoal/_settled_calls.c), as fp_warnings.at_user_line and Runtime.new_base do. */
#ifndef SHOAL_SETTLED_RESULTS_H
#define SHOAL_SETTLED_RESULTS_H

#include "_settled_state.h"

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
    /* The trampoline found for this code and bytecode offset before, else by its line (working
     * the line out scans the code's line table: 3% of a loop of small calls) */
    PyObject *at = Py_BuildValue("(Ni)", PyLong_FromVoidPtr(code), PyFrame_GetLasti(frame));
    PyObject *known = at == NULL ? NULL : PyDict_GetItemWithError(trampolines_at, at);
    int remember = known == NULL && at != NULL && !PyErr_Occurred();
    if (remember) {
        PyObject *key = Py_BuildValue("(Ni)", PyLong_FromVoidPtr(code), PyFrame_GetLineNumber(frame));
        known = key == NULL ? NULL : PyDict_GetItemWithError(trampolines, key);
        Py_XDECREF(key);
    }
    PyObject *result = NULL;
    if (remember && known != NULL) {
        if (PyDict_GET_SIZE(trampolines_at) >= 4096) {
            PyDict_Clear(trampolines_at);
        }
        if (PyDict_SetItem(trampolines_at, at, known) < 0) {
            known = NULL;
        }
    }
    if (known != NULL && PyTuple_CheckExact(known) && PyTuple_GET_SIZE(known) == 2 && PyTuple_GET_ITEM(known, 0) == (PyObject *)code) {
        PyObject *trampoline = Py_NewRef(PyTuple_GET_ITEM(known, 1));
        PyObject *globals = PyFrame_GetGlobals(frame);
        PyObject *its_globals = PyFunction_Check(trampoline) ? Py_NewRef(PyFunction_GET_GLOBALS(trampoline)) : NULL;
        if (its_globals != NULL && its_globals == globals) {
            PyObject *call[3] = {function, arguments, keywords == NULL ? no_keywords : keywords};
            result = PyObject_Vectorcall(trampoline, call, 3, NULL);
            Py_XDECREF(at);
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
    if (at != NULL && !PyErr_Occurred() && PyDict_DelItem(trampolines_at, at) < 0) {  /* stale: the Python function makes another */
        PyErr_Clear();
    }
    Py_XDECREF(at);
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
 * shoal.bytecode.contiguous_strides gives them; with `actual`, 1 if an array's strides
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
    PyObject *answer = NULL, *data = NULL, *entry = NULL, *base = NULL, *view = NULL;
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
    lock = entry == NULL ? NULL : acquire(dict);
    if (lock == NULL) {
        Py_XDECREF(count);
        goto done;
    }
    base = claim_new_base(runtime, dict, make_base, dtype, count, &base_id);
    PyObject *deferred = base == NULL ? NULL : dict_named(dict, names[N_DEFERRED]);
    int failed = deferred == NULL || PyDict_SetItem(deferred, base_id, entry) < 0;
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
    Py_XDECREF(base_id);
    Py_XDECREF(base);
    Py_XDECREF(view);
    return answer;
}

/* What a result NumPy computed becomes: a lazy array held back with it where it is not below the
 * runtime's eager threshold (below_threshold; wrap_numpy in Python for uncommon ones), else
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
    if (size >= 0 && eager >= 0 && below_threshold_of(size, result, slot_names[S_ITEMSIZE], eager) == 1) {
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


#endif
