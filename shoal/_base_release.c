/* LazyBase.__del__ (shoal/base_lives.py) in C: a base's release, once per temporary.
 *
 * Every temporary a loop makes ends in LazyBase.__del__ and Runtime.release: in Python about
 * 0.4 us a base. The method made by finalizer() does the same for the common case: the base's
 * held memory dropped, its entry in the runtime's bases removed and its id queued for a release
 * instruction (the next recorded call records it); Runtime.release decides for a base that the
 * runtime holds back or holds for NumPy. Like the Python method it never takes the runtime's
 * lock: it may run inside garbage collection, on any thread.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include "_slot_offset.h"

enum { B_CLOSED, B_BASES, B_RELEASED, B_DEFERRED, B_HELD, B_RELEASE, B_APPEND, B_RUNTIME, B_ID, B_DROPPED, B_STATS,
       B_BASES_RELEASED, B_CLEAR, B_NAMES };
static const char *name_texts[B_NAMES] = {"closed", "_bases", "_released", "_deferred", "held", "release", "append", "runtime", "id",
                                          "_dropped", "stats", "bases_released", "clear"};
static PyObject *names[B_NAMES];
static Py_ssize_t dropped_counted = 1;  /* base_lives.DROPPED_COUNTED, given to finalizer() */

/* Base `base_id`, held back with its data and never named by an instruction, dropped as
 * Runtime.release drops it: out of the runtime's bases and held-back data, queued in `dropped`
 * to be counted (counted at once once the queue is long: a loop that records nothing for long
 * never drains it). 0, or -1 with an error set. */
static int
drop_held_back(PyObject *dict, PyObject *bases, PyObject *deferred, PyObject *dropped, PyObject *base_id)
{
    if ((PyDict_DelItem(bases, base_id) < 0 && !PyErr_ExceptionMatches(PyExc_KeyError)) ||
        (PyErr_Clear(), PyDict_DelItem(deferred, base_id) < 0)) {
        return -1;
    }
    PyObject *done = PyObject_CallMethodOneArg(dropped, names[B_APPEND], base_id);
    if (done == NULL) {
        return -1;
    }
    Py_DECREF(done);
    Py_ssize_t count = PyObject_Length(dropped);
    if (count < dropped_counted) {
        return count < 0 ? -1 : 0;
    }
    PyObject *stats = PyDict_GetItemWithError(dict, names[B_STATS]);
    PyObject *before = stats == NULL ? NULL : PyObject_GetAttr(stats, names[B_BASES_RELEASED]);
    PyObject *increment = before == NULL ? NULL : PyLong_FromSsize_t(count);
    PyObject *after = increment == NULL ? NULL : PyNumber_Add(before, increment);
    done = after == NULL ? NULL : PyObject_CallMethodNoArgs(dropped, names[B_CLEAR]);
    int failed = done == NULL || PyObject_SetAttr(stats, names[B_BASES_RELEASED], after) < 0;
    Py_XDECREF(done);
    Py_XDECREF(before);
    Py_XDECREF(increment);
    Py_XDECREF(after);
    return failed ? -1 : 0;
}
static Py_ssize_t base_offsets[3];  /* where a LazyBase keeps its runtime, id and held memory */

static PyObject *
lazy_base_del(PyObject *self, PyObject *unused)
{
    PyObject **runtime_slot = (PyObject **)((char *)self + base_offsets[0]);
    PyObject **id_slot = (PyObject **)((char *)self + base_offsets[1]);
    PyObject **held_slot = (PyObject **)((char *)self + base_offsets[2]);
    Py_XSETREF(*held_slot, Py_NewRef(Py_None));
    PyObject *runtime = *runtime_slot;
    PyObject *base_id = *id_slot;
    if (runtime == NULL || runtime == Py_None || base_id == NULL) {
        Py_RETURN_NONE;
    }
    Py_INCREF(runtime);
    Py_INCREF(base_id);
    PyObject *result = NULL;
    PyObject *dict = PyObject_GenericGetDict(runtime, NULL);
    PyObject *closed = dict == NULL ? NULL : PyDict_GetItemWithError(dict, names[B_CLOSED]);
    int truth = closed == NULL ? -1 : PyObject_IsTrue(closed);
    if (truth != 0) {
        if (truth > 0) {
            result = Py_NewRef(Py_None);
        }
        else if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_AttributeError, "the runtime has no 'closed'");
        }
        goto done;
    }
    PyObject *bases = PyDict_GetItemWithError(dict, names[B_BASES]);
    PyObject *released = PyDict_GetItemWithError(dict, names[B_RELEASED]);
    PyObject *deferred = PyDict_GetItemWithError(dict, names[B_DEFERRED]);
    PyObject *held = PyDict_GetItemWithError(dict, names[B_HELD]);
    PyObject *dropped = PyDict_GetItemWithError(dict, names[B_DROPPED]);
    int held_back = deferred == NULL || !PyDict_Check(deferred) ? -1 : PyDict_Contains(deferred, base_id);
    if (bases == NULL || released == NULL || held == NULL || dropped == NULL || !PyDict_Check(bases) || !PyDict_Check(held) ||
        held_back < 0 || PyDict_Contains(held, base_id) != 0) {
        PyErr_Clear();
        result = PyObject_CallMethodOneArg(runtime, names[B_RELEASE], base_id);
        goto done;
    }
    if (held_back) {
        if (drop_held_back(dict, bases, deferred, dropped, base_id) == 0) {
            result = Py_NewRef(Py_None);
        }
        goto done;
    }
    if (PyDict_DelItem(bases, base_id) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_KeyError)) {
            goto done;
        }
        PyErr_Clear();
    }
    result = PyObject_CallMethodOneArg(released, names[B_APPEND], base_id);
done:
    Py_XDECREF(dict);
    Py_DECREF(base_id);
    Py_DECREF(runtime);
    if (result == NULL) {
        return NULL;
    }
    Py_DECREF(result);
    Py_RETURN_NONE;
}

static PyMethodDef lazy_base_del_def = {
    "__del__", lazy_base_del, METH_NOARGS, "Release the base in its runtime (shoal/_base_release.c)."
};

static PyObject *
finalizer(PyObject *module, PyObject *args)
{
    PyTypeObject *base_type;
    Py_ssize_t counted;
    if (!PyArg_ParseTuple(args, "O!n:finalizer", &PyType_Type, &base_type, &counted)) {
        return NULL;
    }
    dropped_counted = counted > 0 ? counted : 1;
    int slots[3] = {B_RUNTIME, B_ID, B_HELD};
    for (int i = 0; i < 3; i++) {
        Py_ssize_t offset = slot_offset(base_type, names[slots[i]], 1);
        if (offset < 0) {
            return NULL;
        }
        base_offsets[i] = offset;
    }
    return PyDescr_NewMethod(base_type, &lazy_base_del_def);
}

static PyMethodDef module_methods[] = {
    {"finalizer", finalizer, METH_VARARGS,
     "finalizer(LazyBase, dropped_counted): LazyBase.__del__ in C, a method of that class (its runtime, id and held "
     "slots), counting released held-back bases once `dropped_counted` wait (base_lives.DROPPED_COUNTED)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef base_release_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "shoal._base_release",
    .m_doc = "LazyBase.__del__ in C.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__base_release(void)
{
    for (int i = 0; i < B_NAMES; i++) {
        names[i] = PyUnicode_InternFromString(name_texts[i]);
        if (names[i] == NULL) {
            return NULL;
        }
    }
    return PyModule_Create(&base_release_module);
}
