/*
 * matchkey.c -- the text of a request key (see matchkey.h and
 * docs/replay.md, "Matching").
 *
 * The command document is walked at the top level only: field names are
 * collected (bson_iter_t copies, no decoding), the ignored ones dropped,
 * the rest sorted by name, and only then is each kept value expanded into
 * compact relaxed JSON.  Strings escape every control character, so the
 * field separator MATCH_SEP (0x1f) never occurs inside a value.
 */
#include "matchkey.h"

#include <bson/bson.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rd.h"

/* ---- value text ---- */

/*
 * A value whose text would pass MATCH_VALUE_INLINE_MAX bytes is hashed as
 * it is written instead of kept: its text is replaced by
 * {"$digest":"<32 hex>","bytes":N} (N: length of the text it stands for).
 * Equal values give equal text, so equal digests; the key stays small
 * whatever the request's size (a 15 MiB document, a 48 MB insert).
 */
struct kdig {
    uint64_t h1, h2; /* two lanes with different mixing */
    uint64_t n;      /* text bytes hashed */
    uint8_t tail[8]; /* bytes not yet a whole word */
    size_t ntail;
};

struct kw {
    struct mt_buf *b;
    int rc;
    size_t val_start; /* offset of the current value's text; SIZE_MAX: none */
    bool digesting;   /* the current value goes to dig, not to b */
    struct kdig dig;
};

static void
kdig_word(struct kdig *d, uint64_t v)
{
    d->h1 = (d->h1 ^ v) * 0x9e3779b97f4a7c15ull;
    d->h1 ^= d->h1 >> 29;
    d->h2 = (d->h2 + v) * 0xff51afd7ed558ccdull;
    d->h2 ^= d->h2 >> 33;
}

static void
kdig_put(struct kdig *d, const uint8_t *p, size_t n)
{
    uint64_t v;

    d->n += n;
    if (d->ntail > 0) {
        size_t k = 8 - d->ntail < n ? 8 - d->ntail : n;
        memcpy(d->tail + d->ntail, p, k);
        d->ntail += k;
        p += k;
        n -= k;
        if (d->ntail < 8)
            return;
        memcpy(&v, d->tail, 8);
        kdig_word(d, v);
        d->ntail = 0;
    }
    for (; n >= 8; p += 8, n -= 8) {
        memcpy(&v, p, 8);
        kdig_word(d, v);
    }
    memcpy(d->tail, p, n);
    d->ntail = n;
}

static void
kw_put(struct kw *w, const void *p, size_t n)
{
    if (w->rc != 0)
        return;
    if (w->digesting) {
        kdig_put(&w->dig, p, n);
        return;
    }
    if (w->val_start != SIZE_MAX &&
        w->b->len - w->val_start + n > MATCH_VALUE_INLINE_MAX) {
        /* too long to keep: hash what was written of it, then the rest */
        memset(&w->dig, 0, sizeof(w->dig));
        w->dig.h1 = 0xcbf29ce484222325ull;
        w->dig.h2 = 0x84222325cbf29ce4ull;
        kdig_put(&w->dig, w->b->data + w->val_start, w->b->len - w->val_start);
        w->b->len = w->val_start;
        w->digesting = true;
        kdig_put(&w->dig, p, n);
        return;
    }
    w->rc = mt_buf_append(w->b, p, n);
}

static void kw_fmt(struct kw *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Starts a top-level value (its text may be replaced by a digest). */
static void
kw_value_begin(struct kw *w)
{
    w->val_start = w->b->len;
    w->digesting = false;
}

/* Ends it: writes the digest when the value was too long to keep. */
static void
kw_value_end(struct kw *w)
{
    struct kdig *d = &w->dig;

    w->val_start = SIZE_MAX;
    if (!w->digesting)
        return;
    w->digesting = false;
    if (d->ntail > 0) {
        uint64_t v = 0;
        memcpy(&v, d->tail, d->ntail);
        kdig_word(d, v ^ ((uint64_t)d->ntail << 56));
    }
    kdig_word(d, d->n);
    kw_fmt(w, "{\"$digest\":\"%016llx%016llx\",\"bytes\":%llu}",
           (unsigned long long)d->h1, (unsigned long long)d->h2,
           (unsigned long long)d->n);
}

static void
kw_str(struct kw *w, const char *s)
{
    kw_put(w, s, strlen(s));
}

static void
kw_fmt(struct kw *w, const char *fmt, ...)
{
    char tmp[96];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n > 0)
        kw_put(w, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/* Decimal without printf (keys are built for every request). */
static void
kw_int(struct kw *w, int64_t v)
{
    char tmp[24];
    size_t i = sizeof(tmp);
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;

    do {
        tmp[--i] = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    if (v < 0)
        tmp[--i] = '-';
    kw_put(w, tmp + i, sizeof(tmp) - i);
}

/* Some byte of v is below 0x20, '"' or '\\' (exact: no false negative;
 * the bit tricks of "Bit Twiddling Hacks", haszero / hasless). */
static bool
word_needs_escape(uint64_t v)
{
    const uint64_t ones = 0x0101010101010101ull;
    const uint64_t high = 0x8080808080808080ull;
    uint64_t q = v ^ (ones * '"'), b = v ^ (ones * '\\');

    return ((((v - ones * 0x20) & ~v) | ((q - ones) & ~q) | ((b - ones) & ~b)) &
            high) != 0;
}

static void
kw_quoted(struct kw *w, const char *s, size_t len)
{
    size_t run = 0;

    kw_put(w, "\"", 1);
    for (size_t i = 0; i < len; i++) {
        unsigned char c;
        uint64_t v;
        /* 8 bytes at a time while none needs escaping (long strings) */
        while (len - i >= 8 && (memcpy(&v, s + i, 8), !word_needs_escape(v)))
            i += 8;
        if (i == len)
            break;
        c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        kw_put(w, s + run, i - run);
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            kw_put(w, e, 2);
        } else {
            kw_fmt(w, "\\u%04x", c);
        }
        run = i + 1;
    }
    kw_put(w, s + run, len - run);
    kw_put(w, "\"", 1);
}

static void kw_doc(struct kw *w, bson_iter_t *it, bool array, int depth,
                   unsigned mode);

static void
kw_binary(struct kw *w, const bson_iter_t *it)
{
    bson_subtype_t st;
    uint32_t l;
    const uint8_t *d;

    bson_iter_binary(it, &st, &l, &d);
    kw_fmt(w, "{\"$binary\":%d:\"", (int)st);
    for (uint32_t i = 0; i < l && w->rc == 0; i++)
        kw_fmt(w, "%02x", d[i]);
    kw_str(w, "\"}");
}

/* The less common scalar types; false for anything else. */
static bool
kw_scalar_rare(struct kw *w, const bson_iter_t *it)
{
    char tmp[BSON_DECIMAL128_STRING];
    uint32_t l, t, i;
    const char *s, *opt;
    bson_decimal128_t d;

    switch ((int)bson_iter_type(it)) { /* int: the rest go to default */
    case BSON_TYPE_REGEX:
        s = bson_iter_regex(it, &opt);
        kw_str(w, "{\"$regex\":");
        kw_quoted(w, s, strlen(s));
        kw_str(w, ",\"$options\":");
        kw_quoted(w, opt, strlen(opt));
        kw_str(w, "}");
        return true;
    case BSON_TYPE_TIMESTAMP:
        bson_iter_timestamp(it, &t, &i);
        kw_fmt(w, "{\"$ts\":[%" PRIu32 ",%" PRIu32 "]}", t, i);
        return true;
    case BSON_TYPE_DECIMAL128:
        bson_iter_decimal128(it, &d);
        bson_decimal128_to_string(&d, tmp);
        kw_fmt(w, "{\"$numberDecimal\":\"%s\"}", tmp);
        return true;
    case BSON_TYPE_CODE:
    case BSON_TYPE_CODEWSCOPE:
        s = BSON_ITER_HOLDS_CODE(it)
                ? bson_iter_code(it, &l)
                : bson_iter_codewscope(it, &l, &t, (const uint8_t **)&opt);
        kw_str(w, "{\"$code\":");
        kw_quoted(w, s, l);
        kw_str(w, BSON_ITER_HOLDS_CODE(it) ? "}" : ",\"$scope\":1}");
        return true;
    case BSON_TYPE_SYMBOL:
        s = bson_iter_symbol(it, &l);
        kw_quoted(w, s, l);
        return true;
    case BSON_TYPE_MAXKEY:
        kw_str(w, "{\"$maxKey\":1}");
        return true;
    case BSON_TYPE_MINKEY:
        kw_str(w, "{\"$minKey\":1}");
        return true;
    case BSON_TYPE_DBPOINTER:
        kw_str(w, "{\"$dbPointer\":1}");
        return true;
    default:
        return false;
    }
}

/*
 * Numbers are written by value, as mongod compares them: an int32, an
 * int64 and a double holding the same integer give the same text (limit: 1
 * from pymongo, NumberLong(1) from a libmongoc program).  Other doubles
 * keep 17 significant digits.
 */
static void
kw_double(struct kw *w, double d)
{
    if (d >= -9007199254740992.0 && d <= 9007199254740992.0 &&
        d == (double)(int64_t)d)
        kw_int(w, (int64_t)d);
    else
        kw_fmt(w, "%.17g", d);
}

/* The scalar types; returns false for the container types. */
static bool
kw_scalar(struct kw *w, const bson_iter_t *it)
{
    char tmp[25];
    uint32_t l;
    const char *s;

    switch ((int)bson_iter_type(it)) { /* int: the rest go to default */
    case BSON_TYPE_DOUBLE:
        kw_double(w, bson_iter_double(it));
        return true;
    case BSON_TYPE_UTF8:
        s = bson_iter_utf8(it, &l);
        kw_quoted(w, s, l);
        return true;
    case BSON_TYPE_BINARY:
        kw_binary(w, it);
        return true;
    case BSON_TYPE_OID:
        bson_oid_to_string(bson_iter_oid(it), tmp);
        kw_fmt(w, "{\"$oid\":\"%s\"}", tmp);
        return true;
    case BSON_TYPE_BOOL:
        kw_str(w, bson_iter_bool(it) ? "true" : "false");
        return true;
    case BSON_TYPE_DATE_TIME:
        kw_str(w, "{\"$date\":");
        kw_int(w, bson_iter_date_time(it));
        kw_put(w, "}", 1);
        return true;
    case BSON_TYPE_NULL:
        kw_str(w, "null");
        return true;
    case BSON_TYPE_UNDEFINED:
        kw_str(w, "undefined");
        return true;
    case BSON_TYPE_INT32:
        kw_int(w, bson_iter_int32(it));
        return true;
    case BSON_TYPE_INT64:
        kw_int(w, bson_iter_int64(it));
        return true;
    default:
        return kw_scalar_rare(w, it);
    }
}

static void
kw_value(struct kw *w, bson_iter_t *it, int depth, unsigned mode)
{
    bson_iter_t child;

    if (kw_scalar(w, it))
        return;
    if (depth >= WIRE_BSON_DEPTH_MAX) {
        if (w->rc == 0)
            w->rc = MT_ELIMIT;
        return;
    }
    if (!bson_iter_recurse(it, &child)) {
        if (w->rc == 0)
            w->rc = MT_EBSON;
        return;
    }
    kw_doc(w, &child, BSON_ITER_HOLDS_ARRAY(it), depth + 1, mode);
}

/* How a document of a value is written (KW_*: flags). */
#define KW_MASK_ID                                                             \
    1u /* elements are inserted documents: mask an ObjectId _id */
#define KW_STMT_DEFAULTS                                                       \
    2u /* elements are update statements: leave out                            \
        * multi: false and upsert: false, the server's                         \
        * defaults */

/* A field of a statement document that mode leaves out. */
static bool
kw_skipped(unsigned mode, const bson_iter_t *it)
{
    const char *k;

    if (!(mode & KW_STMT_DEFAULTS) || !BSON_ITER_HOLDS_BOOL(it) ||
        bson_iter_bool(it))
        return false;
    k = bson_iter_key(it);
    return strcmp(k, "multi") == 0 || strcmp(k, "upsert") == 0;
}

/* mode: what the elements are (KW_MASK_ID, KW_STMT_DEFAULTS), 0: plain. */
static void
kw_doc(struct kw *w, bson_iter_t *it, bool array, int depth, unsigned mode)
{
    bool first = true;

    kw_put(w, array ? "[" : "{", 1);
    while (w->rc == 0 && bson_iter_next(it)) {
        if (!array && kw_skipped(mode, it))
            continue;
        if (!first)
            kw_put(w, ",", 1);
        first = false;
        if (!array) {
            const char *k = bson_iter_key(it);
            kw_quoted(w, k, strlen(k));
            kw_put(w, ":", 1);
        }
        if ((mode & KW_MASK_ID) && !array &&
            strcmp(bson_iter_key(it), "_id") == 0 && BSON_ITER_HOLDS_OID(it)) {
            kw_str(w, "{\"$oid\":\"*\"}");
            continue;
        }
        /* elements of a masked array are documents written in mode */
        if (mode != 0 && array && BSON_ITER_HOLDS_DOCUMENT(it)) {
            bson_iter_t child;
            if (bson_iter_recurse(it, &child))
                kw_doc(w, &child, false, depth + 1, mode);
            else if (w->rc == 0)
                w->rc = MT_EBSON;
            continue;
        }
        kw_value(w, it, depth, 0);
    }
    kw_put(w, array ? "]" : "}", 1);
}

/* A top-level field found by the walk: where to resume iterating. */
struct field {
    const char *key; /* borrowed from the document (or the sequence) */
    uint32_t off;    /* bson_iter_offset() of the element */
    uint32_t keylen;
    bool sub; /* a document with keys that FIELD.SUB rules ignore */
    const struct wire_seq *seq; /* borrowed: a kind-1 sequence, or NULL */
};

static int
cmp_field(const void *a, const void *b)
{
    return strcmp(((const struct field *)a)->key,
                  ((const struct field *)b)->key);
}

/* How the documents of top-level field (or sequence) field are written. */
static unsigned
field_mode(const struct match_rules *r, const struct match_req *req,
           const char *field)
{
    if (r->mask_insert_oids && strcmp(req->name, "insert") == 0 &&
        strcmp(field, "documents") == 0)
        return KW_MASK_ID;
    if (!r->strict && strcmp(req->name, "update") == 0 &&
        strcmp(field, "updates") == 0)
        return KW_STMT_DEFAULTS;
    return 0;
}

/*
 * A top-level field the equivalences leave out (not under strict rules):
 * the cursor-shaping fields of a shaped find or aggregate (compared by
 * match_shape_serves instead), ordered: true of a write, and remove,
 * new and upsert false of a findAndModify: the server's defaults.
 */
static bool
field_equivalent(const struct match_rules *r, const struct match_req *req,
                 const struct match_shape *shape, const bson_iter_t *it)
{
    const char *k = bson_iter_key(it);

    if (r->strict)
        return false;
    if (shape->shaped && match_shape_field(req->name, k))
        return true;
    if (strcmp(req->name, "findAndModify") == 0 && BSON_ITER_HOLDS_BOOL(it) &&
        !bson_iter_bool(it))
        return strcmp(k, "remove") == 0 || strcmp(k, "new") == 0 ||
               strcmp(k, "upsert") == 0;
    return strcmp(k, "ordered") == 0 && BSON_ITER_HOLDS_BOOL(it) &&
           bson_iter_bool(it) &&
           (strcmp(req->name, "insert") == 0 ||
            strcmp(req->name, "update") == 0 ||
            strcmp(req->name, "delete") == 0);
}

/* Whether key of top-level field f (fl bytes) is ignored by an F.KEY rule. */
static bool
sub_ignored(const struct match_rules *r, const char *f, size_t fl,
            const char *key)
{
    char path[sizeof(r->ignore[0])];
    size_t kl = strlen(key);

    if (fl + 1 + kl >= sizeof(path))
        return false;
    memcpy(path, f, fl);
    path[fl] = '.';
    memcpy(path + fl + 1, key, kl);
    return match_rules_ignored_n(r, path, fl + 1 + kl);
}

/*
 * The keys of top-level document field it (named f, fl bytes) that no
 * F.KEY rule ignores: written as a document when w is set, else only
 * counted (a document that cannot be walked counts 1, so that writing it
 * reports the error).
 */
static size_t
kw_doc_kept(struct kw *w, const bson_iter_t *it, const struct match_rules *r,
            const char *f, size_t fl)
{
    bson_iter_t c;
    size_t n = 0;

    if (!bson_iter_recurse(it, &c)) {
        if (w != NULL && w->rc == 0)
            w->rc = MT_EBSON;
        return 1;
    }
    if (w != NULL)
        kw_put(w, "{", 1);
    while ((w == NULL || w->rc == 0) && bson_iter_next(&c)) {
        const char *k = bson_iter_key(&c);
        if (sub_ignored(r, f, fl, k))
            continue;
        if (w != NULL) {
            if (n > 0)
                kw_put(w, ",", 1);
            kw_quoted(w, k, strlen(k));
            kw_put(w, ":", 1);
            kw_value(w, &c, 2, 0);
        }
        n++;
    }
    if (w != NULL)
        kw_put(w, "}", 1);
    return n;
}

/* Kind-1 sequence s, as the value "[doc,doc,...]". */
static void
kw_sequence(struct kw *w, const struct match_rules *r,
            const struct match_req *req, const struct wire_seq *s)
{
    unsigned mode = field_mode(r, req, s->identifier);
    struct rd d = rd_init(s->docs, s->docs_len);
    bool first = true;

    kw_str(w, "[");
    while (d.left > 0 && w->rc == 0) {
        uint32_t l;
        const uint8_t *doc;
        struct rd peek = d;
        bson_t b;
        bson_iter_t it;
        if (!rd_le32(&peek, &l) || l < 5 || !rd_bytes(&d, l, &doc) ||
            !bson_init_static(&b, doc, l) || !bson_iter_init(&it, &b)) {
            w->rc = MT_EBSON;
            break;
        }
        if (!first)
            kw_put(w, ",", 1);
        first = false;
        kw_doc(w, &it, false, 1, mode);
    }
    kw_str(w, "]");
}

/* Appends field f to the list; MT_ELIMIT when it is full. */
static int
field_push(struct field *f, size_t *nf, const struct match_req *req,
           struct field v, struct mt_err *err)
{
    if (*nf == MATCH_FIELDS_MAX)
        return mt_err_set(err, MT_ELIMIT, 0,
                          "more than %d fields in a '%s' command",
                          MATCH_FIELDS_MAX, req->name);
    f[(*nf)++] = v;
    return 0;
}

/* Kind-1 sequences are fields like the others, sorted with them. */
static int
fields_of_sequences(const struct match_rules *r, const struct match_req *req,
                    struct field *f, size_t *nf, struct mt_err *err)
{
    for (size_t i = 0; i < req->nseq; i++) {
        const struct wire_seq *q = &req->seq[i];
        int rc;
        if (match_rules_ignored(r, q->identifier))
            continue;
        rc = field_push(f, nf, req,
                        (struct field){q->identifier, 0,
                                       (uint32_t)strlen(q->identifier), false,
                                       q},
                        err);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* OP_QUERY flag bits (MongoDB's OP_QUERY reference). */
#define QUERY_SLAVE_OK 4u /* read from a secondary: a read preference */

/*
 * The key of a legacy find (OP_QUERY on a collection):
 *
 *     <db>\x1fOP_QUERY="<coll>"\x1ffields=<json>\x1fflags=<n>
 *         \x1fnumberToReturn=<n>\x1fnumberToSkip=<n>\x1fquery=<json>
 *
 * fields only with a returnFieldsSelector, flags and numberToSkip only
 * when not 0.  flags leave out SlaveOk (a read preference, ignored like
 * $readPreference); a query wrapped as {$query: ..., $orderby: ...}
 * leaves out the modifiers the rules ignore.  Unless the rules are
 * strict, numberToReturn 1 is written -1: the server takes 1 as -1 (one
 * document, cursor closed; OP_QUERY reference).  The first field names no
 * command, so these keys never meet an OP_MSG find's.
 */
static int
legacy_find_key(const struct match_rules *r, const struct match_req *req,
                struct kw *w, struct mt_err *err)
{
    int32_t ntr = req->number_to_return;
    uint32_t flags = (uint32_t)req->query_flags & ~QUERY_SLAVE_OK;
    bool wrapped, first = true;
    bson_t b, f;
    bson_iter_t it;

    if (!r->strict && ntr == 1)
        ntr = -1;
    if (!bson_init_static(&b, req->cmd, req->cmd_len) ||
        !bson_iter_init(&it, &b) ||
        (req->fields != NULL &&
         !bson_init_static(&f, req->fields, req->fields_len)))
        return mt_err_set(err, MT_EBSON, 0, "OP_QUERY document is not BSON");
    wrapped = bson_iter_init_find(&it, &b, "$query");
    kw_str(w, req->db);
    kw_str(w, "\x1fOP_QUERY=");
    kw_quoted(w, req->coll, strlen(req->coll));
    if (req->fields != NULL && bson_iter_init(&it, &f)) {
        kw_str(w, "\x1f"
                  "fields=");
        kw_value_begin(w);
        kw_doc(w, &it, false, 1, 0);
        kw_value_end(w);
    }
    if (flags != 0) {
        kw_str(w, "\x1f"
                  "flags=");
        kw_int(w, flags);
    }
    kw_str(w, "\x1fnumberToReturn=");
    kw_int(w, ntr);
    if (req->number_to_skip != 0) {
        kw_str(w, "\x1fnumberToSkip=");
        kw_int(w, req->number_to_skip);
    }
    kw_str(w, "\x1fquery=");
    kw_value_begin(w);
    (void)bson_iter_init(&it, &b);
    if (!wrapped) {
        kw_doc(w, &it, false, 1, 0);
    } else {
        kw_put(w, "{", 1);
        while (w->rc == 0 && bson_iter_next(&it)) {
            const char *k = bson_iter_key(&it);
            if (match_rules_ignored_n(r, k, bson_iter_key_len(&it)))
                continue;
            if (!first)
                kw_put(w, ",", 1);
            first = false;
            kw_quoted(w, k, strlen(k));
            kw_put(w, ":", 1);
            kw_value(w, &it, 1, 0);
        }
        kw_put(w, "}", 1);
    }
    kw_value_end(w);
    if (w->rc != 0)
        return mt_err_set(err, w->rc, 0,
                          "cannot build the key of a legacy find: %s",
                          mt_strerror(w->rc));
    return 0;
}

int
match_key_build(const struct match_rules *r, const struct match_req *req,
                struct mt_buf *key, struct mt_err *err)
{
    struct field f[MATCH_FIELDS_MAX];
    struct match_shape shape;
    bson_iter_t it;
    size_t nf = 0;
    bson_t b;
    struct kw w = {key, 0, SIZE_MAX, false, {0}};
    int rc;

    mt_buf_reset(key);
    if (req->legacy_query)
        return legacy_find_key(r, req, &w, err);
    if (!bson_init_static(&b, req->cmd, req->cmd_len) ||
        !bson_iter_init(&it, &b))
        return mt_err_set(err, MT_EBSON, 0, "command document is not BSON");
    match_shape_of(r, req, &shape);
    while (bson_iter_next(&it)) {
        const char *k = bson_iter_key(&it);
        uint32_t kl = bson_iter_key_len(&it);
        bool sub;
        if (nf > 0 && (match_rules_ignored_n(r, k, kl) ||
                       field_equivalent(r, req, &shape, &it)))
            continue;
        sub = nf > 0 && BSON_ITER_HOLDS_DOCUMENT(&it) &&
              match_rules_ignores_sub(r, k, kl);
        /* a document left empty by its F.KEY rules is as if absent */
        if (sub && kw_doc_kept(NULL, &it, r, k, kl) == 0)
            continue;
        rc = field_push(f, &nf, req,
                        (struct field){k, bson_iter_offset(&it), kl, sub, NULL},
                        err);
        if (rc < 0)
            return rc;
    }
    if (nf > 0 && (rc = fields_of_sequences(r, req, f, &nf, err)) < 0)
        return rc;
    if (nf > 2)
        qsort(f + 1, nf - 1, sizeof(f[0]), cmp_field);
    kw_str(&w, req->db);
    for (size_t i = 0; i < nf && w.rc == 0; i++) {
        if (f[i].seq == NULL &&
            !bson_iter_init_from_data_at_offset(&it, req->cmd, req->cmd_len,
                                                f[i].off, f[i].keylen))
            return mt_err_set(err, MT_EBSON, f[i].off, "bad field in '%s'",
                              req->name);
        kw_put(&w, (const char[]){MATCH_SEP}, 1);
        kw_str(&w, f[i].key);
        kw_put(&w, "=", 1);
        kw_value_begin(&w);
        if (f[i].seq != NULL)
            kw_sequence(&w, r, req, f[i].seq);
        else if (f[i].sub)
            (void)kw_doc_kept(&w, &it, r, f[i].key, f[i].keylen);
        else
            kw_value(&w, &it, 1, field_mode(r, req, f[i].key));
        kw_value_end(&w);
    }
    if (w.rc != 0)
        return mt_err_set(err, w.rc, 0, "cannot build the key of '%s': %s",
                          req->name, mt_strerror(w.rc));
    return 0;
}

uint64_t
match_key_hash(const void *key, size_t len)
{
    const uint8_t *p = key;
    uint64_t h = 0xcbf29ce484222325ull ^ len;
    size_t i = 0;

    /* 8 bytes per step (memcpy: no unaligned loads), then the tail */
    for (; len - i >= 8; i += 8) {
        uint64_t v;
        memcpy(&v, p + i, 8);
        h = (h ^ v) * 0x9e3779b97f4a7c15ull;
        h ^= h >> 29;
    }
    for (; i < len; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h ^ (h >> 32);
}
