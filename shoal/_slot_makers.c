/* Callables that build instances of a slotted class without running its __init__
 * (shoal/frozen_values.py).
 *
 * Recording one NumPy call builds a declaration, a view, an instruction, a base and a lazy array,
 * each an instance of a class with __slots__. In Python the cheapest way is object.__new__ and one
 * slot descriptor's __set__ per field (0.18-0.25 us an object); maker(cls, names, defaults)
 * returns a callable that allocates an instance of `cls` and stores its positional arguments
 * (then the trailing `defaults`) in the slots `names`, in about 0.06 us.
 *
 * Every name must be a writable object slot of `cls` (a member descriptor of `cls` or of a base
 * it extends), checked once when the maker is made. The instance's other slots stay unset, as
 * after object.__new__.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include "_slot_offset.h"

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyTypeObject *type;
    PyObject *defaults;   /* a tuple: the values of the last slots when fewer arguments are given */
    Py_ssize_t count;     /* slots set */
    Py_ssize_t required;  /* count less the defaults */
    Py_ssize_t *offsets;  /* each slot's place in an instance */
    int untracked;        /* left out of the cyclic garbage collector's lists */
} Maker;

static PyObject *
maker_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Maker *self = (Maker *)callable;
    Py_ssize_t given = PyVectorcall_NARGS(nargsf);
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames) > 0) {
        PyErr_Format(PyExc_TypeError, "a maker of %s takes no keyword arguments", self->type->tp_name);
        return NULL;
    }
    if (given < self->required || given > self->count) {
        PyErr_Format(PyExc_TypeError, "a maker of %s takes %zd to %zd arguments (%zd given)",
                     self->type->tp_name, self->required, self->count, given);
        return NULL;
    }
    PyObject *object = self->type->tp_alloc(self->type, 0);
    if (object == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < self->count; i++) {
        PyObject *value = i < given ? args[i] : PyTuple_GET_ITEM(self->defaults, i - self->required);
        PyObject **slot = (PyObject **)((char *)object + self->offsets[i]);
        Py_INCREF(value);
        Py_XSETREF(*slot, value);
        if (self->untracked && PyTuple_CheckExact(value) && PyObject_GC_IsTracked(value)) {
            PyObject_GC_UnTrack(value);
        }
    }
    if (self->untracked && PyObject_GC_IsTracked(object)) {
        PyObject_GC_UnTrack(object);
    }
    return object;
}

static void
maker_dealloc(Maker *self)
{
    Py_XDECREF(self->type);
    Py_XDECREF(self->defaults);
    PyMem_Free(self->offsets);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
maker_repr(Maker *self)
{
    return PyUnicode_FromFormat("<maker of %s>", self->type->tp_name);
}

static PyTypeObject MakerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "shoal._slot_makers.Maker",
    .tp_basicsize = sizeof(Maker),
    .tp_dealloc = (destructor)maker_dealloc,
    .tp_vectorcall_offset = offsetof(Maker, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_repr = (reprfunc)maker_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "Builds an instance of a slotted class from its slots' values (see maker()).",
};

static PyObject *
make(PyObject *module, PyObject *args)
{
    PyTypeObject *type;
    PyObject *names;
    PyObject *defaults = NULL;
    int untracked = 0;
    if (!PyArg_ParseTuple(args, "O!O!|O!p:maker", &PyType_Type, &type, &PyTuple_Type, &names, &PyTuple_Type, &defaults, &untracked)) {
        return NULL;
    }
    Py_ssize_t count = PyTuple_GET_SIZE(names);
    Py_ssize_t defaulted = defaults == NULL ? 0 : PyTuple_GET_SIZE(defaults);
    if (defaulted > count) {
        PyErr_SetString(PyExc_ValueError, "more defaults than slots");
        return NULL;
    }
    if (type->tp_alloc == NULL || (type->tp_flags & Py_TPFLAGS_IS_ABSTRACT)) {
        PyErr_Format(PyExc_TypeError, "cannot make instances of %s", type->tp_name);
        return NULL;
    }
    Maker *self = PyObject_New(Maker, &MakerType);
    if (self == NULL) {
        return NULL;
    }
    self->vectorcall = maker_vectorcall;
    self->untracked = untracked;
    Py_INCREF(type);
    self->type = type;
    self->defaults = defaults == NULL ? PyTuple_New(0) : Py_NewRef(defaults);
    self->count = count;
    self->required = count - defaulted;
    self->offsets = PyMem_New(Py_ssize_t, count > 0 ? count : 1);
    if (self->offsets == NULL) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    if (self->defaults == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *name = PyTuple_GET_ITEM(names, i);
        if (!PyUnicode_Check(name)) {
            PyErr_SetString(PyExc_TypeError, "slot names must be strings");
            Py_DECREF(self);
            return NULL;
        }
        self->offsets[i] = slot_offset(type, name, 1);
        if (self->offsets[i] < 0) {
            Py_DECREF(self);
            return NULL;
        }
    }
    return (PyObject *)self;
}

static PyMethodDef module_methods[] = {
    {"maker", make, METH_VARARGS,
     "maker(cls, names, defaults=()): a callable building an instance of the slotted class cls from "
     "the values of its slots `names`, in order (the last ones may be left to `defaults`), without "
     "running cls's __new__ or __init__."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef slot_makers_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "shoal._slot_makers",
    .m_doc = "Callables that build instances of slotted classes without their __init__.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__slot_makers(void)
{
    if (PyType_Ready(&MakerType) < 0) {
        return NULL;
    }
    return PyModule_Create(&slot_makers_module);
}
