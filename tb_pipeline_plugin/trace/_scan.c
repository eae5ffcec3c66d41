/* One chunk of a trace's event array -> the columns of its events.
 *
 * The msgspec decode builds a Python object per event and per field, and
 * the columns are then read back out of them: about 2.6 us an event, where
 * this scanner writes the columns straight from the bytes. It takes only
 * what it is sure of: a chunk with anything it does not check the way the
 * typed decode does (an escaped key, a null where a number belongs, an
 * integer beyond 18 digits, invalid UTF-8, deep nesting, a truncated event)
 * is refused whole, and the caller decodes that chunk with msgspec, so the
 * table and its warnings are always the msgspec path's
 * (tests/trace/test_decode_scan.py compares them on every shared trace).
 *
 * Every field the schema (trace/schema.py) declares is read here: the
 * dense ones (head, ts, dur, linking ids, shapes, input types, stacks) into arrays of
 * one value an event, the sparse ones (memory, kernel launch properties,
 * flow ids, metadata names) as tuples for the events that carry them.
 * Heads and raw texts are interned here across chunks (one Scanner per
 * decode), and each chunk reports the ones it met first, for the caller to
 * decode once (trace/scan.py).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

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

static int buf_grow(buf_t *b, size_t n) {
    size_t cap = b->cap ? b->cap * 2 : 1 << 14;
    while (cap < b->len + n) cap *= 2;
    char *d = PyMem_Realloc(b->data, cap);
    if (!d) return -1;
    b->data = d;
    b->cap = cap;
    return 0;
}

/* Inline with a constant n: one compare and one store an event and column. */
static inline int buf_put(buf_t *b, const void *v, size_t n) {
    if (b->len + n > b->cap && buf_grow(b, n) < 0) return -1;
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
    cp p = c->p, end = c->end;
#ifdef __SSE2__
    /* Pretty-printed traces indent every line: 16 bytes at a time. */
    if (p < end && WS(*p)) {
        const __m128i sp = _mm_set1_epi8(' '), nl = _mm_set1_epi8('\n'), cr = _mm_set1_epi8('\r'),
                      tab = _mm_set1_epi8('\t');
        while (end - p >= 16) {
            __m128i v = _mm_loadu_si128((const __m128i *)p);
            __m128i ws = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, sp), _mm_cmpeq_epi8(v, nl)),
                                      _mm_or_si128(_mm_cmpeq_epi8(v, cr), _mm_cmpeq_epi8(v, tab)));
            unsigned other = ~(unsigned)_mm_movemask_epi8(ws) & 0xFFFF;
            if (other) {
                c->p = p + __builtin_ctz(other);
                return;
            }
            p += 16;
        }
    }
#endif
    while (p < end && WS(*p)) p++;
    c->p = p;
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
        /* Many bytes at a time while none is a quote, a backslash, a
         * control character or non-ASCII. */
#ifdef __SSE2__
        {
            /* Signed bytes below 0x20: the control characters and every
             * byte of 0x80 and above. */
            const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(0x20);
            while (end - p >= 16) {
                __m128i v = _mm_loadu_si128((const __m128i *)p);
                __m128i special = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                                               _mm_cmplt_epi8(v, space));
                unsigned mask = (unsigned)_mm_movemask_epi8(special);
                if (mask) {
                    p += __builtin_ctz(mask);
                    break;
                }
                p += 16;
            }
        }
#endif
        /* SWAR: a byte's high bit is set in t where it is one of those
         * (false positives only after a true one). */
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

enum { K_OTHER, K_PH, K_CAT, K_NAME, K_PID, K_TID, K_TS, K_DUR, K_ARGS, K_ID, K_BP };

static int top_key(cp k, size_t n) {
    switch (n) {
    case 2:
        if (!memcmp(k, "ph", 2)) return K_PH;
        if (!memcmp(k, "ts", 2)) return K_TS;
        if (!memcmp(k, "id", 2)) return K_ID;
        if (!memcmp(k, "bp", 2)) return K_BP;
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

/* The fields of the schema's Args, in the orders columns.py reads them:
 * links as _LINK_FIELDS, memory as GET_MEMORY, kernel numbers as
 * GET_KERNEL after grid and block. */
enum { L_EXTERNAL, L_EXTERNAL_2021, L_CORRELATION, L_PYTHON_ID, L_PYTHON_PARENT, L_DEVICE };
#define N_MEMORY 6
enum { M_BYTES, M_TOTAL_ALLOCATED, M_TOTAL_RESERVED, M_DEVICE_TYPE, M_DEVICE_ID, M_ADDR };
#define N_KERNEL 5
enum { KN_REGISTERS, KN_SHARED_MEMORY, KN_BLOCKS_PER_SM, KN_WARPS_PER_SM, KN_OCCUPANCY };
enum { A_OTHER = -1, A_MEMORY = 10, A_KERNEL = 20, A_GRID = 30, A_BLOCK, A_DIMS, A_TYPES, A_STACK, A_NAME };

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
    {KEY("Input type"), A_TYPES},
    {KEY("Call stack"), A_STACK},
    {KEY("registers per thread"), A_KERNEL + KN_REGISTERS},
    {KEY("shared memory"), A_KERNEL + KN_SHARED_MEMORY},
    {KEY("blocks per SM"), A_KERNEL + KN_BLOCKS_PER_SM},
    {KEY("warps per SM"), A_KERNEL + KN_WARPS_PER_SM},
    {KEY("est. achieved occupancy %"), A_KERNEL + KN_OCCUPANCY},
    {KEY("grid"), A_GRID},
    {KEY("block"), A_BLOCK},
    {KEY("Bytes"), A_MEMORY + M_BYTES},
    {KEY("Total Allocated"), A_MEMORY + M_TOTAL_ALLOCATED},
    {KEY("Total Reserved"), A_MEMORY + M_TOTAL_RESERVED},
    {KEY("Device Type"), A_MEMORY + M_DEVICE_TYPE},
    {KEY("Device Id"), A_MEMORY + M_DEVICE_ID},
    {KEY("Addr"), A_MEMORY + M_ADDR},
    {KEY("name"), A_NAME},
};

#define N_ARG_KEYS (sizeof(ARG_KEYS) / sizeof(ARG_KEYS[0]))

/* Keys by length, then first byte: an event's args hold a dozen keys,
 * most of them none of these. Keys sharing both ("Input Dims" and
 * "Input type") are chained through ARG_NEXT. */
static signed char ARG_FIRST[32][128];
static signed char ARG_NEXT[N_ARG_KEYS];

/* -1 when a key is too long for the index or not ASCII-led. */
static int arg_keys_index(void) {
    memset(ARG_FIRST, -1, sizeof(ARG_FIRST));
    for (size_t i = N_ARG_KEYS; i-- > 0;) {
        if (ARG_KEYS[i].n >= 32 || (unsigned char)ARG_KEYS[i].s[0] >= 128) return -1;
        signed char *slot = &ARG_FIRST[ARG_KEYS[i].n][(unsigned char)ARG_KEYS[i].s[0]];
        ARG_NEXT[i] = *slot;
        *slot = (signed char)i;
    }
    return 0;
}

static int arg_key(cp k, size_t n) {
    if (n >= 32 || k[0] >= 128) return A_OTHER;
    for (int i = ARG_FIRST[n][k[0]]; i >= 0; i = ARG_NEXT[i])
        if (!memcmp(ARG_KEYS[i].s, k, n)) return ARG_KEYS[i].what;
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

enum { ABSENT = 0, NUL, VALUE };

typedef struct {
    span_t head[5]; /* ph, cat, name, pid, tid */
    double ts, dur;
    int64_t link[N_LINKS];
    span_t dims, types, stack, grid, block;
    span_t name;          /* args.name: a string or null */
    span_t id, bp;        /* top-level: a flow's id (int, string or null) and binding point (string) */
    int64_t memory[N_MEMORY];
    uint8_t memory_state[N_MEMORY];
    double kernel[N_KERNEL]; /* NaN: absent or null */
    int has_memory, has_kernel;
} event_t;

typedef struct {
    buf_t head, ts, dur, link[N_LINKS], dims, types, stack;
    PyObject *memory, *kernel, *flow, *meta, *new_heads, *new_raws;
} out_t;

static void out_free(out_t *o) {
    buf_t *bufs[] = {&o->head, &o->ts, &o->dur, &o->dims, &o->types, &o->stack};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++) PyMem_Free(bufs[i]->data);
    for (int i = 0; i < N_LINKS; i++) PyMem_Free(o->link[i].data);
    Py_XDECREF(o->memory);
    Py_XDECREF(o->kernel);
    Py_XDECREF(o->flow);
    Py_XDECREF(o->meta);
    Py_XDECREF(o->new_heads);
    Py_XDECREF(o->new_raws);
}

/* What the typed decode takes as the default of an absent head field. */
static const char *HEAD_DEFAULTS[5] = {"\"\"", "\"\"", "\"\"", "0", "0"};

/* An integer of at most 18 digits (what `int` fields take here; msgspec's
 * handling of longer ones, and of fractions, is left to msgspec). */
static int scan_int(cur_t *c, int64_t *out) {
    int is_int;
    cp v = c->p;
    if (scan_number(c, &is_int) < 0 || !is_int) return -1;
    return int_value(v, c->p, out);
}

/* A number as a float field takes it (integers of at most 18 digits, finite). */
static int scan_float(cur_t *c, double *out) {
    int is_int;
    cp v = c->p;
    if (scan_number(c, &is_int) < 0) return -1;
    if (is_int && c->p - v - (*v == '-') > 18) return -1;
    return number_value(v, c->p, out);
}

static inline int at_null(cur_t *c) {
    return c->p < c->end && *c->p == 'n' && skip_literal(c, "null", 4) == 0;
}

/* Opens an object: 1 when members follow, 0 when it is empty, -1 when
 * c->p is at no object. */
static int object_open(cur_t *c) {
    if (c->p >= c->end || *c->p != '{') return -1;
    c->p++;
    skip_ws(c);
    if (c->p < c->end && *c->p == '}') {
        c->p++;
        return 0;
    }
    return 1;
}

/* A member's key and the colon after it, c->p then at the value. A key
 * with an escape is refused (msgspec would match the unescaped name). */
static int object_key(cur_t *c, cp *k, size_t *kn) {
    int escaped;
    if (c->p >= c->end || *c->p != '"') return -1;
    *k = c->p + 1;
    if (scan_string(c, &escaped) < 0 || escaped) return -1;
    *kn = (size_t)(c->p - 1 - *k);
    skip_ws(c);
    if (c->p >= c->end || *c->p != ':') return -1;
    c->p++;
    skip_ws(c);
    return c->p < c->end ? 0 : -1;
}

/* After a member's value: 1 when another member follows, 0 at the
 * object's end, -1 for anything else. */
static int object_next(cur_t *c) {
    skip_ws(c);
    if (c->p >= c->end) return -1;
    if (*c->p == ',') {
        c->p++;
        skip_ws(c);
        return 1;
    }
    if (*c->p == '}') {
        c->p++;
        return 0;
    }
    return -1;
}

/* The first kernel field of an event: the others default to NaN. */
static inline void kernel_seen(event_t *ev) {
    if (ev->has_kernel) return;
    ev->has_kernel = 1;
    for (int i = 0; i < N_KERNEL; i++) ev->kernel[i] = NAN;
}

static int parse_args(cur_t *c, event_t *ev) {
    int escaped;
    int more = object_open(c);
    while (more > 0) {
        cp k;
        size_t kn;
        if (object_key(c, &k, &kn) < 0) return -1;
        int what = arg_key(k, kn);
        cp v = c->p;
        if (what >= 0 && what < N_LINKS) {
            if (at_null(c))
                ev->link[what] = NO_ID;
            else if (scan_int(c, &ev->link[what]) < 0)
                return -1;
        } else if (what >= A_MEMORY && what < A_MEMORY + N_MEMORY) {
            int m = what - A_MEMORY;
            ev->has_memory = 1;
            if (at_null(c)) {
                ev->memory_state[m] = NUL;
            } else {
                if (scan_int(c, &ev->memory[m]) < 0) return -1;
                ev->memory_state[m] = VALUE;
            }
        } else if (what >= A_KERNEL && what < A_KERNEL + N_KERNEL) {
            kernel_seen(ev);
            if (at_null(c))
                ev->kernel[what - A_KERNEL] = NAN;
            else if (scan_float(c, &ev->kernel[what - A_KERNEL]) < 0)
                return -1;
        } else if (what == A_NAME) {
            if (!at_null(c) && (*v != '"' || scan_string(c, &escaped) < 0)) return -1;
            ev->name.s = v;
            ev->name.e = c->p;
        } else {
            if (skip_value(c, 2) < 0) return -1;
            span_t sp = {v, c->p};
            if (what == A_DIMS) {
                ev->dims = sp;
            } else if (what == A_TYPES) {
                ev->types = sp;
            } else if (what == A_STACK) {
                ev->stack = sp;
            } else if (what == A_GRID) {
                ev->grid = sp;
                kernel_seen(ev);
            } else if (what == A_BLOCK) {
                ev->block = sp;
                kernel_seen(ev);
            }
        }
        more = object_next(c);
    }
    return more;
}

static int parse_event(cur_t *c, event_t *ev) {
    int escaped, is_int;
    /* Only what is read whatever the event holds (a memset of the whole
     * struct was an eighth of the scan): memory values are read where their
     * state says VALUE, kernel numbers where has_kernel is set. */
    for (int i = 0; i < 5; i++) ev->head[i].e = NULL;
    ev->dims.e = ev->types.e = ev->stack.e = ev->grid.e = ev->block.e = ev->name.e = ev->id.e = ev->bp.e = NULL;
    memset(ev->memory_state, 0, sizeof(ev->memory_state));
    ev->has_memory = ev->has_kernel = 0;
    ev->ts = ev->dur = NAN;
    for (int i = 0; i < N_LINKS; i++) ev->link[i] = NO_ID;
    int more = object_open(c);
    while (more > 0) {
        cp k;
        size_t kn;
        if (object_key(c, &k, &kn) < 0) return -1;
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
            if (scan_float(c, &ev->ts) < 0) return -1;
            break;
        case K_DUR:
            if (scan_float(c, &ev->dur) < 0) return -1;
            break;
        case K_ARGS:
            if (parse_args(c, ev) < 0) return -1;
            break;
        case K_ID:
            /* An escaped string id is left to msgspec (its text would need unescaping here). */
            if (*v == '"') {
                if (scan_string(c, &escaped) < 0 || escaped) return -1;
            } else if (!at_null(c)) {
                int64_t ignored;
                if (scan_int(c, &ignored) < 0) return -1;
            }
            ev->id.s = v;
            ev->id.e = c->p;
            break;
        case K_BP:
            if (*v != '"' || scan_string(c, &escaped) < 0 || escaped) return -1;
            ev->bp.s = v;
            ev->bp.e = c->p;
            break;
        default:
            if (skip_value(c, 1) < 0) return -1;
        }
        more = object_next(c);
    }
    return more;
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

static int append_new(PyObject *list, PyObject *item) {
    if (!item) return -1;
    int r = PyList_Append(list, item);
    Py_DECREF(item);
    return r;
}

/* The memory fields as the schema gives them: None absent or null, but
 * `Addr` absent is NO_ID (its default). */
static PyObject *memory_tuple(const event_t *ev, int64_t ordinal) {
    PyObject *t = PyTuple_New(1 + N_MEMORY);
    if (!t) return NULL;
    PyObject *o = PyLong_FromLongLong(ordinal);
    if (!o) goto fail;
    PyTuple_SET_ITEM(t, 0, o);
    for (int m = 0; m < N_MEMORY; m++) {
        PyObject *v;
        if (ev->memory_state[m] == VALUE) {
            v = PyLong_FromLongLong(ev->memory[m]);
        } else if (m == M_ADDR && ev->memory_state[m] == ABSENT) {
            v = PyLong_FromLong(NO_ID);
        } else {
            v = Py_None;
            Py_INCREF(v);
        }
        if (!v) goto fail;
        PyTuple_SET_ITEM(t, 1 + m, v);
    }
    return t;
fail:
    Py_DECREF(t);
    return NULL;
}

static PyObject *flow_id(span_t id) {
    if (!id.e || *id.s == 'n') Py_RETURN_NONE;
    if (*id.s == '"') return PyUnicode_DecodeUTF8((const char *)id.s + 1, id.e - id.s - 2, "strict");
    int64_t v = 0;
    int_value(id.s, id.e, &v); /* validated by parse_event */
    return PyLong_FromLongLong(v);
}

enum { OK = 0, REFUSED = 1, FAILED = -1 };

static int emit(Scanner *self, const event_t *ev, int64_t ordinal, out_t *o) {
    unsigned char key[4096];
    size_t kn = head_key(ev, key, sizeof(key));
    if (!kn) return REFUSED; /* a head this long is not worth a fast path */
    int is_new;
    int32_t head = intern_id(&self->heads, key, kn, &is_new);
    if (head < 0) return FAILED;
    if (is_new && append_new(o->new_heads, head_tuple(key)) < 0) return FAILED;
    int32_t dims, types, stack;
    if (raw_id(self, ev->dims, o, &dims) < 0 || raw_id(self, ev->types, o, &types) < 0 ||
        raw_id(self, ev->stack, o, &stack) < 0)
        return FAILED;
    if (buf_put(&o->head, &head, 4) < 0 || buf_put(&o->ts, &ev->ts, 8) < 0 || buf_put(&o->dur, &ev->dur, 8) < 0 ||
        buf_put(&o->dims, &dims, 4) < 0 || buf_put(&o->types, &types, 4) < 0 || buf_put(&o->stack, &stack, 4) < 0)
        return FAILED;
    for (int i = 0; i < N_LINKS; i++)
        if (buf_put(&o->link[i], &ev->link[i], 8) < 0) return FAILED;
    /* The sparse fields, only for the events that carry them. */
    if (ev->has_memory && append_new(o->memory, memory_tuple(ev, ordinal)) < 0) return FAILED;
    if (ev->has_kernel) {
        int32_t grid, block;
        if (raw_id(self, ev->grid, o, &grid) < 0 || raw_id(self, ev->block, o, &block) < 0) return FAILED;
        PyObject *t = Py_BuildValue("(Liiddddd)", (long long)ordinal, grid, block, ev->kernel[0], ev->kernel[1],
                                    ev->kernel[2], ev->kernel[3], ev->kernel[4]);
        if (append_new(o->kernel, t) < 0) return FAILED;
    }
    if (ev->id.e || ev->bp.e) {
        PyObject *id = flow_id(ev->id);
        if (!id) return FAILED; /* invalid UTF-8 was refused by scan_string: only memory can fail here */
        int binds_enclosing = ev->bp.e && ev->bp.e - ev->bp.s == 3 && ev->bp.s[1] == 'e';
        PyObject *t = Py_BuildValue("(LNO)", (long long)ordinal, id, binds_enclosing ? Py_True : Py_False);
        if (append_new(o->flow, t) < 0) return FAILED;
    }
    if (ev->name.e) {
        PyObject *t = Py_BuildValue("(Ly#)", (long long)ordinal, (const char *)ev->name.s,
                                    (Py_ssize_t)(ev->name.e - ev->name.s));
        if (append_new(o->meta, t) < 0) return FAILED;
    }
    return OK;
}

static PyObject *bytes_of(buf_t *b) { return PyBytes_FromStringAndSize(b->data ? b->data : "", (Py_ssize_t)b->len); }

PyDoc_STRVAR(scan_doc,
"scan(data, start, end) -> tuple or None\n\n"
"The events in data[start:end] (events separated by commas, as a chunk of\n"
"the event array; a trailing comma allowed). None when the chunk holds\n"
"anything the scanner does not take. Else (count, heads, ts, dur, links,\n"
"dims, types, stacks, memory, kernels, flows, meta, new_heads, new_raws). As\n"
"bytes of native arrays, one value an event: int32 head ids, float64 ts and\n"
"dur (NaN absent), 6*count int64 link ids (field-major, NO_ID absent or\n"
"null), int32 raw ids of Input Dims, Input type and Call stack (-1 absent).\n"
"As lists of tuples, for the events that carry them, each led by the event's\n"
"ordinal:\n"
"memory (the six fields, None absent or null), kernels (grid and block raw\n"
"ids, five numbers, NaN absent or null), flows (id: int, str or None;\n"
"whether bp is \"e\"), meta (args.name's JSON text). Then the heads\n"
"(5-tuples of the fields' JSON texts) and raw texts met for the first\n"
"time, in order.");

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
    PyObject *result = NULL;
    int status = OK;
    int64_t count = 0;
    size_t heads_before = self->heads.count, raws_before = self->raws.count;
    o.memory = PyList_New(0);
    o.kernel = PyList_New(0);
    o.flow = PyList_New(0);
    o.meta = PyList_New(0);
    o.new_heads = PyList_New(0);
    o.new_raws = PyList_New(0);
    if (!o.memory || !o.kernel || !o.flow || !o.meta || !o.new_heads || !o.new_raws) goto done;
    skip_ws(&c);
    if (c.p < c.end) {
        for (;;) {
            event_t ev;
            if (parse_event(&c, &ev) < 0) {
                status = REFUSED;
                break;
            }
            status = emit(self, &ev, count, &o);
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
        intern_truncate(&self->heads, heads_before);
        intern_truncate(&self->raws, raws_before);
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
        result = Py_BuildValue("(LNNNNNNNOOOOOO)", (long long)count, bytes_of(&o.head), bytes_of(&o.ts),
                               bytes_of(&o.dur), links, bytes_of(&o.dims), bytes_of(&o.types), bytes_of(&o.stack),
                               o.memory, o.kernel,
                               o.flow, o.meta, o.new_heads, o.new_raws);
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
    if (arg_keys_index() < 0) {
        PyErr_SetString(PyExc_ImportError, "_scan: an Args key too long or not ASCII-led for the index");
        return NULL;
    }
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
