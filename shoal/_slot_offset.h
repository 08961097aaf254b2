/* Where a slotted class keeps one of its slots, for C code that reads or fills instances of it
 * directly (shoal/_slot_makers.c, shoal/engine/node/schedule/_repeat_walk.c). */
#ifndef SHOAL_SLOT_OFFSET_H
#define SHOAL_SLOT_OFFSET_H

#include <Python.h>
#include <structmember.h>

/* The offset of object slot `name` of `type` (a member descriptor of `type` or of a class it
 * extends), or -1 with an error set; with `writable`, a read-only slot is refused too. */
static Py_ssize_t
slot_offset(PyTypeObject *type, PyObject *name, int writable)
{
    PyObject *descriptor = PyObject_GetAttr((PyObject *)type, name);
    if (descriptor == NULL) {
        return -1;
    }
    Py_ssize_t offset = -1;
    if (!Py_IS_TYPE(descriptor, &PyMemberDescr_Type)) {
        PyErr_Format(PyExc_TypeError, "%R is not a slot of %s", name, type->tp_name);
    }
    else {
        PyMemberDef *member = ((PyMemberDescrObject *)descriptor)->d_member;
        if ((member->type != T_OBJECT && member->type != T_OBJECT_EX) || (writable && (member->flags & READONLY))) {
            PyErr_Format(PyExc_TypeError, writable ? "slot %R of %s does not hold a Python object or is read-only"
                                                   : "slot %R of %s does not hold a Python object",
                         name, type->tp_name);
        }
        else if (!PyType_IsSubtype(type, PyDescr_TYPE(descriptor))) {
            PyErr_Format(PyExc_TypeError, "slot %R is not one of %s's", name, type->tp_name);
        }
        else {
            offset = member->offset;
        }
    }
    Py_DECREF(descriptor);
    return offset;
}

#endif
