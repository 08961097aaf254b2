/* NumPy calls on settled memory (shoal/numpy/_settled.py) in C for the common case.
 *
 * A loop of small operations on lazy arrays whose values are NumPy memory already (results
 * held back with their data, held bases, settled bases) ran each operation in Python: finding
 * each operand's memory (the runtime's lock, its tables, the count towards a hold), the call at
 * the user's line, and the result's new base held back with its data. That was 6-7 us an
 * operation against NumPy's 0.3-0.6 us. call() does the same work on the runtime's own
 * attributes when nothing unusual is going on, and answers None otherwise (a hold due, a base
 * that recorded work still changes, a scalar, a result of another kind), before it has changed
 * anything: the caller's Python path then decides everything, so the answer is always its
 * answer.
 */
#include "_settled_operands.h"
#include "_settled_results.h"

/* 1 if the module is configured and called with `least` to `most` arguments, else 0 with an error set. */
static int
usable(Py_ssize_t nargs, Py_ssize_t least, Py_ssize_t most, const char *usage)
{
    if (nargs < least || nargs > most) {
        PyErr_Format(PyExc_TypeError, "%s: %zd arguments given", usage, nargs);
        return 0;
    }
    if (lazy_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "shoal._settled_calls is not configured");
        return 0;
    }
    return 1;
}

/* drawn.spoil for `operand`, written: a random draw's recipe forgotten (1), or -1 with an error. */
static int
forget_recipe(const Operand *operand)
{
    if (operand->spoiled == NULL || PyDict_GET_SIZE(drawn_noted) == 0) {
        return 1;
    }
    PyObject *id = PyLong_FromVoidPtr(operand->spoiled);
    PyObject *recipe = id == NULL ? NULL : PyObject_CallMethod(drawn_noted, "pop", "OO", id, Py_None);
    int forgotten = recipe == NULL ? -1 : 1;
    Py_XDECREF(id);
    Py_XDECREF(recipe);
    return forgotten;
}

/* The runtime's lock, taken, where its settled memory can be used (a settled threshold, an engine
 * that hands out its memory), with the threshold and the hold rules read into `limit` and
 * `rules`; NULL otherwise, with an error set where there was one. */
static PyObject *
lock_settled(PyObject *dict, Py_ssize_t *limit, HoldRules *rules)
{
    *limit = dict_count(dict, names[N_SETTLED_THRESHOLD]);
    rules->run = dict_count(hold_settings, hold_run_name);
    rules->back = dict_count(hold_settings, hold_back_name);
    if (*limit <= 0 || rules->run < 0 || rules->back < 0 || !offers_memory(dict)) {
        return NULL;
    }
    return acquire(dict);
}

/* call(function, arguments, kind): see the module methods below. */
static PyObject *
call(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (!usable(nargs, 3, 4, "call(function, arguments, kind[, out])")) {
        return NULL;
    }
    PyObject *out = nargs == 4 && args[3] != Py_None ? args[3] : NULL;  /* a lazy or NumPy array the ufunc writes */
    int numpy_out = out != NULL && Py_IS_TYPE(out, numpy_type);  /* NumPy's own memory: written as it is */
    PyObject *lazy_out = numpy_out ? NULL : out;  /* a lazy one: its memory found, written and counted */
    if (!PyTuple_CheckExact(args[1])) {
        Py_RETURN_NONE;
    }
    PyObject *function = args[0], *given = args[1];
    long kind = PyLong_AsLong(args[2]);  /* 0: a ufunc's call, 1: a product, 2: a ufunc's reduce, accumulate or reduceat */
    Py_ssize_t count = PyTuple_GET_SIZE(given);
    if (count > MOST_OPERANDS || (kind != 0 && kind != 1 && kind != 2) || (out != NULL && (kind != 0 || !(numpy_out || Py_IS_TYPE(out, lazy_type))))) {
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    }
    if (kind == 0) {
        PyObject *single = PyDict_GetItemWithError(single_output, function);  /* ufunc -> whether nout is 1 */
        if (single == NULL) {
            PyObject *nout = PyErr_Occurred() ? NULL : PyObject_GetAttr(function, slot_names[S_NOUT]);
            single = nout != NULL && PyLong_CheckExact(nout) && PyLong_AsLong(nout) == 1 ? Py_True : Py_False;
            Py_XDECREF(nout);
            PyErr_Clear();
            if (PyDict_GET_SIZE(single_output) < 1024 && PyDict_SetItem(single_output, function, single) < 0) {
                return NULL;
            }
        }
        if (single != Py_True) {
            Py_RETURN_NONE;
        }
    }
    PyObject *runtime = NULL;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *value = PyTuple_GET_ITEM(given, i);
        if (kind == 2 && (PyList_Check(value) || PyTuple_Check(value))) {
            Py_RETURN_NONE;  /* lazy arrays inside a list: _settled_functions reads them */
        }
        if (Py_IS_TYPE(value, lazy_type)) {
            PyObject *base = SLOT(value, lazy_offsets[0]);
            PyObject *its = base == NULL ? NULL : SLOT(base, base_offsets[0]);
            if (its == NULL || (runtime != NULL && its != runtime)) {
                Py_RETURN_NONE;
            }
            runtime = its;
        }
    }
    if (lazy_out != NULL) {
        PyObject *base = SLOT(out, lazy_offsets[0]);
        if (base == NULL || SLOT(base, base_offsets[0]) != runtime) {
            Py_RETURN_NONE;
        }
    }
    if (runtime == NULL) {
        Py_RETURN_NONE;
    }
    Py_INCREF(runtime);
    PyObject *dict = PyObject_GenericGetDict(runtime, NULL);
    if (dict == NULL) {
        Py_DECREF(runtime);
        return NULL;
    }
    Operand operands[MOST_OPERANDS + 1];
    PyObject *arguments[MOST_OPERANDS];
    int found = 0, status = 0;
    PyObject *answer = NULL;
    Py_ssize_t limit;
    HoldRules rules;
    PyObject *lock = lock_settled(dict, &limit, &rules);
    if (lock == NULL) {
        answer = PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
        goto done;
    }
    status = gather(dict, given, operands, arguments, &found, limit, kind == 1, &rules);
    if (status == 1 && lazy_out != NULL) {  /* the output last, written: settled_ufunc's targets */
        status = find_memory(dict, out, &operands[found], limit, 0, &rules, 1);
        found += status == 1;
    }
    if (status == 1) {
        status = count_accesses(dict, operands, found, &rules);
    }
    if (status == 1 && lazy_out != NULL) {
        status = forget_recipe(&operands[found - 1]);
    }
    if (unlock(lock) < 0 || status < 0) {
        goto done;
    }
    if (status == 0) {
        answer = Py_NewRef(Py_None);
        goto done;
    }
    if (kind == 0 && out == NULL) {
        int large = broadcasts_large(arguments, count, limit);
        if (large != 0) {
            answer = large < 0 ? NULL : Py_NewRef(not_settled);
            goto done;
        }
    }
    PyObject *packed = PyTuple_New(count);
    if (packed == NULL) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyTuple_SET_ITEM(packed, i, Py_NewRef(arguments[i]));
    }
    if (out == NULL) {
        for (int j = 0; j < found; j++) {
            Py_CLEAR(operands[j].memory);
        }
        found = 0;
        PyObject *result = call_at_user_line(function, packed, NULL);
        Py_DECREF(packed);
        if (kind == 2 && result != NULL && Py_IS_TYPE(result, numpy_type)) {  /* never a view of the memory read */
            PyObject *owner = PyObject_GetAttr(result, slot_names[S_BASE_ATTR]);
            if (owner != Py_None) {
                Py_SETREF(result, owner == NULL ? NULL : PyObject_CallMethod(result, "copy", NULL));
            }
            Py_XDECREF(owner);
        }
        answer = wrapped(runtime, dict, result);
        goto done;
    }
    PyObject *target = numpy_out ? out : operands[found - 1].memory;
    PyObject *keywords = Py_BuildValue("{s(O)sO}", "out", target, "casting", slot_names[S_SAME_KIND]);
    PyObject *result = keywords == NULL ? NULL : call_at_user_line(function, packed, keywords);
    Py_DECREF(packed);
    Py_XDECREF(keywords);
    if (result != NULL) {
        Py_DECREF(result);
        answer = Py_NewRef(out);
    }
done:
    for (int j = 0; j < found; j++) {
        Py_XDECREF(operands[j].memory);
    }
    Py_DECREF(dict);
    Py_DECREF(runtime);
    return answer;
}

/* hold(runtime, value): see the module methods below. */
static PyObject *
hold(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (!usable(nargs, 2, 2, "hold(runtime, value)")) {
        return NULL;
    }
    PyObject *runtime = args[0], *value = args[1];
    if (!Py_IS_TYPE(value, numpy_type)) {
        Py_RETURN_NONE;
    }
    PyObject *dict = PyObject_GenericGetDict(runtime, NULL);
    if (dict == NULL) {
        return NULL;
    }
    PyObject *engine = PyDict_GetItemWithError(dict, names[N_ENGINE]);
    PyObject *flags = engine == NULL || engine == Py_None ? NULL : PyObject_GetAttrString(value, "flags");
    PyObject *writeable = flags == NULL ? NULL : PyObject_GetAttrString(flags, "writeable");
    Py_XDECREF(flags);
    PyObject *answer = NULL;
    if (writeable != Py_True) {  /* the first large array loads the engine; read-only data is declared (Runtime.new_base) */
        answer = PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    }
    else {
        answer = wrapped(runtime, dict, Py_NewRef(value));
    }
    Py_XDECREF(writeable);
    Py_DECREF(dict);
    return answer;
}

/* 1 if `key` is an int, a slice, or a tuple of them: basic indexing, a view or an element. */
static int
basic_key(PyObject *key)
{
    if (PyLong_CheckExact(key) || PySlice_Check(key)) {
        return 1;
    }
    if (!PyTuple_CheckExact(key) || PyTuple_GET_SIZE(key) == 0) {
        return 0;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(key); i++) {
        PyObject *item = PyTuple_GET_ITEM(key, i);
        if (!PyLong_CheckExact(item) && !PySlice_Check(item)) {
            return 0;
        }
    }
    return 1;
}

/* 1 if storing `value` into `memory` casts nothing that could warn (_index._set_in_place). */
static int
same_kind_store(PyObject *memory, PyObject *value)
{
    PyObject *dtype = PyObject_GetAttr(memory, slot_names[S_DTYPE]);
    int same = 0;
    if (dtype != NULL && PyFloat_CheckExact(value)) {
        PyObject *code = PyObject_GetAttr(dtype, slot_names[S_CHAR]);
        same = code != NULL && PyUnicode_Check(code) && PyUnicode_CompareWithASCIIString(code, "d") == 0;
        Py_XDECREF(code);
    }
    else if (dtype != NULL) {
        PyObject *its = PyObject_GetAttr(value, slot_names[S_DTYPE]);
        same = its == dtype;
        Py_XDECREF(its);
    }
    Py_XDECREF(dtype);
    PyErr_Clear();
    return same;
}

/* store(array, key, value): see the module methods below. */
static PyObject *
store(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (!usable(nargs, 3, 3, "store(array, key, value)")) {
        return NULL;
    }
    PyObject *array = args[0], *key = args[1], *value = args[2];
    int lazy_value = Py_IS_TYPE(value, lazy_type);
    if (!Py_IS_TYPE(array, lazy_type) || !basic_key(key) ||
        !(lazy_value || PyFloat_Check(value) || PyLong_Check(value) || PyComplex_Check(value) || Py_IS_TYPE(value, numpy_type))) {
        Py_RETURN_NONE;
    }
    PyObject *base = SLOT(array, lazy_offsets[0]);
    PyObject *runtime = base == NULL ? NULL : SLOT(base, base_offsets[0]);
    if (runtime == NULL || (lazy_value && (SLOT(value, lazy_offsets[0]) == base || SLOT(value, lazy_offsets[0]) == NULL ||
                                           SLOT(SLOT(value, lazy_offsets[0]), base_offsets[0]) != runtime))) {
        Py_RETURN_NONE;  /* a value of the array's own base: NumPy's order of reads and writes, in Python */
    }
    Py_INCREF(runtime);
    PyObject *dict = PyObject_GenericGetDict(runtime, NULL);
    if (dict == NULL) {
        Py_DECREF(runtime);
        return NULL;
    }
    Operand operands[2] = {{NULL}, {NULL}};
    int found = 0, status = 0;
    PyObject *answer = NULL, *target = NULL;
    Py_ssize_t limit;
    HoldRules rules;
    PyObject *lock = lock_settled(dict, &limit, &rules);
    if (lock == NULL) {
        answer = PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
        goto done;
    }
    status = find_memory(dict, array, &operands[0], PY_SSIZE_T_MAX, 0, &rules, 1);
    found = status == 1;
    if (status == 1 && operands[0].held) {
        status = 0;  /* a held base's stores: its own path (_lazy._setitem) */
    }
    if (status == 1) {  /* what the store touches: fewer than the settled threshold's elements (_set_in_place) */
        target = PyObject_GetItem(operands[0].memory, key);
        PyObject *size = target == NULL || !Py_IS_TYPE(target, numpy_type) ? NULL : PyObject_GetAttr(target, slot_names[S_SIZE]);
        Py_ssize_t touched = target == NULL ? limit : size == NULL ? 1 : PyLong_AsSsize_t(size);
        Py_XDECREF(size);
        PyErr_Clear();  /* an index out of range: raised by the Python path, in NumPy's order */
        status = touched >= 0 && touched < limit;
    }
    if (status == 1 && lazy_value) {
        status = find_memory(dict, value, &operands[1], limit, 0, &rules, 0);
        found += status == 1;
    }
    if (status == 1) {
        status = count_accesses(dict, operands, found, &rules);
    }
    if (status == 1) {
        status = forget_recipe(&operands[0]);
    }
    if (unlock(lock) < 0 || status < 0) {
        goto done;
    }
    if (status == 0) {
        answer = Py_NewRef(Py_None);
        goto done;
    }
    PyObject *memory = operands[0].memory, *source = lazy_value ? operands[1].memory : value;
    int stored;
    if (same_kind_store(memory, source)) {
        stored = PyObject_SetItem(memory, key, source);
    }
    else {  /* a cast's warning names the user's line */
        PyObject *method = PyObject_GetAttrString(memory, "__setitem__");
        PyObject *pair = method == NULL ? NULL : PyTuple_Pack(2, key, source);
        PyObject *done_store = pair == NULL ? NULL : call_at_user_line(method, pair, NULL);
        stored = done_store == NULL ? -1 : 0;
        Py_XDECREF(method);
        Py_XDECREF(pair);
        Py_XDECREF(done_store);
    }
    if (stored == 0) {
        answer = Py_NewRef(Py_True);
    }
done:
    for (int j = 0; j < found; j++) {
        Py_XDECREF(operands[j].memory);
    }
    Py_XDECREF(target);
    Py_DECREF(dict);
    Py_DECREF(runtime);
    return answer;
}

static int
configure_offsets(PyTypeObject *type, const int *which, Py_ssize_t *offsets, int count)
{
    for (int i = 0; i < count; i++) {
        offsets[i] = slot_offset(type, slot_names[which[i]], 0);
        if (offsets[i] < 0) {
            return -1;
        }
    }
    return 0;
}

static PyObject *
configure(PyObject *module, PyObject *args)
{
    PyTypeObject *lazy, *numpy, *view, *base;
    PyObject *makers[3], *quiet, *memory, *internal, *kept, *fallbacks[3], *marker, *settings, *noted, *own;
    if (!PyArg_ParseTuple(args, "O!O!O!O!OOOOOO!O!OOOOO!O!O:configure", &PyType_Type, &lazy, &PyType_Type, &numpy, &PyType_Type, &view,
                          &PyType_Type, &base, &makers[0], &makers[1], &makers[2], &quiet, &memory, &PyDict_Type, &internal,
                          &PyDict_Type, &kept, &fallbacks[0], &fallbacks[1], &fallbacks[2], &marker, &PyDict_Type, &settings, &PyDict_Type, &noted, &own)) {
        return NULL;
    }
    static const int lazy_slots[5] = {S_BASE, S_VIEW, S_SCALAR, S_HELD, S_READONLY};
    static const int base_slots[2] = {S_RUNTIME, S_ACCESSES};
    if (configure_offsets(lazy, lazy_slots, lazy_offsets, 5) < 0 || configure_offsets(base, base_slots, base_offsets, 2) < 0) {
        return NULL;
    }
    PyObject *view_names[5] = {names[N_BASE], slot_names[S_DTYPE], slot_names[S_OFFSET], slot_names[S_SHAPE], slot_names[S_STRIDES]};
    for (int i = 0; i < 5; i++) {
        view_offsets[i] = slot_offset(view, view_names[i], 0);
        if (view_offsets[i] < 0) {
            return NULL;
        }
    }
    Py_XSETREF(lazy_type, (PyTypeObject *)Py_NewRef(lazy));
    Py_XSETREF(numpy_type, (PyTypeObject *)Py_NewRef(numpy));
    Py_XSETREF(view_type, (PyTypeObject *)Py_NewRef(view));
    Py_XSETREF(make_base, Py_NewRef(makers[0]));
    Py_XSETREF(new_view, Py_NewRef(makers[1]));
    Py_XSETREF(make_lazy_array, Py_NewRef(makers[2]));
    Py_XSETREF(no_quiet_stores, Py_NewRef(quiet));
    Py_XSETREF(component_memory, Py_NewRef(memory));
    Py_XSETREF(internal_files, Py_NewRef(internal));
    Py_XSETREF(trampolines, Py_NewRef(kept));
    Py_XSETREF(at_user_line, Py_NewRef(fallbacks[0]));
    Py_XSETREF(wrap_numpy, Py_NewRef(fallbacks[1]));
    Py_XSETREF(is_supported, Py_NewRef(fallbacks[2]));
    Py_XSETREF(not_settled, Py_NewRef(marker));
    Py_XSETREF(hold_settings, Py_NewRef(settings));
    Py_XSETREF(drawn_noted, Py_NewRef(noted));
    Py_XSETREF(own_view, Py_NewRef(own));
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(ndarray, numpy.ndarray, View, LazyBase, make_base, new_view, make_lazy_array, NO_QUIET_STORES, "
     "Component.memory, internal_files, trampolines, at_user_line, wrap_numpy, is_supported, NOT_SETTLED, "
     "shoal.held's __dict__, drawn._noted, _held_indexing.own_view)."},
    {"call", (PyCFunction)(void (*)(void))call, METH_FASTCALL,
     "call(function, arguments, kind[, out]): function(*arguments) on the memory of its lazy operands, computed by "
     "NumPy at the user's line, its result held back as a new lazy array where large enough; kind 0 a ufunc's plain "
     "call (_settled._plain_ufunc: NOT_SETTLED where small operands broadcast large; with `out`, a lazy array or a "
     "NumPy one, settled_ufunc writing it), kind 1 a product (held_product, settled_call), kind 2 a ufunc's reduce, accumulate or "
     "reduceat without keywords (_settled_functions.settled_method). None where it is not the common case: nothing was "
     "changed, the Python path decides."},
    {"hold", (PyCFunction)(void (*)(void))hold, METH_FASTCALL,
     "hold(runtime, value): wrap_numpy(value) for a NumPy array the caller gives away: itself where small, else a new "
     "lazy array holding it back (Runtime.new_base); None where the engine is not made yet, `value` is read-only or no "
     "ndarray."},
    {"store", (PyCFunction)(void (*)(void))store, METH_FASTCALL,
     "store(array, key, value): array[key] = value written by NumPy into the memory of a lazy array's base held back "
     "with its data or settled (_index._set_in_place), for a basic key, a value that is a scalar, an ndarray or a small "
     "settled lazy array, and fewer elements touched than the settled threshold; True, or None where it is not that "
     "common case (nothing was changed: the Python path decides)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef settled_calls_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "shoal._settled_calls",
    .m_doc = "NumPy calls on settled memory, in C for the common case.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__settled_calls(void)
{
    if (init_names() < 0) {
        return NULL;
    }
    for (int i = 0; i < S_NAMES; i++) {
        slot_names[i] = PyUnicode_InternFromString(slot_texts[i]);
        if (slot_names[i] == NULL) {
            return NULL;
        }
    }
    supported = PyDict_New();
    no_keywords = PyDict_New();
    minus_one = PyLong_FromLong(-1);
    single_output = PyDict_New();
    trampolines_at = PyDict_New();
    hold_run_name = PyUnicode_InternFromString("HOLD_RUN");
    hold_back_name = PyUnicode_InternFromString("HOLD_BACK_ACCESSES");
    if (supported == NULL || no_keywords == NULL || minus_one == NULL || single_output == NULL || trampolines_at == NULL || hold_run_name == NULL || hold_back_name == NULL) {
        return NULL;
    }
    return PyModule_Create(&settled_calls_module);
}
