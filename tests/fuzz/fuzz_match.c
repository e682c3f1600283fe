/*
 * fuzz_match.c -- request keys, diffs, cursor rewriting and handshake
 * replies over arbitrary bytes taken as a command document (replay/match.c,
 * replay/matchkey.c, replay/cursor.c, replay/handshake.c).  Nothing may
 * crash or over-read; errors are fine.  Properties checked (abort when
 * broken):
 *   - a key is a function of the request: built twice, the same bytes and
 *     hash;
 *   - match_key_diff counts the fields equal in both keys the same either
 *     way round (repeated field names included), and finds no difference
 *     between a key and itself (all its fields equal);
 *   - cursor_rewrite_reply of a reply whose cursor.id is an integer gives
 *     BSON whose cursor.id is the new id (valid when bson_validate accepts
 *     the input), and for a valid reply with one cursor.id, an Int64 (the
 *     same length), rewriting back with the old id gives the input's
 *     bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "replay/cursor.h"
#include "replay/handshake.h"
#include "replay/match.h"
#include "replay/matchkey.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check(bool ok)
{
    if (!ok)
        abort();
}

/* The number of fields of key (its database first, then MATCH_SEP-separated
 * name=value fields) when there are at most 64 (what match_key_diff
 * compares); 0 otherwise. */
static size_t
key_fields(const char *key, size_t len)
{
    size_t n = 1;

    if (len == 0)
        return 0;
    for (size_t i = 0; i < len; i++)
        n += key[i] == MATCH_SEP;
    return n <= 64 ? n : 0;
}

/* Key properties: determinism; match_key_diff's equal-field count is the
 * same either way round (repeated fields included), and a key of at most
 * 64 fields differs from itself in nothing. */
static void
check_key(const struct match_rules *r, const struct match_req *req,
          const struct mt_buf *key, const char *other, size_t other_len)
{
    struct mt_buf again;
    struct mt_err err;
    char diff[256];
    size_t n;
    int ab, ba;

    mt_buf_init(&again, 1u << 20);
    check(match_key_build(r, req, &again, &err) == 0);
    check(again.len == key->len &&
          (key->len == 0 || memcmp(again.data, key->data, key->len) == 0));
    check(match_key_hash(again.data, again.len) ==
          match_key_hash(key->data, key->len));
    mt_buf_free(&again);
    ab = match_key_diff((const char *)key->data, key->len, other, other_len,
                        diff, sizeof(diff));
    ba = match_key_diff(other, other_len, (const char *)key->data, key->len,
                        diff, sizeof(diff));
    check(ab == ba);
    n = key_fields((const char *)key->data, key->len);
    if (n == 0)
        return;
    check(match_key_diff((const char *)key->data, key->len,
                         (const char *)key->data, key->len, diff,
                         sizeof(diff)) == (int)n);
    check(diff[0] == '\0');
}

/* Whether iteration reaches the end of every (sub)document of it without
 * an error (libbson sets err_off when an element cannot be read). */
static bool
walk_iter(bson_iter_t *it, int depth)
{
    bson_iter_t sub;

    if (depth > 100)
        return false;
    while (bson_iter_next(it))
        if ((BSON_ITER_HOLDS_DOCUMENT(it) || BSON_ITER_HOLDS_ARRAY(it)) &&
            (!bson_iter_recurse(it, &sub) || !walk_iter(&sub, depth + 1)))
            return false;
    return it->err_off == 0;
}

/* Whether b is valid and every element of it can be walked: bson_validate
 * alone let through a document whose iteration stops early
 * (rewrite-unknown-type in the corpus). */
static bool
walks(const bson_t *b)
{
    bson_iter_t it;

    return bson_validate(b, BSON_VALIDATE_NONE, NULL) &&
           bson_iter_init(&it, b) && walk_iter(&it, 0);
}

/* The "id" fields of the top-level "cursor" documents of a valid
 * document (cursor_rewrite_reply sets every one of them). */
static size_t
cursor_id_fields(const bson_t *b)
{
    bson_iter_t it, c;
    size_t n = 0;

    if (!bson_iter_init(&it, b))
        return 0;
    while (bson_iter_next(&it))
        if (strcmp(bson_iter_key(&it), "cursor") == 0 &&
            BSON_ITER_HOLDS_DOCUMENT(&it) && bson_iter_recurse(&it, &c))
            while (bson_iter_next(&c))
                n += strcmp(bson_iter_key(&c), "id") == 0;
    return n;
}

/* cursor.id rewriting: the new id reads back; what bson_validate accepts
 * stays accepted (rewrite-validate-differs in the corpus: a cursor
 * document whose last byte is not its terminator, which bson_validate
 * skips, was once rebuilt up to the element iteration stopped at); a valid
 * document whose only cursor.id is an Int64 (same length after the
 * rewrite) round-trips to the input's bytes. */
static void
check_rewrite(const uint8_t *data, size_t size)
{
    int64_t old = match_reply_cursor_id(data, size);
    bson_t in, out, back;
    bool valid, accepted;

    if (old == 0)
        return;
    valid = bson_init_static(&in, data, size) && walks(&in);
    accepted = bson_init_static(&in, data, size) &&
               bson_validate(&in, BSON_VALIDATE_NONE, NULL);
    bson_init(&out);
    if (cursor_rewrite_reply(data, size, 42, &out) == 0) {
        check(!accepted || bson_validate(&out, BSON_VALIDATE_NONE, NULL));
        check(match_reply_cursor_id(bson_get_data(&out), out.len) == 42);
        if (valid && out.len == size && cursor_id_fields(&in) == 1) {
            bson_init(&back);
            check(cursor_rewrite_reply(bson_get_data(&out), out.len, old,
                                       &back) == 0);
            check(back.len == size &&
                  memcmp(bson_get_data(&back), data, size) == 0);
            bson_destroy(&back);
        }
    }
    bson_destroy(&out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char other[] = "d\x1f"
                                "find=\"c\"\x1f"
                                "filter={}\x1f"
                                "x";
    struct match_rules r;
    struct match_req req;
    struct handshake hs;
    struct mt_buf key;
    struct mt_err err;
    char diff[256], disp[64];
    uint64_t hold, await;
    bson_t out;

    memset(&req, 0, sizeof(req));
    memcpy(req.name, "find", 5);
    req.cmd = data;
    req.cmd_len = size;
    match_rules_default(&r);
    mt_buf_init(&key, 1u << 20);
    if (match_key_build(&r, &req, &key, &err) == 0) {
        check_key(&r, &req, &key, other, sizeof(other) - 1);
        match_key_diff((const char *)key.data, key.len, other,
                       sizeof(other) - 1, diff, sizeof(diff));
        match_key_diff(other, sizeof(other) - 1, (const char *)key.data,
                       key.len, diff, sizeof(diff));
        match_key_display((const char *)key.data, key.len, disp, sizeof(disp));
        (void)match_key_hash(key.data, key.len);
    }
    mt_buf_free(&key);
    check_rewrite(data, size);
    bson_init(&out);
    (void)cursor_rewrite_reply(data, size, 42, &out);
    bson_destroy(&out);
    /* the bytes as a recorded hello, and as a hello request (with every
     * compressor agreed to, so its "compression" list is walked) */
    handshake_init(&hs, data, size);
    (void)handshake_compressors(data, size);
    hs.compressors = HANDSHAKE_COMPRESSORS_ALL;
    bson_init(&out);
    (void)handshake_hello_reply(&hs, &req, 1, 0, "127.0.0.1:27017", &out);
    bson_destroy(&out);
    (void)handshake_awaitable(&hs, &req, &hold, &await);
    bson_init(&out);
    (void)handshake_builtin(&hs, &req, &out);
    bson_destroy(&out);
    return 0;
}
