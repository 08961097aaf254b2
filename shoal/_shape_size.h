/* The element count of a shape tuple, for the C modules that read views' shapes
 * (shoal/_settled_calls.c, shoal/numpy/_fast_record.c). */
#ifndef SHOAL_SHAPE_SIZE_H
#define SHOAL_SHAPE_SIZE_H

#include <Python.h>

/* The product of `shape`'s lengths (a tuple of ints), or -1 (no error set) where it is not such
 * a tuple or the product does not fit a Py_ssize_t. */
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

/* 1 if an array of `size` elements of `itemsize` bytes is below `threshold` (a runtime's eager or
 * settled threshold, in elements): fewer elements, or fewer bytes than `threshold` elements of 4
 * bytes (REFERENCE_ITEMSIZE in shoal/array_sizes.py, which says why). */
static inline int
below_threshold(Py_ssize_t size, Py_ssize_t itemsize, Py_ssize_t threshold)
{
    if (size < threshold) {
        return 1;
    }
    if (itemsize <= 0 || itemsize >= 4 || threshold > PY_SSIZE_T_MAX / 4 || size > PY_SSIZE_T_MAX / 4) {
        return 0;
    }
    return size * itemsize < threshold * 4;
}

/* `object`'s attribute `name` where it is an int of at least 0, or -1 (no error set). */
static Py_ssize_t
attribute_count(PyObject *object, PyObject *name)
{
    PyObject *value = PyObject_GetAttr(object, name);
    Py_ssize_t count = value == NULL || !PyLong_CheckExact(value) ? -1 : PyLong_AsSsize_t(value);
    Py_XDECREF(value);
    if (count < 0) {
        PyErr_Clear();
    }
    return count;
}

/* below_threshold for `size` elements of `typed` (a dtype or an array), whose attribute
 * `itemsize` (its interned name) is read only where the count alone does not decide; -1 (no
 * error set) where it cannot be read or `typed` is NULL. */
static int
below_threshold_of(Py_ssize_t size, PyObject *typed, PyObject *itemsize, Py_ssize_t threshold)
{
    if (size < threshold) {
        return 1;
    }
    Py_ssize_t bytes = typed == NULL ? -1 : attribute_count(typed, itemsize);
    return bytes < 0 ? -1 : below_threshold(size, bytes, threshold);
}

#endif
