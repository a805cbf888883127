/* ncclctl.fabric._fastread: the lean ibnetdiscover reader (ncclctl/fabric/lean.py) in C.
 *
 * Optional: setup.py builds it when a C compiler and the Python headers are there, and lean.py falls back to its
 * pure-Python readers when the module is absent (or NCCLCTL_PURE_PYTHON is set). Both accept exactly the same
 * inputs and build the same graph; tests/fabric/test_fabric_lean.py runs every case through both.
 *
 * Semantics (the contract of lean._topology and lean._ports): the text is one tool's plain output, in ASCII (the
 * caller checks that and the odd control characters). Any line outside the tool's exact layout, any inconsistency
 * the fast path does not handle, returns None: the general parser then reads the file and reports what is wrong.
 * Nothing here raises on bad input; only MemoryError (or another Python error from the callbacks) propagates.
 *
 * Hostile input: every read is bounded by the text's end (lines are found with memchr, fields are scanned with
 * explicit limits), numbers have at most 9 digits, GUIDs at most 16 hex digits, and the only memory grown per
 * line is the output (Python objects) and one hash-table slot per distinct GUID.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdarg.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------------------------ */
/* A GUID table: the 64-bit value -> its one string object ("%016llx") and what the file described it as. */

#define F_HCA 1
#define F_SWITCH 2

typedef struct {
    uint64_t key;
    PyObject *str; /* NULL: slot unused */
    int flags;
} gslot;

typedef struct {
    gslot *slots;
    size_t mask;
    size_t used;
} gtable;

static uint64_t mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static int gt_init(gtable *t) {
    t->mask = 1023;
    t->used = 0;
    t->slots = PyMem_Calloc(t->mask + 1, sizeof(gslot));
    if (t->slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static void gt_free(gtable *t) {
    if (t->slots == NULL) return;
    for (size_t i = 0; i <= t->mask; i++) Py_XDECREF(t->slots[i].str);
    PyMem_Free(t->slots);
    t->slots = NULL;
}

static int gt_grow(gtable *t) {
    size_t nmask = t->mask * 2 + 1;
    gslot *ns = PyMem_Calloc(nmask + 1, sizeof(gslot));
    if (ns == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i <= t->mask; i++) {
        if (t->slots[i].str == NULL) continue;
        size_t j = (size_t)mix64(t->slots[i].key) & nmask;
        while (ns[j].str != NULL) j = (j + 1) & nmask;
        ns[j] = t->slots[i];
    }
    PyMem_Free(t->slots);
    t->slots = ns;
    t->mask = nmask;
    return 0;
}

/* The slot of ``key``, created (with its string) when new; NULL with an exception set on memory errors. The slot
 * is valid until the next gt_get (which may grow the table and move every slot): callers keep the string, which
 * lives as long as the table. */
static gslot *gt_get(gtable *t, uint64_t key) {
    size_t j = (size_t)mix64(key) & t->mask;
    while (t->slots[j].str != NULL) {
        if (t->slots[j].key == key) return &t->slots[j];
        j = (j + 1) & t->mask;
    }
    if ((t->used + 1) * 2 > t->mask) {
        if (gt_grow(t) < 0) return NULL;
        return gt_get(t, key);
    }
    char buf[17];
    static const char hexd[] = "0123456789abcdef";
    for (int i = 15; i >= 0; i--) buf[15 - i] = hexd[(key >> (4 * i)) & 15];
    PyObject *s = PyUnicode_FromStringAndSize(buf, 16);
    if (s == NULL) return NULL;
    t->slots[j].key = key;
    t->slots[j].str = s;
    t->slots[j].flags = 0;
    t->used++;
    return &t->slots[j];
}

/* ------------------------------------------------------------------------------------------------------------ */
/* Width/speed -> (width, speed, rate): a handful of distinct values per fabric. */

#define RMAX 32

typedef struct {
    char w[4];
    int wl;
    char s[16];
    int sl;
    PyObject *wobj, *sobj, *triple; /* triple: (width, speed, rate) */
} rslot;

typedef struct {
    rslot r[RMAX];
    int n;
    PyObject *lanes, *rate;
} rcache;

static void rc_free(rcache *c) {
    for (int i = 0; i < c->n; i++) {
        Py_DECREF(c->r[i].wobj);
        Py_DECREF(c->r[i].sobj);
        Py_DECREF(c->r[i].triple);
    }
    c->n = 0;
}

/* The entry of (width, speed): 1 found/created, 0 the speed is not an IB lane speed (or too many distinct
 * values: the Python reader takes the file), -1 error. ``w`` may be empty (width not known, -p "??"): the entry
 * then serves only the lane check of the speed. */
static int rc_get(rcache *c, const char *w, int wl, const char *s, int sl, rslot **out) {
    for (int i = 0; i < c->n; i++) {
        rslot *r = &c->r[i];
        if (r->wl == wl && r->sl == sl && memcmp(r->w, w, wl) == 0 && memcmp(r->s, s, sl) == 0) {
            *out = r;
            return 1;
        }
    }
    if (c->n == RMAX || wl > 3 || sl > 15) return 0;
    PyObject *so = PyUnicode_FromStringAndSize(s, sl);
    if (so == NULL) return -1;
    int in = PySequence_Contains(c->lanes, so);
    if (in <= 0) {
        Py_DECREF(so);
        return in;
    }
    PyObject *wo = PyUnicode_FromStringAndSize(w, wl);
    if (wo == NULL) {
        Py_DECREF(so);
        return -1;
    }
    /* no width ("??"): the entry only vouches for the speed */
    PyObject *rate = wl ? PyObject_CallFunctionObjArgs(c->rate, wo, so, NULL) : Py_NewRef(Py_None);
    if (rate == NULL) {
        Py_DECREF(so);
        Py_DECREF(wo);
        return -1;
    }
    PyObject *triple = PyTuple_Pack(3, wo, so, rate);
    Py_DECREF(rate);
    if (triple == NULL) {
        Py_DECREF(so);
        Py_DECREF(wo);
        return -1;
    }
    rslot *r = &c->r[c->n++];
    memcpy(r->w, w, wl);
    r->wl = wl;
    memcpy(r->s, s, sl);
    r->sl = sl;
    r->wobj = wo;
    r->sobj = so;
    r->triple = triple;
    *out = r;
    return 1;
}

/* ------------------------------------------------------------------------------------------------------------ */
/* Scanning helpers: each takes the cursor and the line's end, advances on success, returns 0 on mismatch. */

static int lit(const char **p, const char *e, const char *s, size_t n) {
    if ((size_t)(e - *p) < n || memcmp(*p, s, n) != 0) return 0;
    *p += n;
    return 1;
}

/* [0-9]{1,maxd}, not followed by another digit when ``strict`` (a longer run does not match at all) */
static int digits(const char **p, const char *e, int maxd, long *out) {
    const char *q = *p;
    long v = 0;
    int n = 0;
    while (q < e && *q >= '0' && *q <= '9') {
        if (++n > maxd) return 0;
        v = v * 10 + (*q - '0');
        q++;
    }
    if (n == 0) return 0;
    *p = q;
    *out = v;
    return 1;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* hex digits (lower case only when ``lower``), between ``mind`` and ``maxd`` of them, not followed by another */
static int hexrun(const char **p, const char *e, int mind, int maxd, int lower, uint64_t *out) {
    const char *q = *p;
    uint64_t v = 0;
    int n = 0;
    while (q < e) {
        int d = hexval(*q);
        if (d < 0 || (lower && *q >= 'A' && *q <= 'F')) break;
        if (++n > maxd) return 0;
        v = (v << 4) | (uint64_t)d;
        q++;
    }
    if (n < mind) return 0;
    *p = q;
    *out = v;
    return 1;
}

/* [ \t]{lo,hi} (the whole run must fit) */
static int blanks(const char **p, const char *e, int lo, int hi) {
    const char *q = *p;
    int n = 0;
    while (q < e && (*q == ' ' || *q == '\t')) {
        q++;
        n++;
    }
    if (n < lo || n > hi) return 0;
    *p = q;
    return 1;
}

static int is_word(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

/* The claims of both ends of the links: equal sums (mod 2^64) when every link is listed the same from both.
 *
 * Each claim (guid, port, remote guid, remote port) is fingerprinted with SipHash-1-3 (CPython's string hash)
 * under a key drawn from os.urandom when the module is loaded (claim_key): a file cannot choose GUIDs whose
 * fingerprints cancel, since it cannot know them. (An unkeyed, invertible mix let a forged file make two one-sided links cancel: a switch
 * port claiming an HCA that claims another port, with the HCA's GUID solved for.) */
static uint64_t claim_key[2];

#define ROTL64(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                                                                  \
    do {                                                                                                          \
        v0 += v1; v1 = ROTL64(v1, 13); v1 ^= v0; v0 = ROTL64(v0, 32);                                             \
        v2 += v3; v3 = ROTL64(v3, 16); v3 ^= v2;                                                                  \
        v0 += v3; v3 = ROTL64(v3, 21); v3 ^= v0;                                                                  \
        v2 += v1; v1 = ROTL64(v1, 17); v1 ^= v2; v2 = ROTL64(v2, 32);                                             \
    } while (0)

static uint64_t claim(uint64_t a, long pa, uint64_t b, long pb) {
    uint64_t v0 = claim_key[0] ^ 0x736f6d6570736575ULL, v1 = claim_key[1] ^ 0x646f72616e646f6dULL;
    uint64_t v2 = claim_key[0] ^ 0x6c7967656e657261ULL, v3 = claim_key[1] ^ 0x7465646279746573ULL;
    const uint64_t m[3] = {a, b, ((uint64_t)(uint32_t)pa << 32) | (uint64_t)(uint32_t)pb}; /* ports < 2^30 */
    for (int i = 0; i < 3; i++) {
        v3 ^= m[i];
        SIPROUND;
        v0 ^= m[i];
    }
    const uint64_t last = (uint64_t)24 << 56; /* the message length, 24 bytes */
    v3 ^= last;
    SIPROUND;
    v0 ^= last;
    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

/* A tuple of ``n`` new references (stolen, also on failure); NULL when one is NULL or on memory errors. Faster
 * than Py_BuildValue, which parses its format on every call (hundreds of thousands of calls here). */
static PyObject *pack(Py_ssize_t n, ...) {
    va_list ap;
    PyObject *items[8];
    int bad = 0;
    va_start(ap, n);
    for (Py_ssize_t i = 0; i < n; i++) {
        items[i] = va_arg(ap, PyObject *);
        if (items[i] == NULL) bad = 1;
    }
    va_end(ap);
    PyObject *t = bad ? NULL : PyTuple_New(n);
    if (t == NULL) {
        for (Py_ssize_t i = 0; i < n; i++) Py_XDECREF(items[i]);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) PyTuple_SET_ITEM(t, i, items[i]);
    return t;
}

#define NEW(o) Py_NewRef(o)
#define INT(v) PyLong_FromLong(v)

/* Python object helpers: append / set with the reference stolen */
static int append_steal(PyObject *list, PyObject *o) {
    if (o == NULL) return -1;
    int r = PyList_Append(list, o);
    Py_DECREF(o);
    return r;
}

static int setitem_steal(PyObject *d, PyObject *k, PyObject *v) {
    if (k == NULL || v == NULL) {
        Py_XDECREF(k);
        Py_XDECREF(v);
        return -1;
    }
    int r = PyDict_SetItem(d, k, v);
    Py_DECREF(k);
    Py_DECREF(v);
    return r;
}

/* ------------------------------------------------------------------------------------------------------------ */
/* The topology form (lean._topology): node lines, link lines after them, attribute/comment/blank lines between. */

typedef struct {
    gtable gt;
    rcache rc;
    PyObject *hcas, *hca_links, *switch_links;
    PyObject *switch_rows, *sysimgs;
    PyObject *port_tuples[256]; /* the shared (1..n) tuple of an HCA with n ports */
    long ca_claims, sw_claims, fwd, bwd;
    uint64_t acc_ca, acc_sw;
} state;

static int st_init(state *st, PyObject *lanes, PyObject *rate, PyObject *hcas, PyObject *hca_links,
                   PyObject *switch_links) {
    memset(st, 0, sizeof(*st));
    st->rc.lanes = lanes;
    st->rc.rate = rate;
    st->hcas = hcas;
    st->hca_links = hca_links;
    st->switch_links = switch_links;
    if (gt_init(&st->gt) < 0) return -1;
    st->switch_rows = PyList_New(0);
    st->sysimgs = PyList_New(0);
    if (st->switch_rows == NULL || st->sysimgs == NULL) return -1;
    return 0;
}

static void st_free(state *st) {
    gt_free(&st->gt);
    rc_free(&st->rc);
    Py_XDECREF(st->switch_rows);
    Py_XDECREF(st->sysimgs);
    for (int i = 0; i < 256; i++) Py_XDECREF(st->port_tuples[i]);
}

/* (switch_rows, ca_claims, sw_claims, fwd, bwd, sums_agree, sysimgs) */
static PyObject *st_result(state *st) {
    return Py_BuildValue("(OllllOO)", st->switch_rows, st->ca_claims, st->sw_claims, st->fwd, st->bwd,
                         (st->acc_ca == 0 && st->acc_sw == 0) ? Py_True : Py_False, st->sysimgs);
}

enum { PRE, LINKS, REST };

/* a link line's fields (lean._LINK_SW / _LINK_CA) */
typedef struct {
    long port, rport;
    char rk;
    uint64_t rguid;
    const char *w, *s;
    int wl, sl;
} tlink;

/* `# "desc" lid N ` ... `WxSPEED` EOL: the tail both link patterns end with */
static int link_tail(const char *p, const char *e, tlink *l) {
    long v;
    if (!lit(&p, e, "\"", 1)) return 0;
    const char *q = p;
    while (q < e && *q != '"' && *q != '\t') q++;
    if (q >= e || *q != '"') return 0;
    p = q + 1;
    if (!lit(&p, e, " lid ", 5) || !digits(&p, e, 9, &v) || !lit(&p, e, " ", 1)) return 0;
    l->w = p;
    if (!digits(&p, e, 2, &v) || !lit(&p, e, "x", 1)) return 0;
    l->wl = (int)(p - l->w);
    l->s = p;
    while (p < e && is_word(*p)) p++;
    l->sl = (int)(p - l->s);
    return l->sl > 0 && p == e;
}

/* the far end, `[SHR]-<16 hex>"[port]` (after the opening quote) */
static int remote_end(const char **p, const char *e, tlink *l) {
    if (*p >= e || (**p != 'S' && **p != 'H' && **p != 'R')) return 0;
    l->rk = *(*p)++;
    return lit(p, e, "-", 1) && hexrun(p, e, 16, 16, 1, &l->rguid) && lit(p, e, "\"[", 2)
           && digits(p, e, 9, &l->rport) && lit(p, e, "]", 1);
}

static int link_sw(const char *p, const char *e, tlink *l) {
    uint64_t g;
    if (!lit(&p, e, "[", 1) || !digits(&p, e, 9, &l->port) || !lit(&p, e, "]\t\"", 3) || !remote_end(&p, e, l))
        return 0;
    if (p < e && *p == '(') {
        p++;
        if (!hexrun(&p, e, 1, 16, 1, &g) || !lit(&p, e, ") ", 2)) return 0;
    }
    if (!lit(&p, e, "\t\t# ", 4)) return 0;
    return link_tail(p, e, l);
}

static int link_ca(const char *p, const char *e, tlink *l) {
    uint64_t g;
    long v;
    if (!lit(&p, e, "[", 1) || !digits(&p, e, 9, &l->port) || !lit(&p, e, "](", 2) || !hexrun(&p, e, 1, 16, 1, &g)
        || !lit(&p, e, ") \t\"", 4) || !remote_end(&p, e, l))
        return 0;
    if (!lit(&p, e, "\t\t# lid ", 8) || !digits(&p, e, 9, &v) || !lit(&p, e, " lmc ", 5) || !digits(&p, e, 9, &v)
        || !lit(&p, e, " ", 1))
        return 0;
    return link_tail(p, e, l);
}

/* lean._NODE: (Switch|Ca|Rt)\t([0-9]{1,9}) "[SHR]-([0-9a-f]{16})"\t\t# "([^"\t\n]*)"([^\t\n]*) EOL */
typedef struct {
    char kind; /* 'S' 'C' 'R' */
    long nports;
    uint64_t guid;
    const char *desc, *rest;
    int dl, rl;
} tnode;

static int node_line(const char *p, const char *e, tnode *n) {
    if (lit(&p, e, "Switch\t", 7))
        n->kind = 'S';
    else if (lit(&p, e, "Ca\t", 3))
        n->kind = 'C';
    else if (lit(&p, e, "Rt\t", 3))
        n->kind = 'R';
    else
        return 0;
    if (!digits(&p, e, 9, &n->nports) || !lit(&p, e, " \"", 2)) return 0;
    if (p >= e || (*p != 'S' && *p != 'H' && *p != 'R')) return 0;
    p++;
    if (!lit(&p, e, "-", 1) || !hexrun(&p, e, 16, 16, 1, &n->guid) || !lit(&p, e, "\"\t\t# \"", 6)) return 0;
    n->desc = p;
    while (p < e && *p != '"' && *p != '\t') p++;
    if (p >= e || *p != '"') return 0;
    n->dl = (int)(p - n->desc);
    p++;
    n->rest = p;
    while (p < e && *p != '\t') p++;
    if (p != e) return 0;
    n->rl = (int)(p - n->rest);
    return 1;
}

/* _SW_EXTRA.search(rest): the LID of the first "port\s+0\s+lid\s+(\d{1,9})\s+lmc\s+\d{1,9}(?!\d)"; -1 none.
 * (The rest holds no TAB or newline, and the caller refused the other \s characters: \s is a space here.) */
/* \s+ (a space here): 1 when at least one was skipped */
static int spaces(const char **p, const char *e) {
    const char *q = *p;
    while (q < e && *q == ' ') q++;
    if (q == *p) return 0;
    *p = q;
    return 1;
}

static long switch_lid(const char *r, int rl) {
    const char *e = r + rl;
    for (const char *s = r; s + 4 <= e; s++) {
        if (memcmp(s, "port", 4) != 0) continue;
        const char *p = s + 4;
        long lid, v;
        if (!spaces(&p, e) || !lit(&p, e, "0", 1) || !spaces(&p, e) || !lit(&p, e, "lid", 3) || !spaces(&p, e)
            || !digits(&p, e, 9, &lid) || !spaces(&p, e) || !lit(&p, e, "lmc", 3) || !spaces(&p, e)
            || !digits(&p, e, 9, &v))
            continue;
        return lid;
    }
    return -1;
}

/* lean's rest lines: blank, comment, attribute, or sysimgguid=0x<hex>; 1 ok, 0 not one. ``sysimg`` is set to the
 * normalised value of a sysimgguid line (a new string). */
static int rest_line(const char *p, const char *e, PyObject **sysimg) {
    if (p == e || *p == '#') return 1;
    static const char *attrs[] = {"vendid=", "devid=", "switchguid=", "caguid=", "rtguid="};
    for (int i = 0; i < 5; i++) {
        size_t n = strlen(attrs[i]);
        if ((size_t)(e - p) >= n && memcmp(p, attrs[i], n) == 0) return 1;
    }
    if (!lit(&p, e, "sysimgguid=0x", 13)) return 0;
    const char *h = p;
    while (p < e && hexval(*p) >= 0) p++;
    if (p == h || p != e) return 0;
    /* lower().rjust(16, "0"): any length (a longer value is kept whole, and matches no GUID) */
    Py_ssize_t n = e - h, w = n < 16 ? 16 : n;
    PyObject *s = PyUnicode_New(w, 127);
    if (s == NULL) return -1;
    Py_UCS1 *d = PyUnicode_1BYTE_DATA(s);
    Py_ssize_t pad = w - n;
    memset(d, '0', pad);
    for (Py_ssize_t i = 0; i < n; i++) d[pad + i] = (Py_UCS1)((h[i] >= 'A' && h[i] <= 'F') ? h[i] + 32 : h[i]);
    Py_XSETREF(*sysimg, s);
    return 1;
}

static PyObject *port_tuple(state *st, long n) {
    if (st->port_tuples[n] == NULL) {
        PyObject *t = PyTuple_New(n);
        if (t == NULL) return NULL;
        for (long i = 0; i < n; i++) {
            PyObject *v = PyLong_FromLong(i + 1);
            if (v == NULL) {
                Py_DECREF(t);
                return NULL;
            }
            PyTuple_SET_ITEM(t, i, v);
        }
        st->port_tuples[n] = t;
    }
    return st->port_tuples[n];
}

#define FAIL_NONE 0
#define FAIL_ERR (-1)

/* One pass over the lines; 1 accepted, 0 not the fast layout, -1 error. */
static int topology_pass(state *st, const char *text, Py_ssize_t len) {
    const char *p = text, *end = text + len;
    long lineno = 0;
    int phase = PRE;
    tnode cur = {0};
    PyObject *cur_str = NULL; /* the node's GUID string (borrowed from the table: its slots move when it grows) */
    PyObject *sysimg = NULL; /* from the attribute lines before the next node */
    int any_node = 0;
    int rc = 1;
    for (;;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end;
        lineno++;
        tnode n;
        tlink l;
        if (node_line(p, e, &n)) {
            int ca = n.kind == 'C';
            if (ca && n.nports > 255) goto none;
            gslot *g = gt_get(&st->gt, n.guid);
            if (g == NULL) goto err;
            if (g->flags) goto none; /* described twice */
            g->flags = ca ? F_HCA : F_SWITCH;
            any_node = 1;
            cur = n;
            cur_str = g->str;
            PyObject *desc = PyUnicode_FromStringAndSize(n.desc, n.dl);
            if (desc == NULL) goto err;
            if (ca) {
                PyObject *pt = port_tuple(st, n.nports);
                if (pt == NULL) {
                    Py_DECREF(desc);
                    goto err;
                }
                PyObject *v = pack(3, desc, NEW(pt), INT(lineno));
                Py_INCREF(g->str);
                if (setitem_steal(st->hcas, g->str, v) < 0) goto err;
                if (sysimg != NULL && PyUnicode_Compare(sysimg, g->str) != 0) {
                    if (append_steal(st->sysimgs, PyTuple_Pack(2, g->str, sysimg)) < 0) goto err;
                }
            } else {
                long lid = n.kind == 'S' && n.rl ? switch_lid(n.rest, n.rl) : -1;
                PyObject *lido = lid < 0 ? Py_NewRef(Py_None) : PyLong_FromLong(lid);
                if (lido == NULL) {
                    Py_DECREF(desc);
                    goto err;
                }
                if (append_steal(st->switch_rows, pack(6, NEW(g->str), desc, INT(n.nports), INT(lineno), lido,
                                                       PyUnicode_FromString(n.kind == 'S' ? "switch" : "router"))) < 0)
                    goto err;
            }
            Py_CLEAR(sysimg);
            phase = LINKS;
        } else if (phase == LINKS && p < e && *p == '[') {
            if (!(cur.kind == 'S' ? link_sw(p, e, &l) : link_ca(p, e, &l))) goto none;
            rslot *r;
            int k = rc_get(&st->rc, l.w, l.wl, l.s, l.sl, &r);
            if (k < 0) goto err;
            if (k == 0) goto none;
            if (cur.nports && l.port > cur.nports + 64) goto none;
            if (cur.kind == 'C') {
                if (l.rk == 'H') goto none;
                gslot *rg = gt_get(&st->gt, l.rguid);
                if (rg == NULL) goto err;
                st->ca_claims++;
                st->acc_ca += claim(cur.guid, l.port, l.rguid, l.rport);
                PyObject *key = pack(2, NEW(cur_str), INT(l.port));
                PyObject *val = pack(6, NEW(rg->str), INT(l.rport), NEW(r->wobj), NEW(r->sobj),
                                     NEW(PyTuple_GET_ITEM(r->triple, 2)), INT(lineno));
                if (setitem_steal(st->hca_links, key, val) < 0) goto err;
            } else if (l.rk == 'H') {
                st->sw_claims++;
                st->acc_ca -= claim(l.rguid, l.rport, cur.guid, l.port);
            } else if (cur.guid < l.rguid || (cur.guid == l.rguid && l.port < l.rport)) {
                gslot *rg = gt_get(&st->gt, l.rguid);
                if (rg == NULL) goto err;
                st->fwd++;
                st->acc_sw += claim(cur.guid, l.port, l.rguid, l.rport);
                if (append_steal(st->switch_links,
                                 pack(8, NEW(cur_str), INT(l.port), NEW(rg->str), INT(l.rport), NEW(r->wobj), NEW(r->sobj),
                                      NEW(PyTuple_GET_ITEM(r->triple, 2)), INT(lineno))) < 0)
                    goto err;
            } else {
                st->bwd++;
                st->acc_sw -= claim(l.rguid, l.rport, cur.guid, l.port);
            }
        } else {
            int k = rest_line(p, e, &sysimg);
            if (k < 0) goto err;
            if (k == 0) goto none;
            phase = REST;
        }
        if (nl == NULL) break;
        p = nl + 1;
    }
    if (!any_node) goto none;
    goto done;
none:
    rc = FAIL_NONE;
    goto done;
err:
    rc = FAIL_ERR;
done:
    Py_XDECREF(sysimg);
    return rc;
}

typedef int (*pass_fn)(state *, const char *, Py_ssize_t);

/* reader(text, lanes, rate, hcas, hca_links, switch_links): text is bytes (or any buffer) or str, in ASCII (the
 * caller checked; anything else is refused here too) */
static PyObject *run_pass(PyObject *args, pass_fn fn) {
    Py_buffer buf;
    PyObject *lanes, *rate, *hcas, *hca_links, *switch_links;
    if (!PyArg_ParseTuple(args, "s*OOO!O!O!", &buf, &lanes, &rate, &PyDict_Type, &hcas, &PyDict_Type, &hca_links,
                          &PyList_Type, &switch_links))
        return NULL;
    const unsigned char *b = buf.buf;
    uint64_t high = 0; /* the ASCII check, a word at a time */
    Py_ssize_t i = 0;
    for (; i + 8 <= buf.len; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        high |= w;
    }
    for (; i < buf.len; i++) high |= b[i];
    if (high & 0x8080808080808080ULL) {
        PyBuffer_Release(&buf);
        Py_RETURN_NONE;
    }
    state st;
    PyObject *res = NULL;
    if (st_init(&st, lanes, rate, hcas, hca_links, switch_links) == 0) {
        int k = fn(&st, (const char *)buf.buf, buf.len);
        if (k > 0)
            res = st_result(&st);
        else if (k == 0)
            res = Py_NewRef(Py_None);
    }
    st_free(&st);
    PyBuffer_Release(&buf);
    return res;
}

static PyObject *fast_topology(PyObject *self, PyObject *args) { return run_pass(args, topology_pass); }

/* ------------------------------------------------------------------------------------------------------------ */
/* The ports form (lean._ports / lean._PLINE): one line per port, a node's lines consecutive. */

typedef struct {
    char kind, rkind; /* 'S' 'C' 'R'; rkind 0: no link */
    long lid, port, rport;
    uint64_t guid, rguid;
    const char *graw; /* the GUID as written (a node's lines must spell it the same) */
    int grl;
    const char *w, *s; /* NULL: "??" / "???" */
    int wl, sl;
    const char *desc; /* the local description (linked: the first quoted one), NULL none */
    int dl;
} pline;

static int pkind(const char **p, const char *e, char *k) {
    if (lit(p, e, "SW", 2))
        *k = 'S';
    else if (lit(p, e, "CA", 2))
        *k = 'C';
    else if (lit(p, e, "RT", 2))
        *k = 'R';
    else
        return 0;
    return 1;
}

/* '[^'\n]{0,64}' : a quoted description */
static int quoted(const char **p, const char *e, const char **s, int *n) {
    if (!lit(p, e, "'", 1)) return 0;
    const char *q = *p;
    while (q < e && *q != '\'') q++;
    if (q >= e || q - *p > 64) return 0;
    *s = *p;
    *n = (int)(q - *p);
    *p = q + 1;
    return 1;
}

static int ports_line(const char *p, const char *e, pline *l) {
    uint64_t g;
    long v;
    const char *d2;
    int d2l;
#define W(p) blanks(&p, e, 1, 30)
    if (!blanks(&p, e, 0, 30) || !pkind(&p, e, &l->kind) || !W(p) || !digits(&p, e, 9, &l->lid) || !W(p)
        || !digits(&p, e, 9, &l->port) || !W(p) || !lit(&p, e, "0x", 2))
        return 0;
    l->graw = p;
    if (!hexrun(&p, e, 1, 16, 0, &l->guid)) return 0;
    l->grl = (int)(p - l->graw);
    if (!W(p)) return 0;
    if (lit(&p, e, "??", 2))
        l->w = NULL;
    else {
        l->w = p;
        if (!digits(&p, e, 2, &v) || !lit(&p, e, "x", 1)) return 0;
        l->wl = (int)(p - l->w);
    }
    if (!W(p)) return 0;
    if (lit(&p, e, "???", 3))
        l->s = NULL;
    else {
        l->s = p;
        while (p < e && is_word(*p) && p - l->s < 11) p++;
        l->sl = (int)(p - l->s);
        if (l->sl < 1 || l->sl > 10) return 0;
    }
    l->rkind = 0;
    l->desc = NULL;
    const char *b = p;
    while (p < e && (*p == ' ' || *p == '\t')) p++;
    long nb = p - b;
    if (p < e && *p == '-') {
        if (nb < 1 || nb > 30) return 0;
        p++;
        if (!W(p) || !pkind(&p, e, &l->rkind) || !W(p) || !digits(&p, e, 9, &v) || !W(p)
            || !digits(&p, e, 9, &l->rport) || !W(p) || !lit(&p, e, "0x", 2) || !hexrun(&p, e, 1, 16, 0, &g)
            || !W(p) || !lit(&p, e, "(", 1) || !blanks(&p, e, 0, 30) || !quoted(&p, e, &l->desc, &l->dl) || !W(p)
            || !lit(&p, e, "-", 1) || !W(p) || !quoted(&p, e, &d2, &d2l) || !blanks(&p, e, 0, 30)
            || !lit(&p, e, ")", 1))
            return 0;
        l->rguid = g;
    } else if (p < e && *p == '\'') {
        if (nb < 1 || nb > 64 || !quoted(&p, e, &l->desc, &l->dl)) return 0;
    } else {
        p = b; /* no remote and no description: only blanks may follow */
    }
#undef W
    return blanks(&p, e, 0, 30) && p == e;
}

typedef struct {
    int open;
    char kind;
    PyObject *str; /* its GUID string, borrowed from the GUID table (whose slots move when it grows) */
    const char *graw;
    int grl;
    long nports, lid, line;
    PyObject *desc; /* NULL: none yet */
    long *unlinked;
    Py_ssize_t nun, cap;
} pnode;

static int cmp_long(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

static int finish_node(state *st, pnode *c) {
    PyObject *desc = c->desc ? c->desc : PyUnicode_FromStringAndSize("", 0);
    c->desc = NULL;
    if (desc == NULL) return -1;
    if (c->kind == 'C') {
        if (c->nun > 1) qsort(c->unlinked, (size_t)c->nun, sizeof(long), cmp_long);
        Py_ssize_t m = 0;
        for (Py_ssize_t i = 0; i < c->nun; i++)
            if (m == 0 || c->unlinked[m - 1] != c->unlinked[i]) c->unlinked[m++] = c->unlinked[i];
        PyObject *t = PyTuple_New(m);
        if (t == NULL) {
            Py_DECREF(desc);
            return -1;
        }
        for (Py_ssize_t i = 0; i < m; i++) {
            PyObject *v = PyLong_FromLong(c->unlinked[i]);
            if (v == NULL) {
                Py_DECREF(t);
                Py_DECREF(desc);
                return -1;
            }
            PyTuple_SET_ITEM(t, i, v);
        }
        Py_INCREF(c->str);
        if (setitem_steal(st->hcas, c->str, pack(3, desc, t, INT(c->line))) < 0) return -1;
    } else {
        if (append_steal(st->switch_rows, pack(6, NEW(c->str), desc, INT(c->nports), INT(c->line), INT(c->lid),
                                               PyUnicode_FromString(c->kind == 'S' ? "switch" : "router"))) < 0)
            return -1;
    }
    c->nun = 0;
    c->open = 0;
    return 0;
}

static int ports_pass(state *st, const char *text, Py_ssize_t len) {
    const char *p = text, *end = text + len;
    if (len > 0 && end[-1] == '\n') end--; /* the last line's newline: no empty line after it */
    if (len == 0) return 0;
    pnode c = {0};
    long lineno = 0;
    int rc = 1;
    for (;;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end;
        lineno++;
        pline l;
        if (!ports_line(p, e, &l)) goto none;
        rslot *r = NULL;
        if (l.s != NULL) {
            int k = rc_get(&st->rc, l.w ? l.w : "", l.w ? l.wl : 0, l.s, l.sl, &r);
            if (k < 0) goto err;
            if (k == 0) goto none;
        }
        if (!c.open || c.grl != l.grl || memcmp(c.graw, l.graw, (size_t)l.grl) != 0) {
            if (c.open && finish_node(st, &c) < 0) goto err;
            gslot *g = gt_get(&st->gt, l.guid);
            if (g == NULL) goto err;
            if (g->flags) goto none; /* its lines are not consecutive */
            g->flags = l.kind == 'C' ? F_HCA : F_SWITCH;
            c.open = 1;
            c.kind = l.kind;
            c.str = g->str;
            c.graw = l.graw;
            c.grl = l.grl;
            c.nports = 0;
            c.lid = l.lid;
            c.line = lineno;
            if (l.desc != NULL && l.dl > 0) {
                c.desc = PyUnicode_FromStringAndSize(l.desc, l.dl);
                if (c.desc == NULL) goto err;
            }
        } else if (c.desc == NULL && l.desc != NULL && l.dl > 0) {
            c.desc = PyUnicode_FromStringAndSize(l.desc, l.dl);
            if (c.desc == NULL) goto err;
        }
        if (l.port > c.nports) c.nports = l.port;
        if (!l.rkind) {
            if (c.nun == c.cap) {
                Py_ssize_t nc = c.cap ? c.cap * 2 : 8;
                long *nu = PyMem_Realloc(c.unlinked, (size_t)nc * sizeof(long));
                if (nu == NULL) {
                    PyErr_NoMemory();
                    goto err;
                }
                c.unlinked = nu;
                c.cap = nc;
            }
            c.unlinked[c.nun++] = l.port;
        } else {
            uint64_t gd = l.guid, rgv = l.rguid;
            if (c.kind == 'C') {
                if (l.rkind == 'C') goto none;
                gslot *rg = gt_get(&st->gt, rgv);
                if (rg == NULL) goto err;
                st->ca_claims++;
                st->acc_ca += claim(gd, l.port, rgv, l.rport);
                PyObject *key = pack(2, NEW(c.str), INT(l.port));
                if (key == NULL) goto err;
                PyObject *val;
                if (l.w != NULL && r != NULL)
                    val = pack(6, NEW(rg->str), INT(l.rport), NEW(r->wobj), NEW(r->sobj), NEW(PyTuple_GET_ITEM(r->triple, 2)),
                               INT(lineno));
                else {
                    PyObject *wo = l.w ? PyUnicode_FromStringAndSize(l.w, l.wl) : Py_NewRef(Py_None);
                    PyObject *so = r ? Py_NewRef(r->sobj) : Py_NewRef(Py_None);
                    val = pack(6, NEW(rg->str), INT(l.rport), wo, so, NEW(Py_None), INT(lineno));
                }
                /* one lookup: a port listed twice finds the first one there */
                PyObject *prev = val ? PyDict_SetDefault(st->hca_links, key, val) : NULL;
                int twice = prev != NULL && prev != val;
                Py_DECREF(key);
                Py_XDECREF(val);
                if (prev == NULL) goto err;
                if (twice) goto none;
            } else if (l.rkind == 'C') {
                st->sw_claims++;
                st->acc_ca -= claim(rgv, l.rport, gd, l.port);
            } else if (gd < rgv || (gd == rgv && l.port < l.rport)) {
                gslot *rg = gt_get(&st->gt, rgv);
                if (rg == NULL) goto err;
                st->fwd++;
                st->acc_sw += claim(gd, l.port, rgv, l.rport);
                PyObject *row;
                if (l.w != NULL && r != NULL)
                    row = pack(8, NEW(c.str), INT(l.port), NEW(rg->str), INT(l.rport), NEW(r->wobj), NEW(r->sobj),
                               NEW(PyTuple_GET_ITEM(r->triple, 2)), INT(lineno));
                else {
                    PyObject *wo = l.w ? PyUnicode_FromStringAndSize(l.w, l.wl) : Py_NewRef(Py_None);
                    PyObject *so = r ? Py_NewRef(r->sobj) : Py_NewRef(Py_None);
                    row = pack(8, NEW(c.str), INT(l.port), NEW(rg->str), INT(l.rport), wo, so, NEW(Py_None),
                               INT(lineno));
                }
                if (append_steal(st->switch_links, row) < 0) goto err;
            } else {
                st->bwd++;
                st->acc_sw -= claim(rgv, l.rport, gd, l.port);
            }
        }
        if (nl == NULL) break;
        p = nl + 1;
    }
    if (c.open && finish_node(st, &c) < 0) goto err;
    goto done;
none:
    rc = FAIL_NONE;
    goto done;
err:
    rc = FAIL_ERR;
done:
    Py_XDECREF(c.desc);
    PyMem_Free(c.unlinked);
    return rc;
}

static PyObject *fast_ports(PyObject *self, PyObject *args) { return run_pass(args, ports_pass); }


/* ------------------------------------------------------------------------------------------------------------ */
/* graph.host_endpoints for a fabric file alone (no inventory): host -> {"<hca>:<port>": Endpoint} from the HCAs'
 * descriptions ("<host> <hca>"). Returns (out, unknown) with unknown the (guid, desc, line) of the HCAs whose
 * description names no host, or None (a non-ASCII description, a description used by two HCAs: the Python loop
 * handles those and reports them). Host and HCA names are one string each, shared by their endpoints. */

static int is_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f); }

/* the one string equal to s[0:n] in ``pool`` (a dict str -> str), new reference */
static PyObject *pooled(PyObject *pool, const char *s, Py_ssize_t n) {
    PyObject *o = PyUnicode_FromStringAndSize(s, n);
    if (o == NULL) return NULL;
    PyObject *have = PyDict_SetDefault(pool, o, o);
    Py_XINCREF(have);
    Py_DECREF(o);
    return have;
}

#define KMAX 64

static PyObject *fast_endpoints(PyObject *self, PyObject *args) {
    PyObject *hcas, *links, *agg, *no_host, *ep_type;
    if (!PyArg_ParseTuple(args, "O!O!OOO", &PyDict_Type, &hcas, &PyDict_Type, &links, &agg, &no_host, &ep_type))
        return NULL;
    /* The links are read in step with the HCAs: the readers put each HCA's links right after it (in the HCAs'
     * order), so each HCA takes the links at the cursor that are its own; a link out of that order is left behind
     * and the Python loop (which looks every link up) takes the fabric. */
    Py_ssize_t lpos = 0;
    PyObject *lkey = NULL, *lval = NULL;
    int lhave = PyDict_Next(links, &lpos, &lkey, &lval);
    PyObject *lport[16], *lvals[16];
    PyObject *out = PyDict_New(), *unknown = PyList_New(0), *pool = PyDict_New(), *one = NULL, *res = NULL;
    struct {
        PyObject *hca;
        long port;
        PyObject *key;
    } kc[KMAX];
    int nk = 0;
    int check_agg = PyObject_IsTrue(agg);
    if (out == NULL || unknown == NULL || pool == NULL || check_agg < 0) goto done;
    one = Py_BuildValue("(i)", 1);
    if (one == NULL) goto done;
    Py_ssize_t pos = 0;
    PyObject *guid, *info;
    while (PyDict_Next(hcas, &pos, &guid, &info)) {
        int nl = 0; /* this HCA's links (borrowed port and link) */
        while (lhave) {
            if (!PyTuple_Check(lkey) || PyTuple_GET_SIZE(lkey) != 2) goto none;
            PyObject *kg = PyTuple_GET_ITEM(lkey, 0);
            if (kg != guid) {
                int eq = PyUnicode_Check(kg) ? PyUnicode_Compare(kg, guid) : -1;
                if (eq == -1 && PyErr_Occurred()) goto done;
                if (eq != 0) break;
            }
            if (nl == 16) goto none;
            lport[nl] = PyTuple_GET_ITEM(lkey, 1);
            lvals[nl++] = lval;
            lhave = PyDict_Next(links, &lpos, &lkey, &lval);
        }
        if (check_agg) {
            int in = PySequence_Contains(agg, guid);
            if (in < 0) goto done;
            if (in) continue;
        }
        if (!PyTuple_Check(info) || PyTuple_GET_SIZE(info) != 3) goto none;
        PyObject *desc = PyTuple_GET_ITEM(info, 0), *ports = PyTuple_GET_ITEM(info, 1), *line = PyTuple_GET_ITEM(info, 2);
        if (!PyUnicode_Check(desc) || !PyUnicode_IS_ASCII(desc) || !PyTuple_Check(ports)) goto none;
        const char *d = (const char *)PyUnicode_1BYTE_DATA(desc);
        Py_ssize_t n = PyUnicode_GET_LENGTH(desc), i = 0, tok[4];
        int nt = 0;
        while (i < n && nt < 4) { /* str.split(): up to 2 tokens (a third makes it no "<host> <hca>") */
            while (i < n && is_space((unsigned char)d[i])) i++;
            if (i >= n) break;
            tok[nt++] = i;
            while (i < n && !is_space((unsigned char)d[i])) i++;
            tok[nt++] = i;
        }
        while (i < n && is_space((unsigned char)d[i])) i++;
        int named = nt == 4 && i == n;
        if (named && (d[tok[0]] == 'l' || d[tok[0]] == 'L' || d[tok[0]] == '(')) { /* rdma-ndd before the hostname */
            PyObject *h = PyUnicode_FromStringAndSize(d + tok[0], tok[1] - tok[0]);
            PyObject *low = h ? PyObject_CallMethod(h, "lower", NULL) : NULL;
            Py_XDECREF(h);
            if (low == NULL) goto done;
            int in = PySequence_Contains(no_host, low);
            Py_DECREF(low);
            if (in < 0) goto done;
            if (in) named = 0;
        }
        if (!named) {
            if (append_steal(unknown, pack(3, NEW(guid), NEW(desc), NEW(line))) < 0) goto done;
            continue;
        }
        PyObject *host = pooled(pool, d + tok[0], tok[1] - tok[0]);
        PyObject *hca = host ? pooled(pool, d + tok[2], tok[3] - tok[2]) : NULL;
        if (hca == NULL) {
            Py_XDECREF(host);
            goto done;
        }
        PyObject *mine = PyDict_GetItemWithError(out, host); /* borrowed */
        if (mine == NULL) {
            if (PyErr_Occurred() || (mine = PyDict_New()) == NULL || PyDict_SetItem(out, host, mine) < 0) {
                Py_XDECREF(mine);
                Py_DECREF(host);
                Py_DECREF(hca);
                goto done;
            }
            Py_DECREF(mine); /* held by out */
        }
        /* the listed ports, then the linked ones the list lacks (in link order); (1,) when there are none */
        PyObject *all = PyList_New(0);
        int lerr = all == NULL;
        for (Py_ssize_t j = 0; !lerr && j < PyTuple_GET_SIZE(ports); j++)
            lerr = PyList_Append(all, PyTuple_GET_ITEM(ports, j)) < 0;
        for (int q = 0; !lerr && q < nl; q++) {
            int listed = PySequence_Contains(ports, lport[q]);
            lerr = listed < 0 || (!listed && PyList_Append(all, lport[q]) < 0);
        }
        if (!lerr && PyList_GET_SIZE(all) == 0) lerr = PyList_Append(all, PyTuple_GET_ITEM(one, 0)) < 0;
        if (lerr) {
            Py_XDECREF(all);
            Py_DECREF(host);
            Py_DECREF(hca);
            goto done;
        }
        int bad = 0;
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(all) && !bad; j++) {
            PyObject *port = PyList_GET_ITEM(all, j);
            long pv = PyLong_AsLong(port);
            if (pv == -1 && PyErr_Occurred()) {
                bad = -1;
                break;
            }
            PyObject *link = NULL; /* links.get((guid, port)), among this HCA's */
            for (int q = 0; q < nl && link == NULL; q++) {
                int eq = PyObject_RichCompareBool(lport[q], port, Py_EQ);
                if (eq < 0) {
                    bad = -1;
                    break;
                }
                if (eq) link = lvals[q];
            }
            if (bad) break;
            PyObject *argv[6] = {host, hca, port, guid, line, link ? link : Py_None};
            PyObject *ep = PyObject_Vectorcall(ep_type, argv, 6, NULL);
            if (ep == NULL) {
                bad = -1;
                break;
            }
            PyObject *key = NULL;
            for (int q = 0; q < nk; q++)
                if (kc[q].hca == hca && kc[q].port == pv) key = Py_NewRef(kc[q].key);
            if (key == NULL) {
                key = PyUnicode_FromFormat("%U:%ld", hca, pv);
                if (key != NULL && nk < KMAX) {
                    kc[nk].hca = Py_NewRef(hca);
                    kc[nk].port = pv;
                    kc[nk].key = Py_NewRef(key);
                    nk++;
                }
            }
            PyObject *prev = key ? PyDict_SetDefault(mine, key, ep) : NULL;
            if (prev == NULL)
                bad = -1;
            else if (prev != ep)
                bad = 1; /* a description used twice: the loop reports it */
            Py_XDECREF(key);
            Py_DECREF(ep);
        }
        Py_DECREF(all);
        Py_DECREF(host);
        Py_DECREF(hca);
        if (bad < 0) goto done;
        if (bad) goto none;
    }
    if (lhave) goto none; /* a link out of step (or of no HCA): the Python loop */
    res = PyTuple_Pack(2, out, unknown);
    goto done;
none:
    res = Py_NewRef(Py_None);
done:
    for (int q = 0; q < nk; q++) {
        Py_DECREF(kc[q].hca);
        Py_DECREF(kc[q].key);
    }
    Py_XDECREF(one);
    Py_XDECREF(out);
    Py_XDECREF(unknown);
    Py_XDECREF(pool);
    return res;
}

static PyMethodDef methods[] = {
    {"topology", fast_topology, METH_VARARGS,
     "topology(text, lanes, rate, hcas, hca_links, switch_links): read ibnetdiscover's topology form into the "
     "given dict/dict/list; (switch_rows, ca_claims, sw_claims, fwd, bwd, sums_agree, sysimgs), or None when the "
     "text is not in the tool's exact layout."},
    {"ports", fast_ports, METH_VARARGS,
     "ports(text, lanes, rate, hcas, hca_links, switch_links): the same for ibnetdiscover -p."},
    {"endpoints", fast_endpoints, METH_VARARGS,
     "endpoints(hcas, hca_links, aggregation, no_host, Endpoint): graph.host_endpoints for a fabric "
     "file alone: (host -> {key: Endpoint}, unknown (guid, desc, line) list), or None (the Python loop's case)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastread",
                                    "The lean ibnetdiscover reader in C (optional; see ncclctl/fabric/lean.py).", -1,
                                    methods};

/* The claims' key: 16 bytes of os.urandom, drawn once per process. */
static int seed_claims(void) {
    PyObject *os = PyImport_ImportModule("os");
    if (os == NULL) return -1;
    PyObject *raw = PyObject_CallMethod(os, "urandom", "n", (Py_ssize_t)sizeof(claim_key));
    Py_DECREF(os);
    if (raw == NULL) return -1;
    if (!PyBytes_Check(raw) || PyBytes_GET_SIZE(raw) != (Py_ssize_t)sizeof(claim_key)) {
        Py_DECREF(raw);
        PyErr_SetString(PyExc_RuntimeError, "os.urandom gave no key");
        return -1;
    }
    memcpy(claim_key, PyBytes_AS_STRING(raw), sizeof(claim_key));
    Py_DECREF(raw);
    return 0;
}

PyMODINIT_FUNC PyInit__fastread(void) {
    if (seed_claims() < 0) return NULL;
    return PyModule_Create(&module);
}
