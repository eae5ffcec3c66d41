/* One chunk of a trace's event array -> the columns of its plain events.
 *
 * The msgspec decode builds a Python object per event and per field, and
 * the columns are then read back out of them: about 2.6 us an event, where
 * this scanner writes the columns straight from the bytes. It takes only
 * what it is sure of: a chunk with anything it does not check the way the
 * typed decode does (an escaped key, a null where a number belongs, an
 * integer beyond 18 digits, invalid UTF-8, deep nesting, a truncated event)
 * is refused whole, and the caller decodes that chunk with msgspec, so the
 * table and its warnings are always the msgspec path's
 * (tests/test_decode_scan.py compares them on every shared trace).
 *
 * "Plain" events carry only the head (ph, cat, name, pid, tid), ts, dur,
 * the six linking ids, `Input Dims` and `Call stack`; every other event
 * (kernel launch properties, memory fields, flow ids, metadata names) is
 * "complex": its byte span is handed back for msgspec to decode. Heads and
 * raw texts are interned here across chunks (one Scanner per decode), and
 * each chunk reports the ones it met first, for the caller to decode once.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <math.h>

#define NO_ID (-1)
#define MAX_DEPTH 64
#define N_LINKS 6

/* ---------------------------------------------------------------- intern */

typedef struct {
    uint64_t *hash; /* 0: empty slot */
    int32_t *slot_id;
    size_t cap, count;
    char *keys;
    size_t keys_len, keys_cap;
    size_t *key_off;
    uint32_t *key_len;
    size_t ids_cap;
} intern_t;

static uint64_t hash_bytes(const unsigned char *p, size_t n) {
    /* FNV-1a over 8-byte words, then a final mix: keys are short JSON texts. */
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 1099511628211ULL;
        h ^= h >> 29;
        p += 8;
        n -= 8;
    }
    while (n--) h = (h ^ *p++) * 1099511628211ULL;
    h ^= h >> 32;
    h *= 0x9E3779B97F4A7C15ULL;
    h ^= h >> 29;
    return h ? h : 1;
}

static void intern_free(intern_t *t) {
    PyMem_Free(t->hash);
    PyMem_Free(t->slot_id);
    PyMem_Free(t->keys);
    PyMem_Free(t->key_off);
    PyMem_Free(t->key_len);
    memset(t, 0, sizeof(*t));
}

static int intern_grow(intern_t *t) {
    size_t cap = t->cap ? t->cap * 2 : 1024;
    uint64_t *hash = PyMem_Calloc(cap, sizeof(uint64_t));
    int32_t *slot_id = PyMem_Malloc(cap * sizeof(int32_t));
    if (!hash || !slot_id) {
        PyMem_Free(hash);
        PyMem_Free(slot_id);
        return -1;
    }
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->hash[i]) continue;
        size_t j = t->hash[i] & (cap - 1);
        while (hash[j]) j = (j + 1) & (cap - 1);
        hash[j] = t->hash[i];
        slot_id[j] = t->slot_id[i];
    }
    PyMem_Free(t->hash);
    PyMem_Free(t->slot_id);
    t->hash = hash;
    t->slot_id = slot_id;
    t->cap = cap;
    return 0;
}

/* id of `key`, adding it when new (*is_new set); -1 when out of memory. */
static int32_t intern_id(intern_t *t, const unsigned char *key, size_t n, int *is_new) {
    if ((t->count + 1) * 2 > t->cap && intern_grow(t) < 0) return -1;
    uint64_t h = hash_bytes(key, n);
    size_t j = h & (t->cap - 1);
    while (t->hash[j]) {
        if (t->hash[j] == h) {
            int32_t id = t->slot_id[j];
            if (t->key_len[id] == n && memcmp(t->keys + t->key_off[id], key, n) == 0) {
                *is_new = 0;
                return id;
            }
        }
        j = (j + 1) & (t->cap - 1);
    }
    if (t->count == t->ids_cap) {
        size_t cap = t->ids_cap ? t->ids_cap * 2 : 1024;
        size_t *off = PyMem_Realloc(t->key_off, cap * sizeof(size_t));
        if (!off) return -1;
        t->key_off = off;
        uint32_t *len = PyMem_Realloc(t->key_len, cap * sizeof(uint32_t));
        if (!len) return -1;
        t->key_len = len;
        t->ids_cap = cap;
    }
    if (t->keys_len + n > t->keys_cap) {
        size_t cap = t->keys_cap ? t->keys_cap : 1 << 16;
        while (cap < t->keys_len + n) cap *= 2;
        char *keys = PyMem_Realloc(t->keys, cap);
        if (!keys) return -1;
        t->keys = keys;
        t->keys_cap = cap;
    }
    int32_t id = (int32_t)t->count++;
    memcpy(t->keys + t->keys_len, key, n);
    t->key_off[id] = t->keys_len;
    t->key_len[id] = (uint32_t)n;
    t->keys_len += n;
    t->hash[j] = h;
    t->slot_id[j] = id;
    *is_new = 1;
    return id;
}

/* Back to the first n ids (a refused chunk's additions undone): the slots
 * are rebuilt, since a growth may have moved older keys behind newer ones. */
static int intern_truncate(intern_t *t, size_t n) {
    if (t->count == n) return 0;
    t->keys_len = t->key_off[n];
    t->count = n;
    memset(t->hash, 0, t->cap * sizeof(uint64_t));
    for (size_t id = 0; id < n; id++) {
        uint64_t h = hash_bytes((const unsigned char *)(t->keys + t->key_off[id]), t->key_len[id]);
        size_t j = h & (t->cap - 1);
        while (t->hash[j]) j = (j + 1) & (t->cap - 1);
        t->hash[j] = h;
        t->slot_id[j] = (int32_t)id;
    }
    return 0;
}

/* ------------------------------------------------------------ out arrays */

typedef struct {
    char *data;
    size_t len, cap; /* bytes */
} buf_t;

static int buf_put(buf_t *b, const void *v, size_t n) {
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 1 << 14;
        while (cap < b->len + n) cap *= 2;
        char *d = PyMem_Realloc(b->data, cap);
        if (!d) return -1;
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, v, n);
    b->len += n;
    return 0;
}

/* ----------------------------------------------------------------- JSON */

typedef const unsigned char *cp;

typedef struct {
    cp p, end;
} cur_t;

#define WS(c) ((c) == ' ' || (c) == '\n' || (c) == '\r' || (c) == '\t')

static inline void skip_ws(cur_t *c) {
    while (c->p < c->end && WS(*c->p)) c->p++;
}

static inline int hexval(unsigned char h) {
    if (h >= '0' && h <= '9') return h - '0';
    if (h >= 'a' && h <= 'f') return h - 'a' + 10;
    if (h >= 'A' && h <= 'F') return h - 'A' + 10;
    return -1;
}

/* A valid UTF-8 sequence starting at p (p[0] >= 0x80): its length, 0 if invalid. */
static int utf8_len(cp p, cp end) {
    unsigned char c = p[0];
    int n;
    uint32_t cp_min, v;
    if (c >= 0xC2 && c <= 0xDF) { n = 2; v = c & 0x1F; cp_min = 0x80; }
    else if (c >= 0xE0 && c <= 0xEF) { n = 3; v = c & 0x0F; cp_min = 0x800; }
    else if (c >= 0xF0 && c <= 0xF4) { n = 4; v = c & 0x07; cp_min = 0x10000; }
    else return 0;
    if (end - p < n) return 0;
    for (int i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (p[i] & 0x3F);
    }
    if (v < cp_min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
    return n;
}

/* c->p at '"': moves past the closing quote. *escaped: a backslash was met.
 * Refuses (-1) control characters, invalid UTF-8, unknown escapes and
 * surrogate \u escapes (whatever the typed decode might make of those). */
static int scan_string(cur_t *c, int *escaped) {
    cp p = c->p + 1, end = c->end;
    *escaped = 0;
    while (p < end) {
        /* Eight bytes at a time while none is a quote, a backslash, a
         * control character or non-ASCII (SWAR: a byte's high bit is set in
         * t where it is one of those; false positives only after a true one). */
        while (end - p >= 8) {
            uint64_t w, q, b, t;
            memcpy(&w, p, 8);
            q = w ^ 0x2222222222222222ULL;
            b = w ^ 0x5C5C5C5C5C5C5C5CULL;
            t = ((q - 0x0101010101010101ULL) & ~q) | ((b - 0x0101010101010101ULL) & ~b) |
                ((w - 0x2020202020202020ULL) & ~w) | w;
            if (t & 0x8080808080808080ULL) break;
            p += 8;
        }
        if (p >= end) break;
        unsigned char ch = *p;
        if (ch == '"') {
            c->p = p + 1;
            return 0;
        }
        if (ch == '\\') {
            *escaped = 1;
            if (p + 1 >= end) return -1;
            unsigned char e = p[1];
            if (e == 'u') {
                if (end - p < 6) return -1;
                int v = 0;
                for (int i = 2; i < 6; i++) {
                    int h = hexval(p[i]);
                    if (h < 0) return -1;
                    v = v * 16 + h;
                }
                if (v >= 0xD800 && v <= 0xDFFF) return -1;
                p += 6;
                continue;
            }
            if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't') {
                p += 2;
                continue;
            }
            return -1;
        }
        if (ch < 0x20) return -1;
        if (ch >= 0x80) {
            int n = utf8_len(p, end);
            if (!n) return -1;
            p += n;
            continue;
        }
        p++;
    }
    return -1;
}

/* c->p at a number's first byte: moves past it; *is_int: no fraction or exponent. */
static int scan_number(cur_t *c, int *is_int) {
    cp p = c->p, end = c->end;
    *is_int = 1;
    if (p < end && *p == '-') p++;
    if (p >= end) return -1;
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        while (p < end && *p >= '0' && *p <= '9') p++;
    } else {
        return -1;
    }
    if (p < end && *p == '.') {
        *is_int = 0;
        p++;
        if (p >= end || *p < '0' || *p > '9') return -1;
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        *is_int = 0;
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        if (p >= end || *p < '0' || *p > '9') return -1;
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    c->p = p;
    return 0;
}

static int skip_literal(cur_t *c, const char *lit, size_t n) {
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, lit, n) != 0) return -1;
    c->p += n;
    return 0;
}

static int skip_value(cur_t *c, int depth) {
    if (c->p >= c->end) return -1;
    int escaped, is_int;
    switch (*c->p) {
    case '"':
        return scan_string(c, &escaped);
    case 't':
        return skip_literal(c, "true", 4);
    case 'f':
        return skip_literal(c, "false", 5);
    case 'n':
        return skip_literal(c, "null", 4);
    case '[':
    case '{': {
        unsigned char close = *c->p == '[' ? ']' : '}';
        int is_object = close == '}';
        if (depth >= MAX_DEPTH) return -1;
        c->p++;
        skip_ws(c);
        if (c->p < c->end && *c->p == close) {
            c->p++;
            return 0;
        }
        for (;;) {
            if (is_object) {
                if (c->p >= c->end || *c->p != '"' || scan_string(c, &escaped) < 0) return -1;
                skip_ws(c);
                if (c->p >= c->end || *c->p != ':') return -1;
                c->p++;
                skip_ws(c);
            }
            if (skip_value(c, depth + 1) < 0) return -1;
            skip_ws(c);
            if (c->p >= c->end) return -1;
            if (*c->p == ',') {
                c->p++;
                skip_ws(c);
                continue;
            }
            if (*c->p == close) {
                c->p++;
                return 0;
            }
            return -1;
        }
    }
    default:
        return scan_number(c, &is_int);
    }
}

/* ------------------------------------------------------------- numbers */

static const double POW10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                               1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* The double nearest [p, q), a validated JSON number: Clinger's fast path
 * (a mantissa of at most 2^53 and a power of ten of at most 22 are exact
 * doubles, so one division rounds correctly), else Python's correctly
 * rounded parser; -1 for one out of range. */
static int number_value(cp p, cp q, double *out) {
    cp s = p;
    int neg = 0;
    if (*s == '-') {
        neg = 1;
        s++;
    }
    uint64_t mant = 0;
    int digits = 0, exp10 = 0;
    while (s < q && *s >= '0' && *s <= '9') {
        if (digits || *s != '0') digits++;
        mant = mant * 10 + (uint64_t)(*s - '0');
        s++;
    }
    if (digits > 19) goto slow;
    if (s < q && *s == '.') {
        s++;
        while (s < q && *s >= '0' && *s <= '9') {
            if (digits || *s != '0') digits++;
            if (digits > 19) goto slow;
            mant = mant * 10 + (uint64_t)(*s - '0');
            exp10--;
            s++;
        }
    }
    if (s < q || exp10 < -22 || mant > (1ULL << 53)) goto slow; /* s < q: an exponent */
    {
        double v = (double)mant;
        v = exp10 < 0 ? v / POW10[-exp10] : v;
        *out = neg ? -v : v;
        return 0;
    }
slow: {
    char tmp[128];
    size_t n = (size_t)(q - p);
    if (n >= sizeof(tmp)) return -1;
    memcpy(tmp, p, n);
    tmp[n] = 0;
    char *endp;
    double v = PyOS_string_to_double(tmp, &endp, NULL);
    if (v == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return -1;
    }
    if (endp != tmp + n || !isfinite(v)) return -1;
    *out = v;
    return 0;
}
}

/* A JSON integer of at most 18 digits (always fits int64). */
static int int_value(cp p, cp q, int64_t *out) {
    int neg = 0;
    if (*p == '-') {
        neg = 1;
        p++;
    }
    if (q - p > 18) return -1;
    int64_t v = 0;
    for (; p < q; p++) v = v * 10 + (*p - '0');
    *out = neg ? -v : v;
    return 0;
}

/* ------------------------------------------------------------- keys */

#define KEY(s) (sizeof(s) - 1), s

enum {
    K_OTHER, K_PH, K_CAT, K_NAME, K_PID, K_TID, K_TS, K_DUR, K_ARGS, K_COMPLEX,
};

static int top_key(cp k, size_t n) {
    switch (n) {
    case 2:
        if (!memcmp(k, "ph", 2)) return K_PH;
        if (!memcmp(k, "ts", 2)) return K_TS;
        if (!memcmp(k, "id", 2) || !memcmp(k, "bp", 2)) return K_COMPLEX;
        break;
    case 3:
        if (!memcmp(k, "cat", 3)) return K_CAT;
        if (!memcmp(k, "pid", 3)) return K_PID;
        if (!memcmp(k, "tid", 3)) return K_TID;
        if (!memcmp(k, "dur", 3)) return K_DUR;
        break;
    case 4:
        if (!memcmp(k, "name", 4)) return K_NAME;
        if (!memcmp(k, "args", 4)) return K_ARGS;
        break;
    }
    return K_OTHER;
}

/* Link columns, in the order the caller's _LINK_FIELDS lists them. */
enum { L_EXTERNAL, L_EXTERNAL_2021, L_CORRELATION, L_PYTHON_ID, L_PYTHON_PARENT, L_DEVICE };
enum { A_OTHER = -1, A_DIMS = 100, A_STACK, A_COMPLEX };

typedef struct {
    size_t n;
    const char *s;
    int what;
} arg_key_t;

static const arg_key_t ARG_KEYS[] = {
    {KEY("Python parent id"), L_PYTHON_PARENT},
    {KEY("Python id"), L_PYTHON_ID},
    {KEY("External id"), L_EXTERNAL},
    {KEY("external id"), L_EXTERNAL_2021},
    {KEY("correlation"), L_CORRELATION},
    {KEY("device"), L_DEVICE},
    {KEY("Input Dims"), A_DIMS},
    {KEY("Call stack"), A_STACK},
    /* Every other field the schema's Args declares: left to msgspec. */
    {KEY("registers per thread"), A_COMPLEX},
    {KEY("shared memory"), A_COMPLEX},
    {KEY("blocks per SM"), A_COMPLEX},
    {KEY("warps per SM"), A_COMPLEX},
    {KEY("grid"), A_COMPLEX},
    {KEY("block"), A_COMPLEX},
    {KEY("est. achieved occupancy %"), A_COMPLEX},
    {KEY("Total Reserved"), A_COMPLEX},
    {KEY("Total Allocated"), A_COMPLEX},
    {KEY("Bytes"), A_COMPLEX},
    {KEY("Device Id"), A_COMPLEX},
    {KEY("Device Type"), A_COMPLEX},
    {KEY("Addr"), A_COMPLEX},
    {KEY("name"), A_COMPLEX},
};

static int arg_key(cp k, size_t n) {
    for (size_t i = 0; i < sizeof(ARG_KEYS) / sizeof(ARG_KEYS[0]); i++)
        if (ARG_KEYS[i].n == n && !memcmp(ARG_KEYS[i].s, k, n)) return ARG_KEYS[i].what;
    return A_OTHER;
}

/* ------------------------------------------------------------- scanner */

typedef struct {
    PyObject_HEAD
    intern_t heads;
    intern_t raws;
} Scanner;

typedef struct {
    cp s, e; /* a value's text, e == NULL: absent */
} span_t;

typedef struct {
    span_t head[5]; /* ph, cat, name, pid, tid */
    double ts, dur;
    int64_t link[N_LINKS];
    span_t dims, stack;
    int complex;
} event_t;

typedef struct {
    buf_t head, ts, dur, link[N_LINKS], dims, stack, flag, starts, ends;
    PyObject *new_heads, *new_raws;
} out_t;

static void out_free(out_t *o) {
    buf_t *bufs[] = {&o->head, &o->ts, &o->dur, &o->dims, &o->stack, &o->flag, &o->starts, &o->ends};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++) PyMem_Free(bufs[i]->data);
    for (int i = 0; i < N_LINKS; i++) PyMem_Free(o->link[i].data);
    Py_XDECREF(o->new_heads);
    Py_XDECREF(o->new_raws);
}

/* What the typed decode takes as the default of an absent head field. */
static const char *HEAD_DEFAULTS[5] = {"\"\"", "\"\"", "\"\"", "0", "0"};

static int parse_args(cur_t *c, event_t *ev) {
    int escaped, is_int;
    if (c->p >= c->end || *c->p != '{') return -1;
    c->p++;
    skip_ws(c);
    if (c->p < c->end && *c->p == '}') {
        c->p++;
        return 0;
    }
    for (;;) {
        if (c->p >= c->end || *c->p != '"') return -1;
        cp k = c->p + 1;
        if (scan_string(c, &escaped) < 0 || escaped) return -1;
        size_t kn = (size_t)(c->p - 1 - k);
        skip_ws(c);
        if (c->p >= c->end || *c->p != ':') return -1;
        c->p++;
        skip_ws(c);
        if (c->p >= c->end) return -1;
        int what = arg_key(k, kn);
        cp v = c->p;
        if (what >= 0 && what < N_LINKS) {
            if (*v == 'n') {
                if (skip_literal(c, "null", 4) < 0) return -1;
                ev->link[what] = NO_ID;
            } else {
                if (scan_number(c, &is_int) < 0 || !is_int) return -1;
                if (int_value(v, c->p, &ev->link[what]) < 0) return -1;
            }
        } else {
            if (skip_value(c, 2) < 0) return -1;
            if (what == A_DIMS) {
                ev->dims.s = v;
                ev->dims.e = c->p;
            } else if (what == A_STACK) {
                ev->stack.s = v;
                ev->stack.e = c->p;
            } else if (what == A_COMPLEX) {
                ev->complex = 1;
            }
        }
        skip_ws(c);
        if (c->p >= c->end) return -1;
        if (*c->p == ',') {
            c->p++;
            skip_ws(c);
            continue;
        }
        if (*c->p == '}') {
            c->p++;
            return 0;
        }
        return -1;
    }
}

static int parse_event(cur_t *c, event_t *ev) {
    int escaped, is_int;
    memset(ev, 0, sizeof(*ev));
    ev->ts = ev->dur = NAN;
    for (int i = 0; i < N_LINKS; i++) ev->link[i] = NO_ID;
    if (c->p >= c->end || *c->p != '{') return -1;
    c->p++;
    skip_ws(c);
    if (c->p < c->end && *c->p == '}') {
        c->p++;
        return 0;
    }
    for (;;) {
        if (c->p >= c->end || *c->p != '"') return -1;
        cp k = c->p + 1;
        if (scan_string(c, &escaped) < 0 || escaped) return -1;
        size_t kn = (size_t)(c->p - 1 - k);
        skip_ws(c);
        if (c->p >= c->end || *c->p != ':') return -1;
        c->p++;
        skip_ws(c);
        if (c->p >= c->end) return -1;
        int key = top_key(k, kn);
        cp v = c->p;
        switch (key) {
        case K_PH:
        case K_CAT:
        case K_NAME:
            if (*v != '"' || scan_string(c, &escaped) < 0) return -1;
            ev->head[key - K_PH].s = v;
            ev->head[key - K_PH].e = c->p;
            break;
        case K_PID:
        case K_TID:
            if (*v == '"') {
                if (scan_string(c, &escaped) < 0) return -1;
            } else if (scan_number(c, &is_int) < 0 || !is_int) {
                return -1;
            }
            ev->head[key - K_PH].s = v;
            ev->head[key - K_PH].e = c->p;
            break;
        case K_TS:
        case K_DUR: {
            double x;
            if (scan_number(c, &is_int) < 0 || number_value(v, c->p, &x) < 0) return -1;
            if (key == K_TS)
                ev->ts = x;
            else
                ev->dur = x;
            break;
        }
        case K_ARGS:
            if (parse_args(c, ev) < 0) return -1;
            break;
        case K_COMPLEX:
            ev->complex = 1;
            /* fall through */
        default:
            if (skip_value(c, 1) < 0) return -1;
        }
        skip_ws(c);
        if (c->p >= c->end) return -1;
        if (*c->p == ',') {
            c->p++;
            skip_ws(c);
            continue;
        }
        if (*c->p == '}') {
            c->p++;
            return 0;
        }
        return -1;
    }
}

/* The key of a head: each field's text (or its default) behind its length. */
static size_t head_key(const event_t *ev, unsigned char *key, size_t cap) {
    size_t n = 0;
    for (int i = 0; i < 5; i++) {
        const unsigned char *s = ev->head[i].e ? ev->head[i].s : (cp)HEAD_DEFAULTS[i];
        uint32_t len = ev->head[i].e ? (uint32_t)(ev->head[i].e - ev->head[i].s) : (uint32_t)strlen(HEAD_DEFAULTS[i]);
        if (n + 4 + len > cap) return 0;
        memcpy(key + n, &len, 4);
        memcpy(key + n + 4, s, len);
        n += 4 + len;
    }
    return n;
}

static PyObject *head_tuple(const unsigned char *key) {
    PyObject *t = PyTuple_New(5);
    if (!t) return NULL;
    size_t n = 0;
    for (int i = 0; i < 5; i++) {
        uint32_t len;
        memcpy(&len, key + n, 4);
        PyObject *b = PyBytes_FromStringAndSize((const char *)key + n + 4, len);
        if (!b) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, b);
        n += 4 + len;
    }
    return t;
}

/* Local raw id of a span (-1 when absent); new texts appended to new_raws. */
static int raw_id(Scanner *self, span_t sp, out_t *o, int32_t *id) {
    if (!sp.e) {
        *id = NO_ID;
        return 0;
    }
    int is_new;
    *id = intern_id(&self->raws, sp.s, (size_t)(sp.e - sp.s), &is_new);
    if (*id < 0) return -1;
    if (is_new) {
        PyObject *b = PyBytes_FromStringAndSize((const char *)sp.s, sp.e - sp.s);
        if (!b || PyList_Append(o->new_raws, b) < 0) {
            Py_XDECREF(b);
            return -1;
        }
        Py_DECREF(b);
    }
    return 0;
}

enum { OK = 0, REFUSED = 1, FAILED = -1 };

static int emit(Scanner *self, const event_t *ev, int64_t start, int64_t end, out_t *o) {
    unsigned char key[4096];
    size_t kn = head_key(ev, key, sizeof(key));
    if (!kn) return REFUSED; /* a head this long is not worth a fast path */
    int is_new;
    int32_t head = intern_id(&self->heads, key, kn, &is_new);
    if (head < 0) return FAILED;
    if (is_new) {
        PyObject *t = head_tuple(key);
        if (!t || PyList_Append(o->new_heads, t) < 0) {
            Py_XDECREF(t);
            return FAILED;
        }
        Py_DECREF(t);
    }
    int32_t dims, stack;
    if (raw_id(self, ev->dims, o, &dims) < 0 || raw_id(self, ev->stack, o, &stack) < 0) return FAILED;
    if (buf_put(&o->head, &head, 4) < 0 || buf_put(&o->ts, &ev->ts, 8) < 0 || buf_put(&o->dur, &ev->dur, 8) < 0 ||
        buf_put(&o->dims, &dims, 4) < 0 || buf_put(&o->stack, &stack, 4) < 0)
        return FAILED;
    for (int i = 0; i < N_LINKS; i++)
        if (buf_put(&o->link[i], &ev->link[i], 8) < 0) return FAILED;
    uint8_t flag = (uint8_t)ev->complex;
    if (buf_put(&o->flag, &flag, 1) < 0 || buf_put(&o->starts, &start, 8) < 0 || buf_put(&o->ends, &end, 8) < 0)
        return FAILED;
    return OK;
}

static PyObject *bytes_of(buf_t *b) { return PyBytes_FromStringAndSize(b->data ? b->data : "", (Py_ssize_t)b->len); }

PyDoc_STRVAR(scan_doc,
"scan(data, start, end) -> tuple or None\n\n"
"The events in data[start:end] (events separated by commas, as a chunk of\n"
"the event array; a trailing comma allowed). None when the chunk holds\n"
"anything the scanner does not take. Else (count, heads, ts, dur, links,\n"
"dims, stacks, complex, starts, ends, new_heads, new_raws), as bytes of\n"
"native arrays: int32 head ids, float64 ts and dur (NaN absent), 6*count\n"
"int64 link ids (field-major), int32 raw ids of Input Dims and Call stack\n"
"(-1 absent), uint8 1 for a complex event, int64 [start, end) offsets of\n"
"each event in data; then the heads (5-tuples of the fields' JSON texts)\n"
"and raw texts met for the first time, in order.");

static PyObject *Scanner_scan(Scanner *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t start, end;
    if (!PyArg_ParseTuple(args, "y*nn", &view, &start, &end)) return NULL;
    if (start < 0 || end > view.len || start > end) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "range outside the data");
        return NULL;
    }
    cp base = (cp)view.buf;
    cur_t c = {base + start, base + end};
    /* As chunk_text: trailing whitespace and one trailing comma are not events. */
    while (c.end > c.p && WS(c.end[-1])) c.end--;
    if (c.end > c.p && c.end[-1] == ',') c.end--;

    out_t o;
    memset(&o, 0, sizeof(o));
    o.new_heads = PyList_New(0);
    o.new_raws = PyList_New(0);
    PyObject *result = NULL;
    int status = OK;
    int64_t count = 0;
    if (!o.new_heads || !o.new_raws) goto done;
    size_t heads_before = self->heads.count, raws_before = self->raws.count;
    skip_ws(&c);
    if (c.p < c.end) {
        for (;;) {
            event_t ev;
            cp at = c.p;
            if (parse_event(&c, &ev) < 0) {
                status = REFUSED;
                break;
            }
            status = emit(self, &ev, (int64_t)(at - base), (int64_t)(c.p - base), &o);
            if (status != OK) break;
            count++;
            skip_ws(&c);
            if (c.p >= c.end) break;
            if (*c.p != ',') {
                status = REFUSED;
                break;
            }
            c.p++;
            skip_ws(&c);
            if (c.p >= c.end) { /* "a,," or a lone comma: not JSON */
                status = REFUSED;
                break;
            }
        }
    }
    if (status == FAILED) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto done;
    }
    if (status == REFUSED) {
        /* Forget what this chunk interned, so that the next accepted chunk
         * reports those heads and texts as new. */
        if (intern_truncate(&self->heads, heads_before) < 0 || intern_truncate(&self->raws, raws_before) < 0) {
            PyErr_NoMemory();
            goto done;
        }
        result = Py_None;
        Py_INCREF(result);
        goto done;
    }
    {
        PyObject *links = NULL;
        buf_t all = {0};
        for (int i = 0; i < N_LINKS && status == OK; i++)
            if (buf_put(&all, o.link[i].data ? o.link[i].data : "", o.link[i].len) < 0) status = FAILED;
        if (status == OK) links = bytes_of(&all);
        PyMem_Free(all.data);
        if (!links) {
            if (!PyErr_Occurred()) PyErr_NoMemory();
            goto done;
        }
        result = Py_BuildValue("(LNNNNNNNNNOO)", (long long)count, bytes_of(&o.head), bytes_of(&o.ts),
                               bytes_of(&o.dur), links, bytes_of(&o.dims), bytes_of(&o.stack), bytes_of(&o.flag),
                               bytes_of(&o.starts), bytes_of(&o.ends), o.new_heads, o.new_raws);
    }
done:
    out_free(&o);
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef Scanner_methods[] = {
    {"scan", (PyCFunction)Scanner_scan, METH_VARARGS, scan_doc},
    {NULL, NULL, 0, NULL},
};

static void Scanner_dealloc(Scanner *self) {
    intern_free(&self->heads);
    intern_free(&self->raws);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Scanner_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    if (PyTuple_GET_SIZE(args) || (kwds && PyDict_GET_SIZE(kwds))) {
        PyErr_SetString(PyExc_TypeError, "Scanner() takes no arguments");
        return NULL;
    }
    Scanner *self = (Scanner *)type->tp_alloc(type, 0);
    if (self) {
        memset(&self->heads, 0, sizeof(self->heads));
        memset(&self->raws, 0, sizeof(self->raws));
    }
    return (PyObject *)self;
}

static PyTypeObject ScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tb_pipeline_plugin.trace._scan.Scanner",
    .tp_doc = "Interns heads and raw texts across the chunks of one decode.",
    .tp_basicsize = sizeof(Scanner),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = Scanner_new,
    .tp_dealloc = (destructor)Scanner_dealloc,
    .tp_methods = Scanner_methods,
};

static struct PyModuleDef scan_module = {
    PyModuleDef_HEAD_INIT, "_scan", "The trace decode's compiled fast path (trace/scan.py).", -1, NULL,
};

PyMODINIT_FUNC PyInit__scan(void) {
    if (PyType_Ready(&ScannerType) < 0) return NULL;
    PyObject *m = PyModule_Create(&scan_module);
    if (!m) return NULL;
    Py_INCREF(&ScannerType);
    if (PyModule_AddObject(m, "Scanner", (PyObject *)&ScannerType) < 0) {
        Py_DECREF(&ScannerType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
