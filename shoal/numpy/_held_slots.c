/* The indexing slots of the lazy ndarray while its base is held (shoal/numpy/_slots.py).
 *
 * A held base's memory is NumPy's: `a[i, j]` and `a[i] = row` are NumPy's indexing of the view
 * kept in `_held`. Written in Python, the lazy class's `__getitem__` cost 89 ns for an element
 * against NumPy's 38 (the interpreter's frame for the method); as the type's C slots they cost
 * what NumPy's do. Only the common cases run here, and only while `_held` is set:
 *
 *   read:  an int key, or a tuple whose first item is an int or one of the NumPy integer types
 *          given to configure() (a row or an element); a slice or another tuple whose view
 *          has fewer than `_large` elements (a column);
 *   write: a NumPy array of the memory's very dtype, or a value whose type is in `_quiet` (the
 *          scalar types whose store never warns).
 *
 * Everything else calls the class's `_getitem` / `_setitem` (the same rules in Python, which
 * also handle the bases that are not held). `del a[k]` raises NumPy's error. `a.item(...)` is
 * the held memory's `item`, else the class's `_item`.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

typedef struct {
    PyObject_HEAD
    PyObject *held;  /* the NumPy view of the held base's memory, or NULL / None */
    PyObject *quiet; /* a frozenset of types whose store into `held` never warns */
    Py_ssize_t large; /* views of at least this many elements of `held` are left to Python */
} HeldSlots;

static PyObject *numpy_integers = NULL; /* frozenset of NumPy integer types */
static PyObject *numpy_ndarray = NULL;  /* numpy.ndarray */
static PyObject *name_getitem = NULL;
static PyObject *name_setitem = NULL;
static PyObject *name_dtype = NULL;
static PyObject *name_size = NULL;
static PyObject *name_item = NULL;
static PyObject *name_python_item = NULL;

static int
is_index(PyObject *item)
{
    PyTypeObject *type = Py_TYPE(item);
    if (type == &PyLong_Type) {
        return 1;
    }
    if (numpy_integers == NULL) {
        return 0;
    }
    return PySet_Contains(numpy_integers, (PyObject *)type);
}

/* `held[key]` if it is small (or not an array), else NULL with no error set: the caller leaves
 * the key to Python, which hands a large view's work back to the engine. */
static PyObject *
small_view(PyObject *held, Py_ssize_t large, PyObject *key)
{
    PyObject *result = PyObject_GetItem(held, key);
    if (result == NULL || (PyObject *)Py_TYPE(result) != numpy_ndarray) {
        return result;
    }
    PyObject *size = PyObject_GetAttr(result, name_size);
    if (size == NULL) {
        Py_DECREF(result);
        return NULL;
    }
    Py_ssize_t elements = PyLong_AsSsize_t(size);
    Py_DECREF(size);
    if (elements == -1 && PyErr_Occurred()) {
        Py_DECREF(result);
        return NULL;
    }
    if (elements < large) {
        return result;
    }
    Py_DECREF(result); /* dropped before Python decides: a live view of the memory keeps the hold */
    return NULL;
}

/* The read of the held memory for `key`, or NULL with no error set where Python decides. */
static PyObject *
held_read(HeldSlots *slots, PyObject *held, PyObject *key)
{
    if (numpy_ndarray == NULL) {
        return NULL; /* not configured: Python decides every case */
    }
    PyTypeObject *kind = Py_TYPE(key);
    if (kind == &PyLong_Type) {
        return PyObject_GetItem(held, key);
    }
    if (kind != &PyTuple_Type && kind != &PySlice_Type) {
        return NULL;
    }
    if (kind == &PyTuple_Type && PyTuple_GET_SIZE(key) > 0) {
        int index = is_index(PyTuple_GET_ITEM(key, 0));
        if (index < 0) {
            return NULL;
        }
        if (index) {
            return PyObject_GetItem(held, key);
        }
    }
    return small_view(held, slots->large, key);
}

/* The memory is referenced for as long as a call may run Python code (a key's `__index__`),
 * which could end the hold and drop the array's own reference. */
static PyObject *
held_subscript(PyObject *self, PyObject *key)
{
    HeldSlots *slots = (HeldSlots *)self;
    PyObject *held = slots->held;
    if (held != NULL && held != Py_None) {
        Py_INCREF(held);
        PyObject *result = held_read(slots, held, key);
        Py_DECREF(held);
        if (result != NULL || PyErr_Occurred()) {
            return result;
        }
    }
    return PyObject_CallMethodOneArg(self, name_getitem, key);
}

static int
same_dtype(PyObject *value, PyObject *held)
{
    PyObject *mine = PyObject_GetAttr(value, name_dtype);
    if (mine == NULL) {
        return -1;
    }
    PyObject *theirs = PyObject_GetAttr(held, name_dtype);
    if (theirs == NULL) {
        Py_DECREF(mine);
        return -1;
    }
    int same = mine == theirs;
    Py_DECREF(mine);
    Py_DECREF(theirs);
    return same;
}

static int
held_ass_subscript(PyObject *self, PyObject *key, PyObject *value)
{
    if (value == NULL) {
        PyErr_SetString(PyExc_ValueError, "cannot delete array elements");
        return -1;
    }
    HeldSlots *slots = (HeldSlots *)self;
    PyObject *held = slots->held;
    if (held != NULL && held != Py_None) {
        PyObject *kind = (PyObject *)Py_TYPE(value);
        int direct = 0;
        if (kind == numpy_ndarray) {
            direct = same_dtype(value, held);
        }
        else if (slots->quiet != NULL && PyAnySet_Check(slots->quiet)) {
            direct = PySet_Contains(slots->quiet, kind);
        }
        if (direct < 0) {
            return -1;
        }
        if (direct) {
            Py_INCREF(held);
            int stored = PyObject_SetItem(held, key, value);
            Py_DECREF(held);
            return stored;
        }
    }
    PyObject *result = PyObject_CallMethodObjArgs(self, name_setitem, key, value, NULL);
    if (result == NULL) {
        return -1;
    }
    Py_DECREF(result);
    return 0;
}

static int
held_traverse(HeldSlots *self, visitproc visit, void *arg)
{
    Py_VISIT(self->held);
    Py_VISIT(self->quiet);
    return 0;
}

static int
held_clear(HeldSlots *self)
{
    Py_CLEAR(self->held);
    Py_CLEAR(self->quiet);
    return 0;
}

static void
held_dealloc(HeldSlots *self)
{
    PyObject_GC_UnTrack(self);
    held_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The sequence slots a class with a Python `__getitem__` gets too: `reversed()` and libraries that
 * ask `PySequence_Check` (pandas' `is_scalar`) see what they saw before. */
static PyObject *
held_item(PyObject *self, Py_ssize_t index)
{
    PyObject *key = PyLong_FromSsize_t(index);
    if (key == NULL) {
        return NULL;
    }
    PyObject *result = held_subscript(self, key);
    Py_DECREF(key);
    return result;
}

static int
held_ass_item(PyObject *self, Py_ssize_t index, PyObject *value)
{
    PyObject *key = PyLong_FromSsize_t(index);
    if (key == NULL) {
        return -1;
    }
    int result = held_ass_subscript(self, key, value);
    Py_DECREF(key);
    return result;
}

static PySequenceMethods held_sequence = {
    .sq_item = held_item,
    .sq_ass_item = held_ass_item,
};

/* `a.item(...)`: the held memory's own `item`, else the class's `_item`. */
static PyObject *
held_item_method(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t count = PyVectorcall_NARGS(nargsf) + (kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames));
    PyObject *held = ((HeldSlots *)self)->held;
    PyObject *receiver = held != NULL && held != Py_None ? held : self;
    PyObject *name = receiver == held ? name_item : name_python_item;
    Py_INCREF(receiver);
    PyObject *small[9];
    PyObject **stack = count < 9 ? small : PyMem_New(PyObject *, count + 1);
    if (stack == NULL) {
        Py_DECREF(receiver);
        return PyErr_NoMemory();
    }
    stack[0] = receiver;
    for (Py_ssize_t i = 0; i < count; i++) {
        stack[i + 1] = args[i];
    }
    PyObject *result = PyObject_VectorcallMethod(name, stack, (size_t)PyVectorcall_NARGS(nargsf) + 1, kwnames);
    if (stack != small) {
        PyMem_Free(stack);
    }
    Py_DECREF(receiver);
    return result;
}

static PyMethodDef held_methods[] = {
    {"item", (PyCFunction)(void (*)(void))held_item_method, METH_FASTCALL | METH_KEYWORDS,
     "item($self, /, *args)\n--\n\nThe element asked for, as a Python scalar (NumPy's ndarray.item)."},
    {NULL},
};

static PyMappingMethods held_mapping = {
    .mp_subscript = held_subscript,
    .mp_ass_subscript = held_ass_subscript,
};

static PyMemberDef held_members[] = {
    {"_held", T_OBJECT, offsetof(HeldSlots, held), 0, "The NumPy view of the held base's memory, or None."},
    {"_quiet", T_OBJECT, offsetof(HeldSlots, quiet), 0, "Scalar types whose store into `_held` never warns."},
    {"_large", T_PYSSIZET, offsetof(HeldSlots, large), 0, "Views of `_held` of at least this many elements are left to Python."},
    {NULL},
};

static PyTypeObject HeldSlotsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "shoal.numpy._held_slots.HeldSlots",
    .tp_doc = "Indexing of a held base's memory at NumPy's cost (the lazy ndarray's base class).",
    .tp_basicsize = sizeof(HeldSlots),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)held_traverse,
    .tp_clear = (inquiry)held_clear,
    .tp_dealloc = (destructor)held_dealloc,
    .tp_as_mapping = &held_mapping,
    .tp_as_sequence = &held_sequence,
    .tp_members = held_members,
    .tp_methods = held_methods,
};

static PyObject *
configure(PyObject *module, PyObject *args)
{
    PyObject *integers, *ndarray;
    if (!PyArg_ParseTuple(args, "O!O!:configure", &PyFrozenSet_Type, &integers, &PyType_Type, &ndarray)) {
        return NULL;
    }
    Py_XSETREF(numpy_integers, Py_NewRef(integers));
    Py_XSETREF(numpy_ndarray, Py_NewRef(ndarray));
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(integers, ndarray): the frozenset of NumPy integer types that index a row or an "
     "element like an int, and numpy.ndarray."},
    {NULL},
};

static struct PyModuleDef held_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "shoal.numpy._held_slots",
    .m_doc = "The lazy ndarray's indexing slots while its base is held, in C.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__held_slots(void)
{
    name_getitem = PyUnicode_InternFromString("_getitem");
    name_setitem = PyUnicode_InternFromString("_setitem");
    name_dtype = PyUnicode_InternFromString("dtype");
    name_size = PyUnicode_InternFromString("size");
    name_item = PyUnicode_InternFromString("item");
    name_python_item = PyUnicode_InternFromString("_item");
    if (name_getitem == NULL || name_setitem == NULL || name_dtype == NULL || name_size == NULL || name_item == NULL
        || name_python_item == NULL) {
        return NULL;
    }
    /* object's constructor, so that object.__new__(subclass) stays allowed */
    HeldSlotsType.tp_new = PyBaseObject_Type.tp_new;
    if (PyType_Ready(&HeldSlotsType) < 0) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&held_module);
    if (module == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(module, "HeldSlots", (PyObject *)&HeldSlotsType) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
