/* Decodes the records of one uncompressed Kafka record batch (message format v2) into columns.
 *
 * Restoration reads changelogs at the speed of this loop: aiokafka's decoder builds a record object per
 * record (offset, timestamp, key, value, headers, attributes) that the restore path reads four fields of
 * and throws away. Here a batch becomes four lists (offsets, timestamps, keys, values) plus a list of
 * header tuples only when some record has headers; no other object per record.
 *
 * Every length is checked against the batch's bounds: a malformed batch raises ValueError, never reads
 * past the buffer. The batch header (CRC, attributes, transactions, control batches) is left to aiokafka.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#ifndef SOURCE_SHA256 /* setup.py defines it: the hash of this file, checked at import (native_modules.py) */
#define SOURCE_SHA256 "unknown"
#endif
#define BATCH_HEADER 61      /* baseOffset .. recordsCount */
#define LOG_APPEND_TIME 0x08 /* attributes bit: every record's timestamp is the batch's max timestamp */

typedef struct {
    const unsigned char *p;
    const unsigned char *end;
} Cursor;

static int64_t read_be64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = (v << 8) | p[i];
    return (int64_t)v;
}

static int32_t read_be32(const unsigned char *p) {
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3]);
}

static int16_t read_be16(const unsigned char *p) { return (int16_t)(((uint16_t)p[0] << 8) | p[1]); }

/* zig-zag varlong; 0 on success, -1 when it runs past the end or past 10 bytes */
static int read_varlong(Cursor *c, int64_t *out) {
    uint64_t raw = 0;
    int shift = 0;
    while (c->p < c->end && shift < 64) {
        unsigned char b = *c->p++;
        raw |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = (int64_t)((raw >> 1) ^ (~(raw & 1) + 1));
            return 0;
        }
        shift += 7;
    }
    return -1;
}

/* a length-prefixed byte string; sets *out to a new bytes object or to None (length -1) */
static int read_bytes(Cursor *c, PyObject **out) {
    int64_t len;
    if (read_varlong(c, &len) < 0) return -1;
    if (len < 0) {
        Py_INCREF(Py_None);
        *out = Py_None;
        return 0;
    }
    if (len > c->end - c->p) return -1;
    *out = PyBytes_FromStringAndSize((const char *)c->p, (Py_ssize_t)len);
    if (*out == NULL) return -2;
    c->p += len;
    return 0;
}

static PyObject *malformed(const char *what, Py_ssize_t at) {
    PyErr_Format(PyExc_ValueError, "malformed record batch: %s at byte %zd", what, at);
    return NULL;
}

static int append_steal(PyObject *list, PyObject *item) {
    if (item == NULL) return -1;
    int rc = PyList_Append(list, item);
    Py_DECREF(item);
    return rc;
}

/* decode_batch(buffer, start, min_offset) -> (offsets, timestamps, keys, values, headers or None)
 * buffer[start:] begins with one whole v2 batch; records below min_offset are skipped. */
static PyObject *decode_batch(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t start;
    long long min_offset;
    if (!PyArg_ParseTuple(args, "y*nL", &view, &start, &min_offset)) return NULL;
    PyObject *result = NULL, *offsets = NULL, *timestamps = NULL, *keys = NULL, *values = NULL, *headers = NULL;
    const unsigned char *buf = (const unsigned char *)view.buf;
    if (start < 0 || view.len - start < BATCH_HEADER) {
        malformed("batch header out of bounds", start);
        goto done;
    }
    const unsigned char *b = buf + start;
    int64_t base_offset = read_be64(b);
    int32_t batch_length = read_be32(b + 8);
    if (batch_length < BATCH_HEADER - 12 || batch_length > view.len - start - 12) {
        malformed("batch length out of bounds", start + 8);
        goto done;
    }
    if (b[16] != 2) {
        malformed("not message format v2", start + 16);
        goto done;
    }
    int16_t attributes = read_be16(b + 21);
    int64_t base_timestamp = read_be64(b + 27);
    int64_t max_timestamp = read_be64(b + 35);
    int32_t count = read_be32(b + 57);
    int log_append_time = (attributes & LOG_APPEND_TIME) != 0;
    Cursor c = {b + BATCH_HEADER, b + 12 + batch_length};

    offsets = PyList_New(0);
    timestamps = PyList_New(0);
    keys = PyList_New(0);
    values = PyList_New(0);
    if (!offsets || !timestamps || !keys || !values) goto done;
    for (int32_t i = 0; i < count; i++) {
        int64_t length, timestamp_delta, offset_delta, header_count;
        if (read_varlong(&c, &length) < 0 || length < 0 || length > c.end - c.p) {
            malformed("record length", c.p - buf);
            goto done;
        }
        Cursor r = {c.p, c.p + length};
        c.p += length;
        if (r.p >= r.end) {
            malformed("empty record", r.p - buf);
            goto done;
        }
        r.p++; /* record attributes: unused */
        if (read_varlong(&r, &timestamp_delta) < 0 || read_varlong(&r, &offset_delta) < 0) {
            malformed("record timestamp or offset", r.p - buf);
            goto done;
        }
        int64_t offset = base_offset + offset_delta;
        if (offset < min_offset) continue;
        PyObject *key, *value;
        int rc = read_bytes(&r, &key);
        if (rc == -2) goto done;
        if (rc < 0) {
            malformed("record key", r.p - buf);
            goto done;
        }
        rc = read_bytes(&r, &value);
        if (rc < 0) {
            Py_DECREF(key);
            if (rc == -1) malformed("record value", r.p - buf);
            goto done;
        }
        if (append_steal(keys, key) < 0 || append_steal(values, value) < 0) goto done;
        if (append_steal(offsets, PyLong_FromLongLong(offset)) < 0) goto done;
        int64_t ts = log_append_time ? max_timestamp : base_timestamp + timestamp_delta;
        if (append_steal(timestamps, PyLong_FromLongLong(ts)) < 0) goto done;
        if (read_varlong(&r, &header_count) < 0 || header_count < 0 || header_count > r.end - r.p) {
            malformed("header count", r.p - buf);
            goto done;
        }
        if (header_count == 0 && headers == NULL) continue;
        if (headers == NULL) { /* first record with headers: the ones before it had none */
            Py_ssize_t before = PyList_GET_SIZE(keys) - 1;
            headers = PyList_New(0);
            if (!headers) goto done;
            for (Py_ssize_t j = 0; j < before; j++) {
                if (append_steal(headers, PyTuple_New(0)) < 0) goto done;
            }
        }
        PyObject *record_headers = PyTuple_New((Py_ssize_t)header_count);
        if (!record_headers) goto done;
        for (int64_t h = 0; h < header_count; h++) {
            int64_t klen;
            if (read_varlong(&r, &klen) < 0 || klen < 0 || klen > r.end - r.p) {
                Py_DECREF(record_headers);
                malformed("header key", r.p - buf);
                goto done;
            }
            PyObject *hkey = PyUnicode_DecodeUTF8((const char *)r.p, (Py_ssize_t)klen, "strict");
            if (!hkey) {
                Py_DECREF(record_headers);
                goto done;
            }
            r.p += klen;
            PyObject *hvalue;
            rc = read_bytes(&r, &hvalue);
            if (rc < 0) {
                Py_DECREF(hkey);
                Py_DECREF(record_headers);
                if (rc == -1) malformed("header value", r.p - buf);
                goto done;
            }
            PyObject *pair = PyTuple_Pack(2, hkey, hvalue);
            Py_DECREF(hkey);
            Py_DECREF(hvalue);
            if (!pair) {
                Py_DECREF(record_headers);
                goto done;
            }
            PyTuple_SET_ITEM(record_headers, (Py_ssize_t)h, pair);
        }
        if (append_steal(headers, record_headers) < 0) goto done;
    }
    if (headers == NULL) {
        Py_INCREF(Py_None);
        headers = Py_None;
    }
    result = PyTuple_Pack(5, offsets, timestamps, keys, values, headers);
done:
    Py_XDECREF(offsets);
    Py_XDECREF(timestamps);
    Py_XDECREF(keys);
    Py_XDECREF(values);
    Py_XDECREF(headers);
    PyBuffer_Release(&view);
    return result;
}

/* timestamped_values(timestamps, values) -> values behind their 8-byte big-endian timestamp (None stays None):
 * the value format of Kafka Streams' timestamped stores, built without a Python loop. */
static PyObject *timestamped_values(PyObject *self, PyObject *args) {
    PyObject *timestamps, *values;
    if (!PyArg_ParseTuple(args, "O!O!", &PyList_Type, &timestamps, &PyList_Type, &values)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(values);
    if (PyList_GET_SIZE(timestamps) != n) {
        PyErr_SetString(PyExc_ValueError, "timestamps and values differ in length");
        return NULL;
    }
    PyObject *out = PyList_New(n);
    if (!out) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *value = PyList_GET_ITEM(values, i);
        if (value == Py_None) {
            Py_INCREF(Py_None);
            PyList_SET_ITEM(out, i, Py_None);
            continue;
        }
        if (!PyBytes_Check(value)) {
            Py_DECREF(out);
            PyErr_SetString(PyExc_TypeError, "values must be bytes or None");
            return NULL;
        }
        long long ts = PyLong_AsLongLong(PyList_GET_ITEM(timestamps, i));
        if (ts == -1 && PyErr_Occurred()) {
            Py_DECREF(out);
            return NULL;
        }
        Py_ssize_t len = PyBytes_GET_SIZE(value);
        PyObject *item = PyBytes_FromStringAndSize(NULL, len + 8);
        if (!item) {
            Py_DECREF(out);
            return NULL;
        }
        unsigned char *dst = (unsigned char *)PyBytes_AS_STRING(item);
        uint64_t u = (uint64_t)ts;
        for (int k = 7; k >= 0; k--) {
            dst[k] = (unsigned char)(u & 0xff);
            u >>= 8;
        }
        memcpy(dst + 8, PyBytes_AS_STRING(value), (size_t)len);
        PyList_SET_ITEM(out, i, item);
    }
    return out;
}

static PyStructSequence_Field record_fields[] = {
    {"offset", NULL}, {"timestamp", NULL}, {"key", NULL}, {"value", NULL}, {"headers", NULL},
    {"timestamp_type", NULL}, {NULL, NULL}};

static PyStructSequence_Desc record_desc = {
    "streamlet._record_batch.BatchRecord",
    "A fetched record as the main consumer hands it over (timestamp_type 0: create time, 1: log append time).",
    record_fields, 6};

static PyTypeObject *record_type;

/* decode_records(buffer, start, min_offset) -> [BatchRecord(offset, timestamp, key, value, headers,
 * timestamp_type), ...]: the main consumer's records, one struct sequence (a tuple with named fields, which
 * is cheaper to make and free than a NamedTuple) per record, built here instead of by a Python generator. */
static PyObject *decode_records(PyObject *self, PyObject *args) {
    PyObject *buffer, *start, *min_offset;
    if (!PyArg_ParseTuple(args, "OOO", &buffer, &start, &min_offset)) return NULL;
    PyObject *batch_args = PyTuple_Pack(3, buffer, start, min_offset);
    if (!batch_args) return NULL;
    PyObject *columns = decode_batch(self, batch_args);
    Py_DECREF(batch_args);
    if (!columns) return NULL;
    /* decode_batch checked the header's bounds: the attributes are there */
    Py_buffer view;
    if (PyObject_GetBuffer(buffer, &view, PyBUF_SIMPLE) < 0) {
        Py_DECREF(columns);
        return NULL;
    }
    Py_ssize_t at = PyLong_AsSsize_t(start);
    int log_append_time = (read_be16((const unsigned char *)view.buf + at + 21) & LOG_APPEND_TIME) != 0;
    PyBuffer_Release(&view);
    PyObject *offsets = PyTuple_GET_ITEM(columns, 0), *timestamps = PyTuple_GET_ITEM(columns, 1);
    PyObject *keys = PyTuple_GET_ITEM(columns, 2), *values = PyTuple_GET_ITEM(columns, 3);
    PyObject *headers = PyTuple_GET_ITEM(columns, 4);
    PyObject *no_headers = PyTuple_New(0);
    PyObject *type_code = PyLong_FromLong(log_append_time ? 1 : 0);
    Py_ssize_t n = PyList_GET_SIZE(offsets);
    PyObject *out = no_headers && type_code ? PyList_New(n) : NULL;
    for (Py_ssize_t i = 0; out && i < n; i++) {
        PyObject *record = PyStructSequence_New(record_type);
        if (!record) {
            Py_CLEAR(out);
            break;
        }
        PyObject *items[6] = {PyList_GET_ITEM(offsets, i), PyList_GET_ITEM(timestamps, i), PyList_GET_ITEM(keys, i),
                              PyList_GET_ITEM(values, i),
                              headers == Py_None ? no_headers : PyList_GET_ITEM(headers, i), type_code};
        for (int k = 0; k < 6; k++) {
            Py_INCREF(items[k]);
            PyStructSequence_SET_ITEM(record, k, items[k]);
        }
        PyList_SET_ITEM(out, i, record);
    }
    Py_XDECREF(no_headers);
    Py_XDECREF(type_code);
    Py_DECREF(columns);
    return out;
}

static PyMethodDef methods[] = {
    {"decode_batch", decode_batch, METH_VARARGS,
     "decode_batch(buffer, start, min_offset) -> (offsets, timestamps, keys, values, headers or None)"},
    {"decode_records", decode_records, METH_VARARGS,
     "decode_records(buffer, start, min_offset) -> [BatchRecord(offset, timestamp, key, value, headers, "
     "timestamp_type), ...]"},
    {"timestamped_values", timestamped_values, METH_VARARGS,
     "timestamped_values(timestamps, values) -> values behind their 8-byte big-endian timestamps"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "streamlet._record_batch", NULL, -1, methods};

PyMODINIT_FUNC PyInit__record_batch(void) {
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    record_type = PyStructSequence_NewType(&record_desc);
    if (!record_type || PyModule_AddObject(m, "BatchRecord", (PyObject *)record_type) < 0) {
        Py_XDECREF(record_type);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(record_type); /* the module holds one reference, decode_records the other */
    if (PyModule_AddStringConstant(m, "SOURCE_SHA256", SOURCE_SHA256) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
