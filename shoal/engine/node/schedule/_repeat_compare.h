/* Comparing one instruction of a replayed batch with the previous batch's (_repeat_walk.c):
 * the slots of the bytecode's objects, the renaming of bases, constants and attributes, with the
 * answers of _repeat_walk.c (1 equal, 0 different, UNDECIDED for the Python walk). */
#ifndef SHOAL_REPEAT_COMPARE_H
#define SHOAL_REPEAT_COMPARE_H

#include <Python.h>

enum { V_BASE, V_DTYPE, V_OFFSET, V_SHAPE, V_STRIDES, I_OP, I_OUTPUTS, I_INPUTS, I_ATTRS, C_VALUE, D_ID, D_DTYPE, D_SIZE, SLOTS };

static PyTypeObject *view_type = NULL;
static PyTypeObject *decl_type = NULL;
static PyTypeObject *instruction_type = NULL;
static PyTypeObject *const_type = NULL;
static PyObject *exact_key = NULL;
static PyObject *constant_kind = NULL;
static PyObject *same_dtype = NULL;
static PyObject *release_name = NULL;
static PyObject *gather_name = NULL;
static PyObject *base_name = NULL;
static Py_ssize_t offsets[SLOTS];

#define UNDECIDED 2

/* Slot `which` of `object`, borrowed, or NULL (no error set) if it is unset. */
static inline PyObject *
slot(PyObject *object, int which)
{
    return *(PyObject **)((char *)object + offsets[which]);
}


/* 1 if `a` equals `b` (`a is b` first), 0 if not, -1 on error. */
static inline int
equal(PyObject *a, PyObject *b)
{
    return a == b ? 1 : PyObject_RichCompareBool(a, b, Py_EQ);
}

/* 1 if `a` and `b` are the same string, 0 if not. */
static inline int
same_name(PyObject *a, PyObject *b)
{
    return a == b || (PyUnicode_Check(a) && PyUnicode_Check(b) && PyUnicode_Compare(a, b) == 0);
}

/* Pair old base `was` with new base `value` in the renaming: 1 if consistent, 0 if not, -1 on
 * error. */
static int
pair(PyObject *new_of, PyObject *old_of, PyObject *ids, PyObject *value, PyObject *was)
{
    PyObject *mapped = PyDict_GetItemWithError(new_of, was);
    if (mapped == NULL) {
        if (PyErr_Occurred()) {
            return -1;
        }
        int known = PyDict_Contains(old_of, value);
        if (known != 0) {
            return known < 0 ? -1 : 0;
        }
        if (PyDict_SetItem(new_of, was, value) < 0 || PyDict_SetItem(old_of, value, was) < 0 || PyList_Append(ids, value) < 0) {
            return -1;
        }
        return 1;
    }
    return equal(mapped, value);
}

/* Compare a View with its counterpart: 1 if alike (and renamed consistently), 0 if not, -1 on
 * error, UNDECIDED for an unset slot. */
static int
compare_views(PyObject *value, PyObject *was, PyObject *new_of, PyObject *old_of, PyObject *ids)
{
    if (Py_TYPE(was) != view_type) {
        return 0;
    }
    if (value != was) {
        PyObject *dtype = slot(value, V_DTYPE), *old_dtype = slot(was, V_DTYPE);
        if (dtype == NULL || old_dtype == NULL) {
            return UNDECIDED;
        }
        if (dtype != old_dtype) {
            PyObject *same = PyObject_CallFunctionObjArgs(same_dtype, dtype, old_dtype, NULL);
            if (same == NULL) {
                return -1;
            }
            int alike = PyObject_IsTrue(same);
            Py_DECREF(same);
            if (alike <= 0) {
                return alike;
            }
        }
        for (int which = V_OFFSET; which <= V_STRIDES; which++) {
            PyObject *a = slot(value, which), *b = slot(was, which);
            if (a == NULL || b == NULL) {
                return UNDECIDED;
            }
            int alike = equal(a, b);
            if (alike <= 0) {
                return alike;
            }
        }
    }
    PyObject *base = slot(value, V_BASE), *old_base = slot(was, V_BASE);
    if (base == NULL || old_base == NULL) {
        return UNDECIDED;
    }
    return pair(new_of, old_of, ids, base, old_base);
}

/* Compare a constant with the previous batch's constant at the same position. */
static int
compare_constants(PyObject *value, PyObject *was, PyObject *old_constants, PyObject *constants, PyObject *equal_new,
                  PyObject *equal_old)
{
    if (Py_TYPE(was) == view_type) {
        return 0;
    }
    if (Py_TYPE(value) != const_type) {
        return UNDECIDED;
    }
    PyObject *new_value = slot(value, C_VALUE);
    Py_ssize_t position = PyList_GET_SIZE(constants);
    if (new_value == NULL || position >= PyList_GET_SIZE(old_constants)) {
        return UNDECIDED;
    }
    PyObject *old = PyList_GET_ITEM(old_constants, position);
    if (!PyTuple_Check(old) || PyTuple_GET_SIZE(old) != 3) {
        return UNDECIDED;
    }
    PyObject *old_kind = PyTuple_GET_ITEM(old, 0), *old_key = PyTuple_GET_ITEM(old, 1), *old_value = PyTuple_GET_ITEM(old, 2);
    PyObject *new_key;
    if (new_value == old_value) { /* a loop's literal: the same object every iteration */
        new_key = Py_NewRef(old_key);
    }
    else {
        PyObject *kind = PyObject_CallOneArg(constant_kind, new_value);
        if (kind == NULL) {
            return -1;
        }
        int differs = PyObject_RichCompareBool(kind, old_kind, Py_NE);
        Py_DECREF(kind);
        if (differs != 0) {
            return differs < 0 ? -1 : 0;
        }
        new_key = PyObject_CallOneArg(exact_key, new_value);
        if (new_key == NULL) {
            return -1;
        }
    }
    int result = 1;
    PyObject *paired = PyDict_SetDefault(equal_new, new_key, old_key);
    int differs = paired == NULL ? -1 : PyObject_RichCompareBool(paired, old_key, Py_NE);
    if (differs == 0) {
        paired = PyDict_SetDefault(equal_old, old_key, new_key);
        differs = paired == NULL ? -1 : PyObject_RichCompareBool(paired, new_key, Py_NE);
    }
    if (differs != 0) {
        result = differs < 0 ? -1 : 0;
    }
    else if (PyList_Append(constants, value) < 0) {
        result = -1;
    }
    Py_DECREF(new_key);
    return result;
}

/* Compare the operands of one instruction part (outputs or inputs) with the old ones. */
static int
compare_operands(PyObject *values, PyObject *old_values, PyObject *new_of, PyObject *old_of, PyObject *ids,
                 PyObject *old_constants, PyObject *constants, PyObject *equal_new, PyObject *equal_old)
{
    Py_ssize_t count = PyTuple_GET_SIZE(values);
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *value = PyTuple_GET_ITEM(values, i), *was = PyTuple_GET_ITEM(old_values, i);
        int alike;
        if (Py_TYPE(value) == view_type) {
            alike = compare_views(value, was, new_of, old_of, ids);
        }
        else if (PyLong_CheckExact(value)) {
            alike = 0; /* not an operand: the full key decides */
        }
        else {
            alike = compare_constants(value, was, old_constants, constants, equal_new, equal_old);
        }
        if (alike != 1) {
            return alike;
        }
    }
    return 1;
}

/* Compare a release with the old one by the bases they release. */
static int
compare_releases(PyObject *attrs, PyObject *old_attrs, PyObject *new_of, PyObject *old_of, PyObject *ids)
{
    if (PyTuple_GET_SIZE(attrs) != 1 || PyTuple_GET_SIZE(old_attrs) != 1) {
        return UNDECIDED;
    }
    PyObject *item = PyTuple_GET_ITEM(attrs, 0), *old_item = PyTuple_GET_ITEM(old_attrs, 0);
    if (!PyTuple_Check(item) || !PyTuple_Check(old_item) || PyTuple_GET_SIZE(item) != 2 || PyTuple_GET_SIZE(old_item) != 2 ||
        !same_name(PyTuple_GET_ITEM(item, 0), base_name) || !same_name(PyTuple_GET_ITEM(old_item, 0), base_name)) {
        return UNDECIDED;
    }
    PyObject *value = PyTuple_GET_ITEM(item, 1), *was = PyTuple_GET_ITEM(old_item, 1);
    if (!PyLong_CheckExact(value) || !PyLong_CheckExact(was)) {
        return 0;
    }
    return pair(new_of, old_of, ids, value, was);
}

/* Compare two non-empty attribute tuples by their exact keys. */
static int
compare_attrs(PyObject *attrs, PyObject *old_attrs)
{
    PyObject *key = PyObject_CallOneArg(exact_key, attrs);
    if (key == NULL) {
        return -1;
    }
    PyObject *old_key = PyObject_CallOneArg(exact_key, old_attrs);
    if (old_key == NULL) {
        Py_DECREF(key);
        return -1;
    }
    int differs = PyObject_RichCompareBool(key, old_key, Py_NE);
    Py_DECREF(key);
    Py_DECREF(old_key);
    return differs < 0 ? -1 : !differs;
}

static int
compare_instruction(PyObject *instruction, PyObject *old, PyObject *new_of, PyObject *old_of, PyObject *ids,
                    PyObject *old_constants, PyObject *constants, PyObject *equal_new, PyObject *equal_old)
{
    if (Py_TYPE(instruction) != instruction_type || Py_TYPE(old) != instruction_type) {
        return UNDECIDED;
    }
    PyObject *op = slot(instruction, I_OP), *old_op = slot(old, I_OP);
    PyObject *attrs = slot(instruction, I_ATTRS), *old_attrs = slot(old, I_ATTRS);
    PyObject *outputs = slot(instruction, I_OUTPUTS), *old_outputs = slot(old, I_OUTPUTS);
    PyObject *inputs = slot(instruction, I_INPUTS), *old_inputs = slot(old, I_INPUTS);
    if (op == NULL || old_op == NULL || attrs == NULL || old_attrs == NULL || !PyTuple_Check(attrs) || !PyTuple_Check(old_attrs)) {
        return UNDECIDED;
    }
    if (op != old_op) {
        int alike = PyObject_RichCompareBool(op, old_op, Py_NE);
        if (alike != 0) {
            return alike < 0 ? -1 : 0;
        }
    }
    if (same_name(op, release_name)) {
        return compare_releases(attrs, old_attrs, new_of, old_of, ids);
    }
    if (same_name(op, gather_name)) {
        return 0; /* its index values are keyed (row_gather): the full key decides */
    }
    if (attrs != old_attrs && (PyTuple_GET_SIZE(attrs) || PyTuple_GET_SIZE(old_attrs))) {
        int alike = compare_attrs(attrs, old_attrs);
        if (alike != 1) {
            return alike;
        }
    }
    if (outputs == NULL || old_outputs == NULL || inputs == NULL || old_inputs == NULL || !PyTuple_Check(outputs) ||
        !PyTuple_Check(old_outputs) || !PyTuple_Check(inputs) || !PyTuple_Check(old_inputs)) {
        return UNDECIDED;
    }
    if (PyTuple_GET_SIZE(outputs) != PyTuple_GET_SIZE(old_outputs) || PyTuple_GET_SIZE(inputs) != PyTuple_GET_SIZE(old_inputs)) {
        return 0;
    }
    int alike = compare_operands(outputs, old_outputs, new_of, old_of, ids, old_constants, constants, equal_new, equal_old);
    if (alike != 1) {
        return alike;
    }
    return compare_operands(inputs, old_inputs, new_of, old_of, ids, old_constants, constants, equal_new, equal_old);
}


#endif
