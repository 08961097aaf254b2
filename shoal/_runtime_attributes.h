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

static int
is_empty(PyObject *dict, int name)
{
    return size_of(dict, name) == 0;
}

/* The count held by attribute `name` (an int of at least 0), or -1 (an error may be set). */
static Py_ssize_t
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

static int
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

#endif
