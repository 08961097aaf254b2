/* The runtime's attributes that shoal/_record_calls.c reads and writes, by name: the names
 * interned once (init_names()), reading and testing them in the runtime's __dict__, counting,
 * and taking and releasing the runtime's lock. Borrowed references are only used before the next
 * call that may run Python code (an allocation of a tracked object may collect garbage). */
#ifndef SHOAL_RUNTIME_ATTRIBUTES_H
#define SHOAL_RUNTIME_ATTRIBUTES_H

#include <Python.h>

enum {
    N_ENGINE, N_DROPPED, N_ORPHANS, N_HELD, N_DEFERRED, N_CARRIED, N_DEAD_BYTES, N_FLUSH_BYTES,
    N_RELEASED, N_PENDING, N_INSTRUCTIONS, N_BASES, N_DATA, N_OWN_BASES, N_NEXT_ID, N_STATS,
    N_BASES_CREATED, N_BASES_RELEASED, N_DECLARED, N_DIRECT_RUN, N_WRITTEN, N_READ,
    N_SETTLED_THRESHOLD, N_SMALL_RUN, N_SITES, N_FLUSH_THRESHOLD, N_LOCK, N_ACQUIRE, N_RELEASE,
    N_POPLEFT, N_RECORD_NEW, N_RECORD_CALL, N_BASE, N_NAMES
};
static const char *name_texts[N_NAMES] = {
    "_engine", "_dropped", "orphans", "held", "_deferred", "_carried", "_dead_bytes", "flush_bytes",
    "_released", "_pending", "instructions", "bases", "data", "_bases", "_next_id", "stats",
    "bases_created", "bases_released", "_declared", "direct_run", "_written", "_read",
    "settled_threshold", "_small_run", "_sites", "flush_threshold", "_lock", "acquire", "release",
    "popleft", "record_new", "record_call", "base",
};
static PyObject *names[N_NAMES];

static int
init_names(void)
{
    for (int i = 0; i < N_NAMES; i++) {
        names[i] = PyUnicode_InternFromString(name_texts[i]);
        if (names[i] == NULL) {
            return -1;
        }
    }
    return 0;
}

/* The runtime's attribute `name`, borrowed from its __dict__ `dict`; NULL with an error set
 * where it has none. */
static PyObject *
attribute(PyObject *dict, int name)
{
    PyObject *value = PyDict_GetItemWithError(dict, names[name]);
    if (value == NULL && !PyErr_Occurred()) {
        PyErr_Format(PyExc_AttributeError, "the runtime has no attribute %R", names[name]);
    }
    return value;
}

static Py_ssize_t
size_of(PyObject *dict, int name)
{
    PyObject *value = attribute(dict, name);
    return value == NULL ? -1 : PyObject_Length(value);
}

static inline int
is_empty(PyObject *dict, int name)
{
    return size_of(dict, name) == 0;
}

/* The count held by attribute `name` (an int of at least 0), or -1 (an error may be set). */
static inline Py_ssize_t
count_of(PyObject *dict, int name)
{
    PyObject *value = attribute(dict, name);
    Py_ssize_t count = value == NULL ? -1 : PyLong_AsSsize_t(value);
    return count < 0 ? -1 : count;
}

static int
add_to_counter(PyObject *owner, int name, Py_ssize_t count)
{
    PyObject *value = PyObject_GetAttr(owner, names[name]);
    if (value == NULL) {
        return -1;
    }
    PyObject *increment = PyLong_FromSsize_t(count);
    PyObject *sum = increment == NULL ? NULL : PyNumber_Add(value, increment);
    Py_DECREF(value);
    Py_XDECREF(increment);
    if (sum == NULL) {
        return -1;
    }
    int failed = PyObject_SetAttr(owner, names[name], sum);
    Py_DECREF(sum);
    return failed;
}

static inline int
add_to_set(PyObject *dict, int name, PyObject *item)
{
    PyObject *set = attribute(dict, name);
    return set == NULL ? -1 : PySet_Add(set, item);
}

/* Takes the runtime's lock; returns the lock (a new reference) or NULL with an error set. */
static PyObject *
acquire(PyObject *dict)
{
    PyObject *lock = attribute(dict, N_LOCK);
    if (lock == NULL) {
        return NULL;
    }
    Py_INCREF(lock);
    PyObject *taken = PyObject_CallMethodNoArgs(lock, names[N_ACQUIRE]);
    if (taken == NULL) {
        Py_DECREF(lock);
        return NULL;
    }
    Py_DECREF(taken);
    return lock;
}

/* Releases `lock` (a new reference, dropped), keeping any error `result` NULL stands for. */
static PyObject *
release(PyObject *lock, PyObject *result)
{
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyObject *done = PyObject_CallMethodNoArgs(lock, names[N_RELEASE]);
    Py_DECREF(lock);
    if (done == NULL) {
        Py_XDECREF(result);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(traceback);
        return NULL;
    }
    Py_DECREF(done);
    PyErr_Restore(type, value, traceback);
    return result;
}

/* Under the runtime's lock (`dict` its __dict__): claims its next base id, counted among the
 * bases created, and makes the id's LazyBase with `make_base` (runtime, id, dtype, size, a new
 * list of holders), kept among the runtime's own bases by a weak reference, as Runtime.new_base
 * does. A new reference to the base with *base_id set (a new reference), or NULL with an error. */
static PyObject *
claim_new_base(PyObject *runtime, PyObject *dict, PyObject *make_base, PyObject *dtype, PyObject *size, PyObject **base_id)
{
    *base_id = Py_XNewRef(attribute(dict, N_NEXT_ID));
    Py_ssize_t id = *base_id == NULL ? -1 : PyLong_AsSsize_t(*base_id);
    PyObject *next = id < 0 ? NULL : PyLong_FromSsize_t(id + 1);
    PyObject *stats = next == NULL ? NULL : Py_XNewRef(attribute(dict, N_STATS));
    PyObject *own_bases = stats == NULL ? NULL : attribute(dict, N_OWN_BASES);
    if (own_bases != NULL && !PyDict_Check(own_bases)) {
        PyErr_SetString(PyExc_TypeError, "the runtime's own bases are not a dict");
        own_bases = NULL;
    }
    PyObject *holders = NULL, *base = NULL, *ref = NULL;
    int failed = own_bases == NULL || PyDict_SetItem(dict, names[N_NEXT_ID], next) < 0 || add_to_counter(stats, N_BASES_CREATED, 1) < 0 ||
                 (holders = PyList_New(0)) == NULL;
    if (!failed) {
        PyObject *arguments[5] = {runtime, *base_id, dtype, size, holders};
        base = PyObject_Vectorcall(make_base, arguments, 5, NULL);
        ref = base == NULL ? NULL : PyWeakref_NewRef(base, NULL);
        failed = ref == NULL || PyDict_SetItem(own_bases, *base_id, ref) < 0;
    }
    Py_XDECREF(next);
    Py_XDECREF(stats);
    Py_XDECREF(holders);
    Py_XDECREF(ref);
    if (failed) {
        Py_XDECREF(base);
        Py_CLEAR(*base_id);
        return NULL;
    }
    return base;
}

#endif
