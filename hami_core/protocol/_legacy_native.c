/* The legacy register encoding (spec 3.1) of plain DeviceInfo records, in C: the first fast path of
 * hami_core.protocol.legacy.encode_legacy, built when a C compiler is there at install (optional: without
 * one, fastpath.py's msgspec encoder serves, and the strict encoder decides everything either leaves).
 *
 * Same contract as every fast path (hami_core/protocol/fastpath.py): it answers only where its text is
 * provably the strict encoder's, byte for byte, and returns None for everything else; it raises nothing
 * but MemoryError. It answers only for a list or tuple of records whose type is exactly DeviceInfo, whose
 * id, type and mode are exact str (no subclass, which could change its own text) holding neither ','
 * nor ':' and encodable as UTF-8 (no lone surrogate), whose integers are exact int within int64 (so
 * an index above int64, which the strict encoder refuses, is left to it), and whose health is True or
 * False. Then the text is what the strict encoder's f-string writes: the strings as they are, integers
 * in base 10 with '-' for negatives, true/false, ',' between the fields, ':' after each record.
 *
 * Fields are read straight from DeviceInfo's slots: bind() looks up each field's slot descriptor once
 * and checks it is an object slot; encode() checks each record's type is exactly that class, so the
 * layout is the one bound. No Python code runs between reading a slot and writing its text (only C
 * functions on exact str and int), so borrowed references stay valid throughout.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <string.h>

enum { F_ID, F_COUNT, F_DEVMEM, F_DEVCORE, F_TYPE, F_NUMA, F_HEALTH, F_INDEX, F_MODE, N_FIELDS };

/* HAMi's field order in a legacy record. */
static const char *const FIELD_NAMES[N_FIELDS] = {
    "id", "count", "devmem", "devcore", "type", "numa", "health", "index", "mode",
};

static PyTypeObject *bound_type = NULL;       /* strong reference, set by bind() */
static Py_ssize_t slot_offsets[N_FIELDS];

/* The text being written: on the stack up to its size, then on the heap. */
typedef struct {
    char *data;
    Py_ssize_t len;
    Py_ssize_t cap;
    char stack[2048];
} text_buf;

static int
reserve(text_buf *buf, Py_ssize_t extra)
{
    if (extra <= buf->cap - buf->len) {
        return 0;
    }
    if (extra > PY_SSIZE_T_MAX / 2 - buf->len) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t cap = buf->cap * 2;
    while (cap - buf->len < extra) {
        cap *= 2;
    }
    char *data;
    if (buf->data == buf->stack) {
        data = PyMem_Malloc((size_t)cap);
        if (data != NULL) {
            memcpy(data, buf->stack, (size_t)buf->len);
        }
    }
    else {
        data = PyMem_Realloc(buf->data, (size_t)cap);
    }
    if (data == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    buf->data = data;
    buf->cap = cap;
    return 0;
}

/* Result of writing one field: written, not this fast path's (None), or an error set. */
typedef enum { WROTE, DECLINE, FAILED } outcome;

/* Appends a field's text, with room for the separator that follows it. */
static outcome
put_text(text_buf *buf, const char *text, Py_ssize_t size)
{
    if (reserve(buf, size + 1) < 0) {
        return FAILED;
    }
    memcpy(buf->data + buf->len, text, (size_t)size);
    buf->len += size;
    return WROTE;
}

static outcome
put_str(text_buf *buf, PyObject *value, int *all_ascii)
{
    if (!PyUnicode_CheckExact(value)) {
        return DECLINE;
    }
    Py_ssize_t size;
    const char *utf8 = PyUnicode_AsUTF8AndSize(value, &size);
    if (utf8 == NULL) {  /* a lone surrogate: the strict encoder decides */
        if (PyErr_ExceptionMatches(PyExc_MemoryError)) {
            return FAILED;
        }
        PyErr_Clear();
        return DECLINE;
    }
    if (memchr(utf8, ',', (size_t)size) != NULL || memchr(utf8, ':', (size_t)size) != NULL) {
        return DECLINE;  /* the strict encoder refuses it, with its message */
    }
    if (!PyUnicode_IS_ASCII(value)) {
        *all_ascii = 0;
    }
    return put_text(buf, utf8, size);
}

static outcome
put_int(text_buf *buf, PyObject *value)
{
    if (!PyLong_CheckExact(value)) {
        return DECLINE;
    }
    int overflow;
    long long number = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (overflow != 0) {
        return DECLINE;
    }
    if (number == -1 && PyErr_Occurred()) {
        return FAILED;
    }
    char digits[24];
    int start = (int)sizeof(digits);
    unsigned long long magnitude =
        number < 0 ? 0ULL - (unsigned long long)number : (unsigned long long)number;
    do {
        digits[--start] = (char)('0' + magnitude % 10);
        magnitude /= 10;
    } while (magnitude != 0);
    if (number < 0) {
        digits[--start] = '-';
    }
    return put_text(buf, digits + start, (Py_ssize_t)sizeof(digits) - start);
}

static outcome
put_bool(text_buf *buf, PyObject *value)
{
    if (value == Py_True) {
        return put_text(buf, "true", 4);
    }
    if (value == Py_False) {
        return put_text(buf, "false", 5);
    }
    return DECLINE;
}

static outcome
put_record(text_buf *buf, PyObject *device, int *all_ascii)
{
    if (Py_TYPE(device) != bound_type) {
        return DECLINE;
    }
    for (int field = 0; field < N_FIELDS; field++) {
        PyObject *value = *(PyObject **)((char *)device + slot_offsets[field]);
        if (value == NULL) {  /* an unset slot: only a record built around its __init__ */
            return DECLINE;
        }
        outcome written;
        switch (field) {
        case F_ID:
        case F_TYPE:
        case F_MODE:
            written = put_str(buf, value, all_ascii);
            break;
        case F_HEALTH:
            written = put_bool(buf, value);
            break;
        default:
            written = put_int(buf, value);
            break;
        }
        if (written != WROTE) {
            return written;
        }
        /* put_text reserved one byte more for this separator */
        buf->data[buf->len++] = field == F_MODE ? ':' : ',';
    }
    return WROTE;
}

static PyObject *
encode_legacy(PyObject *module, PyObject *devices)
{
    if (bound_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_legacy_native.bind(DeviceInfo) was not called");
        return NULL;
    }
    /* Only a list or a tuple: another iterable could be consumed here and then be empty to the
     * strict encoder. The reference keeps the list's item array alive; nothing here can resize it. */
    if (!PyList_CheckExact(devices) && !PyTuple_CheckExact(devices)) {
        Py_RETURN_NONE;
    }
    PyObject *items = Py_NewRef(devices);
    Py_ssize_t count = PySequence_Fast_GET_SIZE(items);
    PyObject **records = PySequence_Fast_ITEMS(items);
    text_buf buf;
    buf.data = buf.stack;
    buf.len = 0;
    buf.cap = (Py_ssize_t)sizeof(buf.stack);
    int all_ascii = 1;
    outcome written = WROTE;
    for (Py_ssize_t i = 0; i < count && written == WROTE; i++) {
        written = put_record(&buf, records[i], &all_ascii);
    }
    PyObject *result = NULL;
    if (written == WROTE) {
        if (all_ascii) {
            result = PyUnicode_New(buf.len, 127);
            if (result != NULL) {
                memcpy(PyUnicode_1BYTE_DATA(result), buf.data, (size_t)buf.len);
            }
        }
        else {
            result = PyUnicode_DecodeUTF8(buf.data, buf.len, "strict");
        }
    }
    else if (written == DECLINE) {
        result = Py_NewRef(Py_None);
    }
    if (buf.data != buf.stack) {
        PyMem_Free(buf.data);
    }
    Py_DECREF(items);
    return result;
}

static PyObject *
bind(PyObject *module, PyObject *device_type)
{
    if (!PyType_Check(device_type)) {
        PyErr_SetString(PyExc_TypeError, "bind() takes the DeviceInfo class");
        return NULL;
    }
    Py_ssize_t offsets[N_FIELDS];
    for (int field = 0; field < N_FIELDS; field++) {
        PyObject *descriptor = PyObject_GetAttrString(device_type, FIELD_NAMES[field]);
        if (descriptor == NULL) {
            return NULL;
        }
        int is_slot = Py_IS_TYPE(descriptor, &PyMemberDescr_Type);
        PyMemberDef *member = is_slot ? ((PyMemberDescrObject *)descriptor)->d_member : NULL;
        int ok = member != NULL && (member->type == T_OBJECT_EX || member->type == T_OBJECT)
                 && member->offset > 0;
        if (ok) {
            offsets[field] = member->offset;
        }
        Py_DECREF(descriptor);
        if (!ok) {
            PyErr_Format(PyExc_TypeError, "%s.%s is not an object slot", ((PyTypeObject *)device_type)->tp_name,
                         FIELD_NAMES[field]);
            return NULL;
        }
    }
    memcpy(slot_offsets, offsets, sizeof(offsets));
    Py_INCREF(device_type);
    Py_XSETREF(bound_type, (PyTypeObject *)device_type);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"bind", bind, METH_O,
     "bind(device_type): read records of exactly this class (DeviceInfo) from its slots."},
    {"encode_legacy", encode_legacy, METH_O,
     "encode_legacy(devices): HAMi's legacy text for plain DeviceInfo records, or None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "hami_core.protocol._legacy_native",
    .m_doc = "The legacy register encoding of plain DeviceInfo records, in C (see fastpath.py).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC
PyInit__legacy_native(void)
{
    return PyModule_Create(&module_def);
}
