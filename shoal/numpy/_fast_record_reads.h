/* The reads of shoal/numpy/_fast_record.c that follow the Python's caches: the warnings filters
 * (warning_filters.filters_now), NumPy's error state and the filters' verdict (_fast_ufunc._modes)
 * and the call's warning site (fp_warnings.call_site). Each answers from the cache where it is
 * current and calls the Python function the Python path calls (a module global, read at each
 * call) otherwise. */
#ifndef SHOAL_FAST_RECORD_READS_H
#define SHOAL_FAST_RECORD_READS_H

#include <frameobject.h>

#include "_fast_record_state.h"

/* warning_filters.filters_now(): its cached snapshot while the filters are unchanged, else the
 * Python function's answer. A new reference, or NULL with an error. */
static PyObject *
filters_now(void)
{
    PyObject *cache = PyDict_GetItemWithError(configured[C_FILTER_GLOBALS], interned[I_CACHE]);
    PyObject *filters = PyDict_GetItemWithError(configured[C_WARNINGS_GLOBALS], interned[I_FILTERS]);
    PyObject *action = PyDict_GetItemWithError(configured[C_WARNINGS_GLOBALS], interned[I_DEFAULT_ACTION]);
    if (PyErr_Occurred()) {
        return NULL;
    }
    if (cache != NULL && filters != NULL && action != NULL && PyTuple_CheckExact(cache) && PyTuple_GET_SIZE(cache) == 5 && PyList_CheckExact(filters) &&
        PyTuple_GET_ITEM(cache, 0) == filters && PyTuple_GET_ITEM(cache, 3) == action) {
        Py_ssize_t length = PyList_GET_SIZE(filters);
        Py_ssize_t known = PyLong_AsSsize_t(PyTuple_GET_ITEM(cache, 1));
        if (known == -1 && PyErr_Occurred()) {
            return NULL;
        }
        if (known == length && (length == 0 || PyTuple_GET_ITEM(cache, 2) == PyList_GET_ITEM(filters, 0))) {
            return Py_NewRef(PyTuple_GET_ITEM(cache, 4));
        }
    }
    PyObject *function = global(C_FAST_GLOBALS, I_FILTERS_NOW);
    return function == NULL ? NULL : PyObject_CallNoArgs(function);
}

/* _fast_ufunc._modes(filters): the categories NumPy warns about now (bits), -1 where an error
 * must reach the caller at once; -2 with an error set. Read from the caches of NumPy's error
 * state and of the filters' verdict where they are current, else from the Python function. */
static long
modes_now(PyObject *filters)
{
    PyObject *state = NULL;
    if (configured[C_STATE] != Py_None && PyContextVar_Get(configured[C_STATE], NULL, &state) < 0) {
        return -2;
    }
    PyObject *seen = global(C_FAST_GLOBALS, I_SEEN);
    PyObject *verdict = global(C_FP_GLOBALS, I_LAST_VERDICT);
    long bits = -3;
    if (state != NULL && seen != NULL && PyTuple_CheckExact(seen) && PyTuple_GET_SIZE(seen) == 2 && PyTuple_GET_ITEM(seen, 0) == state) {
        bits = PyLong_AsLong(PyTuple_GET_ITEM(seen, 1));
        if (bits == -1 && PyErr_Occurred()) {
            Py_DECREF(state);
            return -2;
        }
        if (bits > 0) {
            if (verdict != NULL && PyTuple_CheckExact(verdict) && PyTuple_GET_SIZE(verdict) == 2 && PyTuple_GET_ITEM(verdict, 0) == filters) {
                bits = PyTuple_GET_ITEM(verdict, 1) == Py_True ? -1 : bits;
            }
            else {
                bits = -3;
            }
        }
    }
    Py_XDECREF(state);
    if (bits != -3) {
        return bits;
    }
    if (PyErr_Occurred()) {
        return -2;
    }
    PyObject *function = global(C_FAST_GLOBALS, I_MODES);
    PyObject *answer = function == NULL ? NULL : PyObject_CallOneArg(function, filters);
    bits = answer == NULL ? -2 : PyLong_AsLong(answer);
    Py_XDECREF(answer);
    return bits == -1 && PyErr_Occurred() ? -2 : bits;
}

/* _fast_ufunc.call_site(frame, modes, filters) for the frame above the caller's (the user's
 * side of Shoal's dispatch), through fp_warnings' compiled lookup first where call_site is
 * fp_warnings' own. A new reference; NULL with *declined set where there is no such frame. */
static PyObject *
site_of(long modes, PyObject *filters, int *declined)
{
    PyFrameObject *caller = PyEval_GetFrame();
    PyFrameObject *frame = caller == NULL ? NULL : PyFrame_GetBack(caller);
    if (frame == NULL) {
        *declined = 1;
        return NULL;
    }
    PyObject *warned = PyLong_FromLong(modes);
    PyObject *function = warned == NULL ? NULL : global(C_FAST_GLOBALS, I_CALL_SITE);
    PyObject *site = NULL;
    if (function == configured[C_CALL_SITE] && configured[C_KNOWN_CALL_SITE] != Py_None) {
        PyObject *internal = global(C_FP_GLOBALS, I_INTERNAL_FILES), *sites = global(C_FP_GLOBALS, I_CALL_SITES);
        if (internal != NULL && sites != NULL) {
            PyObject *arguments[5] = {(PyObject *)frame, warned, filters, internal, sites};
            site = PyObject_Vectorcall(configured[C_KNOWN_CALL_SITE], arguments, 5, NULL);
            if (site == Py_None) {
                Py_CLEAR(site);
            }
        }
    }
    if (site == NULL && function != NULL && !PyErr_Occurred()) {
        PyObject *arguments[3] = {(PyObject *)frame, warned, filters};
        site = PyObject_Vectorcall(function, arguments, 3, NULL);
    }
    Py_XDECREF(warned);
    Py_DECREF(frame);
    return site;
}

#endif
