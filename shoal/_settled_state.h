/* What shoal/_settled_calls.c keeps between calls (the classes, makers and tables
 * configure() is given, the names it reads) and its small helpers. One translation unit:
 * shoal/_settled_calls.c includes this and the headers that use it. */
#ifndef SHOAL_SETTLED_STATE_H
#define SHOAL_SETTLED_STATE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

#include "_runtime_attributes.h"
#include "_shape_size.h"
#include "_slot_offset.h"

#define MOST_OPERANDS 4

enum { S_BASE, S_VIEW, S_SCALAR, S_HELD, S_RUNTIME, S_ACCESSES, S_SHAPE, S_DTYPE, S_OFFSET, S_STRIDES, S_MEMORY,
       S_NOUT, S_BASE_ATTR, S_RESHAPE, S_SETTLED, S_MIRRORS, S_EAGER, S_SIZE, S_ITEMSIZE, S_READONLY, S_WRITABLE, S_SAME_KIND, S_CHAR, S_NAMES };
static const char *slot_texts[S_NAMES] = {"_base", "_view", "_scalar", "_held", "runtime", "accesses", "shape", "dtype", "offset",
                                          "strides", "memory", "nout", "base", "reshape", "_settled", "_mirrors",
                                          "eager_threshold", "size", "itemsize", "_readonly", "_writable", "same_kind", "char"};
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
static PyObject *trampolines_at = NULL;    /* the same entries by (id(code), bytecode offset), as found */
static PyObject *own_view = NULL;          /* _held_indexing.own_view */
static PyObject *at_user_line = NULL, *wrap_numpy = NULL, *is_supported = NULL, *not_settled = NULL;
static PyObject *drawn_noted = NULL;      /* drawn._noted: id(data) -> the recipe of a random draw */
static PyObject *supported = NULL;         /* dtype -> its item size where bytecode carries it, else 0, as met */
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
    int held;           /* its base is held (shoal.held) */
} Operand;

/* What the Python path's hold rules (shoal.held) read, once per call: HOLD_RUN and HOLD_BACK_ACCESSES. */
typedef struct {
    Py_ssize_t run;
    Py_ssize_t back;
} HoldRules;

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


#endif
