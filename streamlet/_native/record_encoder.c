/* Encodes Kafka record batches (message format v2, uncompressed) for the producer.
 *
 * The record collector hands a partition's queued records over as a list of (key, value, timestamp, headers)
 * tuples; aiokafka's builder takes them one keyword call per record. Here one call encodes as many records
 * as fit in a batch (`encode_records`, the records section), and `build_batch` puts the batch header and its
 * CRC-32C in front once the producer state (id, epoch, sequence) is known, when aiokafka sends it.
 *
 * The bytes are aiokafka's DefaultRecordBatchBuilder's (its C build, the one installed), bit for bit, and so
 * is its rule for where a batch ends: a record that would bring the batch to batch_size bytes or more starts
 * the next one, unless it is the first.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#ifndef SOURCE_SHA256 /* setup.py defines it: the hash of this file, checked at import (native_modules.py) */
#define SOURCE_SHA256 "unknown"
#endif
#define BATCH_HEADER 61 /* baseOffset .. recordsCount */
#define ATTRIBUTES_OFFSET 21
#define CRC_OFFSET 17

static uint32_t crc_table[256];

static void init_crc_table(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc_table[i] = c;
    }
}

static uint32_t crc32c(const unsigned char *p, Py_ssize_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (Py_ssize_t i = 0; i < n; i++) c = crc_table[(c ^ p[i]) & 0xff] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

static uint64_t zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

static Py_ssize_t varint_size(int64_t v) {
    uint64_t z = zigzag(v);
    Py_ssize_t n = 1;
    while (z >= 0x80) {
        z >>= 7;
        n++;
    }
    return n;
}

static unsigned char *write_varint(unsigned char *p, int64_t v) {
    uint64_t z = zigzag(v);
    while (z >= 0x80) {
        *p++ = (unsigned char)((z & 0x7f) | 0x80);
        z >>= 7;
    }
    *p++ = (unsigned char)z;
    return p;
}

static void write_be(unsigned char *p, uint64_t v, int bytes) {
    for (int i = bytes - 1; i >= 0; i--) {
        p[i] = (unsigned char)(v & 0xff);
        v >>= 8;
    }
}

/* a key, value or header value: bytes, bytearray or None (data NULL, length -1) */
static int byte_string(PyObject *o, const char *what, const char **data, Py_ssize_t *len) {
    if (o == Py_None) {
        *data = NULL;
        *len = -1;
    } else if (PyBytes_Check(o)) {
        *data = PyBytes_AS_STRING(o);
        *len = PyBytes_GET_SIZE(o);
    } else if (PyByteArray_Check(o)) {
        *data = PyByteArray_AS_STRING(o);
        *len = PyByteArray_GET_SIZE(o);
    } else {
        PyErr_Format(PyExc_TypeError, "a record's %s must be bytes or None, not %.80s", what, Py_TYPE(o)->tp_name);
        return -1;
    }
    return 0;
}

static Py_ssize_t field_size(Py_ssize_t len) { return len < 0 ? 1 : varint_size(len) + len; }

static unsigned char *write_field(unsigned char *p, const char *data, Py_ssize_t len) {
    p = write_varint(p, len);
    if (len > 0) {
        memcpy(p, data, (size_t)len);
        p += len;
    }
    return p;
}

typedef struct {
    unsigned char *data;
    Py_ssize_t len, cap;
} Buffer;

static int reserve(Buffer *b, Py_ssize_t more) {
    if (b->len + more <= b->cap) return 0;
    Py_ssize_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + more) cap *= 2;
    unsigned char *data = PyMem_Realloc(b->data, (size_t)cap);
    if (!data) {
        PyErr_NoMemory();
        return -1;
    }
    b->data = data;
    b->cap = cap;
    return 0;
}

/* encode_records(records, start, batch_size, now_ms) -> (body, end, first_timestamp, max_timestamp)
 * records[start:end] encoded as one batch's records section (relative offsets from 0); a None timestamp is
 * now_ms, as aiokafka takes the current time. */
static PyObject *encode_records(PyObject *self, PyObject *args) {
    PyObject *records;
    Py_ssize_t start, batch_size;
    long long now_ms;
    if (!PyArg_ParseTuple(args, "O!nnL", &PyList_Type, &records, &start, &batch_size, &now_ms)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(records);
    if (start < 0 || start >= n) {
        PyErr_SetString(PyExc_IndexError, "start is not a record's index");
        return NULL;
    }
    Buffer out = {NULL, 0, 0};
    long long first_ts = 0, max_ts = 0;
    Py_ssize_t i = start;
    for (; i < n; i++) {
        PyObject *record = PyList_GET_ITEM(records, i);
        if (!PyTuple_Check(record) || PyTuple_GET_SIZE(record) != 4) {
            PyErr_SetString(PyExc_TypeError, "a record must be a (key, value, timestamp, headers) tuple");
            goto fail;
        }
        const char *key, *value;
        Py_ssize_t key_len, value_len;
        if (byte_string(PyTuple_GET_ITEM(record, 0), "key", &key, &key_len) < 0) goto fail;
        if (byte_string(PyTuple_GET_ITEM(record, 1), "value", &value, &value_len) < 0) goto fail;
        PyObject *ts_obj = PyTuple_GET_ITEM(record, 2);
        long long ts = now_ms;
        if (ts_obj != Py_None) {
            if (!PyLong_CheckExact(ts_obj)) {
                PyErr_SetString(PyExc_TypeError, "a record's timestamp must be an int or None");
                goto fail;
            }
            ts = PyLong_AsLongLong(ts_obj);
            if (ts == -1 && PyErr_Occurred()) goto fail;
        }
        PyObject *headers = PySequence_Fast(PyTuple_GET_ITEM(record, 3), "a record's headers must be a sequence");
        if (!headers) goto fail;
        Py_ssize_t header_count = PySequence_Fast_GET_SIZE(headers);
        int first = i == start;
        int64_t ts_delta = first ? 0 : ts - first_ts;
        Py_ssize_t offset_delta = i - start;
        Py_ssize_t size = 1 + varint_size(ts_delta) + varint_size(offset_delta) + field_size(key_len) +
                          field_size(value_len) + varint_size(header_count);
        for (Py_ssize_t h = 0; h < header_count; h++) {
            PyObject *pair = PySequence_Fast_GET_ITEM(headers, h);
            const char *hv;
            Py_ssize_t hk_len, hv_len;
            if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 || !PyUnicode_Check(PyTuple_GET_ITEM(pair, 0))) {
                PyErr_SetString(PyExc_TypeError, "a header must be a (str, bytes) tuple");
                Py_DECREF(headers);
                goto fail;
            }
            if (!PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(pair, 0), &hk_len) ||
                byte_string(PyTuple_GET_ITEM(pair, 1), "header value", &hv, &hv_len) < 0) {
                Py_DECREF(headers);
                goto fail;
            }
            size += varint_size(hk_len) + hk_len + field_size(hv_len);
        }
        Py_ssize_t required = size + varint_size(size);
        if (!first && BATCH_HEADER + out.len + required >= batch_size) {
            Py_DECREF(headers);
            break;
        }
        if (reserve(&out, required) < 0) {
            Py_DECREF(headers);
            goto fail;
        }
        unsigned char *p = out.data + out.len;
        p = write_varint(p, size);
        *p++ = 0; /* record attributes */
        p = write_varint(p, ts_delta);
        p = write_varint(p, offset_delta);
        p = write_field(p, key, key_len);
        p = write_field(p, value, value_len);
        p = write_varint(p, header_count);
        for (Py_ssize_t h = 0; h < header_count; h++) {
            PyObject *pair = PySequence_Fast_GET_ITEM(headers, h);
            Py_ssize_t hk_len, hv_len;
            const char *hk = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(pair, 0), &hk_len), *hv;
            byte_string(PyTuple_GET_ITEM(pair, 1), "header value", &hv, &hv_len);
            p = write_field(p, hk, hk_len);
            p = write_field(p, hv, hv_len);
        }
        Py_DECREF(headers);
        out.len = p - out.data;
        if (first) {
            first_ts = max_ts = ts;
        } else if (ts > max_ts) {
            max_ts = ts;
        }
    }
    PyObject *body = PyBytes_FromStringAndSize((const char *)out.data, out.len);
    PyMem_Free(out.data);
    if (!body) return NULL;
    return Py_BuildValue("(NnLL)", body, i, first_ts, max_ts);
fail:
    PyMem_Free(out.data);
    return NULL;
}

/* build_batch(body, count, first_timestamp, max_timestamp, attributes, producer_id, producer_epoch,
 * base_sequence) -> the whole batch: header (base offset 0, leader epoch -1), CRC-32C, then body */
static PyObject *build_batch(PyObject *self, PyObject *args) {
    Py_buffer body;
    Py_ssize_t count;
    long long first_ts, max_ts, producer_id;
    int attributes, producer_epoch, base_sequence;
    if (!PyArg_ParseTuple(args, "y*nLLiLii", &body, &count, &first_ts, &max_ts, &attributes, &producer_id,
                          &producer_epoch, &base_sequence))
        return NULL;
    Py_ssize_t total = BATCH_HEADER + body.len;
    PyObject *batch = PyBytes_FromStringAndSize(NULL, total);
    if (!batch) {
        PyBuffer_Release(&body);
        return NULL;
    }
    unsigned char *b = (unsigned char *)PyBytes_AS_STRING(batch);
    write_be(b, 0, 8);                                /* base offset: the broker's */
    write_be(b + 8, (uint64_t)(total - 12), 4);        /* batch length, from the leader epoch on */
    write_be(b + 12, (uint64_t)(int64_t)-1, 4);        /* partition leader epoch */
    b[16] = 2;                                         /* magic */
    write_be(b + 21, (uint64_t)attributes, 2);         /* compression 0, transactional bit */
    write_be(b + 23, (uint64_t)(count ? count - 1 : 0), 4); /* last offset delta */
    write_be(b + 27, (uint64_t)first_ts, 8);
    write_be(b + 35, (uint64_t)max_ts, 8);
    write_be(b + 43, (uint64_t)producer_id, 8);
    write_be(b + 51, (uint64_t)producer_epoch, 2);
    write_be(b + 53, (uint64_t)(int64_t)base_sequence, 4);
    write_be(b + 57, (uint64_t)count, 4);
    memcpy(b + BATCH_HEADER, body.buf, (size_t)body.len);
    PyBuffer_Release(&body);
    write_be(b + CRC_OFFSET, crc32c(b + ATTRIBUTES_OFFSET, total - ATTRIBUTES_OFFSET), 4);
    return batch;
}

static PyMethodDef methods[] = {
    {"encode_records", encode_records, METH_VARARGS,
     "encode_records(records, start, batch_size, now_ms) -> (body, end, first_timestamp, max_timestamp)"},
    {"build_batch", build_batch, METH_VARARGS,
     "build_batch(body, count, first_timestamp, max_timestamp, attributes, producer_id, producer_epoch, "
     "base_sequence) -> bytes"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "streamlet._record_encoder", NULL, -1, methods};

PyMODINIT_FUNC PyInit__record_encoder(void) {
    init_crc_table();
    PyObject *m = PyModule_Create(&module);
    if (m && PyModule_AddStringConstant(m, "SOURCE_SHA256", SOURCE_SHA256) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
