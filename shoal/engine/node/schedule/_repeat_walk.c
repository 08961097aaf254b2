/* The instruction walk of repeated_shape (shoal/engine/node/schedule/repeat.py) in C.
 *
 * A replayed batch is compared with the previous one instruction by instruction; in Python that
 * walk cost about 1 us an instruction, four fifths of a replayed batch's planning. declare()
 * compares the batch's declarations the same way (and begins the renaming); fresh_ids() and
 * first_unfit() are the loops over a replayed batch's ids of verification (VerifiedShapes.admits)
 * and of binding (plan_cache.check_binding); walk() does the
 * same comparison over the slots of the bytecode's View, Instruction and Const objects (their
 * offsets found once, by configure_types()), with the same answers:
 *
 *   True  - every fact is equal; the renaming (new_of, old_of, ids) and the new batch's
 *           constants are filled in exactly as _walk_python fills them;
 *   False - a fact differs;
 *   None  - a value of a kind this walk does not know (a release with other attributes, an
 *           operand that is neither a View, an int nor a Const, an unset slot): the caller runs
 *           the Python walk on fresh copies of what it passed.
 *
 * Attributes, dtypes that are equal but not the same object, and constants that are not the
 * previous batch's very objects are compared by the Python functions given to
 * configure_functions() (exact_key, constant_kind, same_dtype), as the Python walk compares them.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include "../../../_slot_offset.h"

#include "_repeat_compare.h"

static PyObject *
configure_types(PyObject *module, PyObject *args)
{
    PyTypeObject *view, *instruction, *constant, *decl;
    if (!PyArg_ParseTuple(args, "O!O!O!O!:configure_types", &PyType_Type, &view, &PyType_Type, &instruction, &PyType_Type,
                          &constant, &PyType_Type, &decl)) {
        return NULL;
    }
    static const char *names[SLOTS] = {"base", "dtype", "offset", "shape", "strides", "op", "outputs", "inputs", "attrs", "value",
                                       "id", "dtype", "size"};
    PyTypeObject *owners[SLOTS] = {view, view, view, view, view, instruction, instruction, instruction, instruction, constant,
                                   decl, decl, decl};
    Py_ssize_t found[SLOTS];
    for (int i = 0; i < SLOTS; i++) {
        PyObject *name = PyUnicode_FromString(names[i]);
        found[i] = name == NULL ? -1 : slot_offset(owners[i], name, 0);
        Py_XDECREF(name);
        if (found[i] < 0) {
            return NULL;
        }
    }
    memcpy(offsets, found, sizeof(offsets));
    Py_XSETREF(view_type, (PyTypeObject *)Py_NewRef(view));
    Py_XSETREF(instruction_type, (PyTypeObject *)Py_NewRef(instruction));
    Py_XSETREF(const_type, (PyTypeObject *)Py_NewRef(constant));
    Py_XSETREF(decl_type, (PyTypeObject *)Py_NewRef(decl));
    Py_RETURN_NONE;
}

static PyObject *
configure_functions(PyObject *module, PyObject *args)
{
    PyObject *exact, *kind, *same;
    if (!PyArg_ParseTuple(args, "OOO:configure_functions", &exact, &kind, &same)) {
        return NULL;
    }
    Py_XSETREF(exact_key, Py_NewRef(exact));
    Py_XSETREF(constant_kind, Py_NewRef(kind));
    Py_XSETREF(same_dtype, Py_NewRef(same));
    Py_RETURN_NONE;
}

static PyObject *
walk(PyObject *module, PyObject *args)
{
    PyObject *instructions, *old_instructions, *new_of, *old_of, *ids, *old_constants, *constants;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!O!O!:walk", &PyList_Type, &instructions, &PyTuple_Type, &old_instructions, &PyDict_Type,
                          &new_of, &PyDict_Type, &old_of, &PyList_Type, &ids, &PyList_Type, &old_constants, &PyList_Type, &constants)) {
        return NULL;
    }
    if (view_type == NULL || exact_key == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "walk() before configure_types() and configure_functions()");
        return NULL;
    }
    PyObject *equal_new = PyDict_New();
    PyObject *equal_old = PyDict_New();
    if (equal_new == NULL || equal_old == NULL) {
        Py_XDECREF(equal_new);
        Py_XDECREF(equal_old);
        return NULL;
    }
    Py_ssize_t count = PyList_GET_SIZE(instructions);
    if (PyTuple_GET_SIZE(old_instructions) < count) {
        count = PyTuple_GET_SIZE(old_instructions);
    }
    int alike = 1;
    for (Py_ssize_t i = 0; i < count && alike == 1; i++) {
        alike = compare_instruction(PyList_GET_ITEM(instructions, i), PyTuple_GET_ITEM(old_instructions, i), new_of, old_of, ids,
                                    old_constants, constants, equal_new, equal_old);
    }
    Py_DECREF(equal_new);
    Py_DECREF(equal_old);
    if (alike < 0) {
        return NULL;
    }
    if (alike == UNDECIDED) {
        Py_RETURN_NONE;
    }
    return PyBool_FromLong(alike);
}

/* 1 if `item` is in `container` (a dict or a set), 0 if not, -1 on error. */
static inline int
contains(PyObject *container, PyObject *item)
{
    return PyDict_Check(container) ? PyDict_Contains(container, item) : PySet_Contains(container, item);
}

static PyObject *
declare(PyObject *module, PyObject *args)
{
    PyObject *decls, *old_decls, *old_ids, *new_of, *old_of, *ids, *data, *donated;
    int plain;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!O!OOp:declare", &PyList_Type, &decls, &PyTuple_Type, &old_decls, &PyTuple_Type, &old_ids,
                          &PyDict_Type, &new_of, &PyDict_Type, &old_of, &PyList_Type, &ids, &data, &donated, &plain)) {
        return NULL;
    }
    if (decl_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "declare() before configure_types()");
        return NULL;
    }
    if ((!PyDict_Check(data) && !PyAnySet_Check(data)) || (!PyDict_Check(donated) && !PyAnySet_Check(donated))) {
        Py_RETURN_NONE;
    }
    Py_ssize_t count = PyList_GET_SIZE(decls);
    if (PyTuple_GET_SIZE(old_decls) < count || PyTuple_GET_SIZE(old_ids) < count) {
        Py_RETURN_NONE;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *decl = PyList_GET_ITEM(decls, i), *old = PyTuple_GET_ITEM(old_decls, i), *was = PyTuple_GET_ITEM(old_ids, i);
        if (Py_TYPE(decl) != decl_type || !PyTuple_Check(old) || PyTuple_GET_SIZE(old) != 5) {
            Py_RETURN_NONE;
        }
        PyObject *base = slot(decl, D_ID), *dtype = slot(decl, D_DTYPE), *size = slot(decl, D_SIZE);
        if (base == NULL || dtype == NULL || size == NULL || dtype != PyTuple_GET_ITEM(old, 0)) {
            Py_RETURN_NONE; /* an equal dtype that is another object: Python compares it */
        }
        int known = PyDict_Contains(old_of, base);
        if (known != 0) {
            if (known < 0) {
                return NULL;
            }
            Py_RETURN_FALSE;
        }
        int alike = equal(size, PyTuple_GET_ITEM(old, 2));
        if (alike <= 0) {
            return alike < 0 ? NULL : Py_NewRef(Py_False);
        }
        if (!plain) {
            int carried = contains(data, base), given = contains(donated, base);
            int was_carried = PyObject_IsTrue(PyTuple_GET_ITEM(old, 3)), was_given = PyObject_IsTrue(PyTuple_GET_ITEM(old, 4));
            if (carried < 0 || given < 0 || was_carried < 0 || was_given < 0) {
                return NULL;
            }
            if (carried != was_carried || given != was_given) {
                Py_RETURN_FALSE;
            }
        }
        if (PyDict_SetItem(new_of, was, base) < 0 || PyDict_SetItem(old_of, base, was) < 0 || PyList_Append(ids, base) < 0) {
            return NULL;
        }
    }
    Py_RETURN_TRUE;
}

static PyObject *
fresh_ids(PyObject *module, PyObject *args)
{
    PyObject *ids, *known;
    Py_ssize_t declared;
    if (!PyArg_ParseTuple(args, "O!nO!:fresh_ids", &PyTuple_Type, &ids, &declared, &PyDict_Type, &known)) {
        return NULL;
    }
    Py_ssize_t count = PyTuple_GET_SIZE(ids);
    for (Py_ssize_t position = 0; position < count; position++) {
        PyObject *base = PyTuple_GET_ITEM(ids, position);
        if (!PyLong_CheckExact(base)) {
            Py_RETURN_FALSE;
        }
        int overflow;
        long long value = PyLong_AsLongLongAndOverflow(base, &overflow);
        if (overflow < 0 || (overflow == 0 && value < 0)) {
            if (value == -1 && PyErr_Occurred()) {
                return NULL;
            }
            Py_RETURN_FALSE;
        }
        if (position < declared) {
            int live = PyDict_Contains(known, base);
            if (live != 0) {
                return live < 0 ? NULL : Py_NewRef(Py_False);
            }
        }
    }
    Py_RETURN_TRUE;
}

static PyObject *
first_unfit(PyObject *module, PyObject *args)
{
    PyObject *ids, *facts, *live;
    if (!PyArg_ParseTuple(args, "O!O!O!:first_unfit", &PyTuple_Type, &ids, &PyList_Type, &facts, &PyDict_Type, &live)) {
        return NULL;
    }
    if (decl_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "first_unfit() before configure_types()");
        return NULL;
    }
    Py_ssize_t count = PyTuple_GET_SIZE(ids);
    if (PyList_GET_SIZE(facts) < count) {
        count = PyList_GET_SIZE(facts);
    }
    for (Py_ssize_t position = 0; position < count; position++) {
        PyObject *planned = PyList_GET_ITEM(facts, position);
        if (planned == Py_None) {
            continue;
        }
        PyObject *decl = PyDict_GetItemWithError(live, PyTuple_GET_ITEM(ids, position));
        if (decl == NULL) {
            if (PyErr_Occurred()) {
                return NULL;
            }
            return PyLong_FromSsize_t(position);
        }
        if (Py_TYPE(decl) != decl_type || !PyTuple_Check(planned) || PyTuple_GET_SIZE(planned) != 3) {
            return PyLong_FromSsize_t(position); /* Python words what is wrong */
        }
        PyObject *dtype = slot(decl, D_DTYPE), *size = slot(decl, D_SIZE);
        if (dtype == NULL || size == NULL || dtype != PyTuple_GET_ITEM(planned, 0)) {
            return PyLong_FromSsize_t(position); /* an equal dtype that is another object: Python decides */
        }
        int alike = equal(size, PyTuple_GET_ITEM(planned, 2));
        if (alike != 1) {
            return alike < 0 ? NULL : PyLong_FromSsize_t(position);
        }
    }
    return PyLong_FromLong(-1);
}

static PyMethodDef module_methods[] = {
    {"fresh_ids", fresh_ids, METH_VARARGS,
     "fresh_ids(ids, declared, known): True if every id is a non-negative int and none of the first `declared` is in known."},
    {"first_unfit", first_unfit, METH_VARARGS,
     "first_unfit(ids, facts, live): the first position whose base is not live as its (dtype, char, size) fact says "
     "(checked by dtype identity: an equal dtype of another object is reported for Python to decide), or -1."},
    {"declare", declare, METH_VARARGS,
     "declare(decls, old_decls, old_ids, new_of, old_of, ids, data, donated, plain): the declarations compared as repeated_shape "
     "compares them: True (renaming begun), False, or None for a value of a kind it does not know."},
    {"configure_types", configure_types, METH_VARARGS,
     "configure_types(View, Instruction, Const, BaseDecl): the classes whose slots the comparisons read."},
    {"configure_functions", configure_functions, METH_VARARGS,
     "configure_functions(exact_key, constant_kind, same_dtype): what walk() calls for what it does not compare itself."},
    {"walk", walk, METH_VARARGS,
     "walk(instructions, old_instructions, new_of, old_of, ids, old_constants, constants): True if the instructions repeat "
     "the old ones (the renaming and constants filled in), False if not, None if a value is of a kind it does not know."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef repeat_walk_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "shoal.engine.node.schedule._repeat_walk",
    .m_doc = "The instruction walk of repeated_shape in C.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__repeat_walk(void)
{
    release_name = PyUnicode_InternFromString("release");
    gather_name = PyUnicode_InternFromString("gather");
    base_name = PyUnicode_InternFromString("base");
    if (release_name == NULL || gather_name == NULL || base_name == NULL) {
        return NULL;
    }
    return PyModule_Create(&repeat_walk_module);
}
