/* What shoal/numpy/_fast_record.c works with: the objects configure() is given by name, the
 * names it reads at each call, interned once, and the slot offsets of the classes it reads. */
#ifndef SHOAL_FAST_RECORD_STATE_H
#define SHOAL_FAST_RECORD_STATE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* The objects configure() is given, by name. */
enum {
    C_LAZY, C_BASE_TYPE, C_VIEW_TYPE, C_SIGNATURE_TYPE, C_GENERIC, C_OBJECT_SCALAR, C_MATMUL,
    C_SIGNATURES, C_UFUNC_KIND, C_NOT_SETTLED, C_NOT_FAST, C_RECORD_PYTHON,
    C_RECORDED, C_FAST_GLOBALS, C_FP_GLOBALS, C_FILTER_GLOBALS, C_WARNINGS_GLOBALS,
    C_RECORDING_GLOBALS, C_STATE, C_CALL_SITE, C_KNOWN_CALL_SITE, C_NEW_CONST, C_MAKE_LAZY,
    C_NO_QUIET_STORES, C_COUNT
};
static const char *configured_names[C_COUNT] = {
    "ndarray", "LazyBase", "View", "Signature", "generic", "object_", "matmul",
    "signatures", "ufunc_kind", "not_settled", "not_fast", "record_python",
    "recorded", "fast_globals", "fp_globals", "filter_globals", "warnings_globals",
    "recording_globals", "state", "call_site", "known_call_site", "new_const", "make_lazy_array",
    "no_quiet_stores",
};
static PyObject *configured[C_COUNT];

/* Interned names of attributes and module globals read at each call. */
enum {
    I_CACHE, I_FILTERS, I_DEFAULT_ACTION, I_SEEN, I_LAST_VERDICT, I_INTERNAL_FILES, I_CALL_SITES,
    I_FILTERS_NOW, I_MODES, I_CALL_SITE, I_RECORD_NEW, I_RECORD_CALL, I_SETTLED_THRESHOLD, I_OUT,
    I_DTYPE, I_SETTLED_CALLS, I_CALL, I_ITEMSIZE, I_COUNT
};
static const char *interned_texts[I_COUNT] = {
    "_cache", "filters", "defaultaction", "_seen", "_last_verdict", "_internal_files", "_call_sites",
    "filters_now", "_modes", "call_site", "record_new", "record_call", "settled_threshold", "out",
    "dtype", "SETTLED_CALLS", "call", "itemsize",
};
static PyObject *interned[I_COUNT];

/* Slot offsets of the classes record() reads. */
enum {
    S_LAZY_VIEW, S_LAZY_BASE, S_LAZY_READONLY, S_LAZY_SCALAR, S_BASE_RUNTIME, S_VIEW_DTYPE,
    S_VIEW_SHAPE, S_VIEW_STRIDES, S_SIG_OPCODE, S_SIG_DTYPE, S_SIG_SHAPE, S_SIG_STRIDES,
    S_SIG_SIZE, S_SIG_LARGEST, S_SIG_OUT_SIZE, S_SIG_SILENT, S_COUNT
};
static Py_ssize_t offsets[S_COUNT];

static PyObject *two = NULL;

/* Slot `slot` of `object` (borrowed; NULL where unset). */
static inline PyObject *
slot(PyObject *object, int which)
{
    return *(PyObject **)((char *)object + offsets[which]);
}

/* Global `name` of the module whose __dict__ is configured[globals_index] (borrowed; NULL where absent). */
static inline PyObject *
global(int globals_index, int name)
{
    return PyDict_GetItemWithError(configured[globals_index], interned[name]);
}

#endif
