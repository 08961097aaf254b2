/* The cached half of fp_warnings.call_site (shoal/fp_warnings.py) in C.
 *
 * Recording an element-wise call that can warn finds the user's line it was called from: the
 * first frame outwards whose file is neither Shoal's nor NumPy's, and the Site kept for that
 * frame's code and bytecode offset. In Python the walk and the lookup took about 0.35 us a call;
 * known_call_site() does both and answers None whenever anything is not known yet, so that
 * call_site's Python code decides (and keeps what it found for the next time).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

static PyObject *module_globals_name = NULL;
static PyObject *filters_name = NULL;

/* The cached half of fp_warnings.call_site: from `frame` outwards, the first frame whose file
 * `internal` (file name -> whether Shoal's or NumPy's) says is the user's, and the Site that
 * `sites` keeps for its code and bytecode offset under `warned` and `filters`, if that Site was
 * recorded for the same code, module globals and filters. None when any of it is not known (a
 * file not seen yet, no user frame, no Site kept): fp_warnings.call_site then decides. */
static PyObject *
known_call_site(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_Format(PyExc_TypeError, "known_call_site takes 5 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *warned = args[1], *filters = args[2], *internal = args[3], *sites = args[4];
    if (!PyFrame_Check(args[0]) || !PyDict_Check(internal) || !PyDict_Check(sites)) {
        Py_RETURN_NONE;
    }
    PyFrameObject *frame = (PyFrameObject *)Py_NewRef(args[0]);
    PyCodeObject *code = NULL;
    while (frame != NULL) {
        code = PyFrame_GetCode(frame);
        PyObject *inside = PyDict_GetItemWithError(internal, code->co_filename);
        if (inside != Py_True) {
            if (inside == Py_False) {
                break;
            }
            Py_DECREF(code);
            Py_DECREF(frame);
            return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
        }
        PyFrameObject *back = PyFrame_GetBack(frame);
        Py_DECREF(code);
        Py_DECREF(frame);
        code = NULL;
        frame = back;
    }
    if (frame == NULL) {
        Py_RETURN_NONE;
    }
    PyObject *result = Py_None;
    PyObject *key = Py_BuildValue("(NiON)", PyLong_FromVoidPtr(code), PyFrame_GetLasti(frame), warned, PyLong_FromVoidPtr(filters));
    PyObject *known = key == NULL ? NULL : PyDict_GetItemWithError(sites, key);
    if (known != NULL && PyTuple_CheckExact(known) && PyTuple_GET_SIZE(known) == 2 && PyTuple_GET_ITEM(known, 0) == (PyObject *)code) {
        PyObject *site = PyTuple_GET_ITEM(known, 1);
        PyObject *globals = PyFrame_GetGlobals(frame);
        PyObject *site_globals = PyObject_GetAttr(site, module_globals_name);
        PyObject *site_filters = site_globals == NULL ? NULL : PyObject_GetAttr(site, filters_name);
        if (site_globals == globals && site_filters == filters) {
            result = site;
        }
        Py_XDECREF(globals);
        Py_XDECREF(site_globals);
        Py_XDECREF(site_filters);
    }
    Py_XDECREF(key);
    Py_DECREF(code);
    Py_DECREF(frame);
    if (PyErr_Occurred()) {
        return NULL;
    }
    return Py_NewRef(result);
}

static PyMethodDef module_methods[] = {
    {"known_call_site", (PyCFunction)(void (*)(void))known_call_site, METH_FASTCALL,
     "known_call_site(frame, warned, filters, internal, sites): the Site fp_warnings.call_site keeps for the "
     "first user frame from `frame` outwards, or None where it does not know one yet."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef call_sites_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "shoal._call_sites",
    .m_doc = "The cached half of fp_warnings.call_site, in C.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__call_sites(void)
{
    module_globals_name = PyUnicode_InternFromString("module_globals");
    filters_name = PyUnicode_InternFromString("filters");
    if (module_globals_name == NULL || filters_name == NULL) {
        return NULL;
    }
    return PyModule_Create(&call_sites_module);
}
