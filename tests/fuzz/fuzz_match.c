/*
 * fuzz_match.c -- request keys, diffs, cursor rewriting and handshake
 * replies over arbitrary bytes taken as a command document (replay/match.c,
 * replay/matchkey.c, replay/cursor.c, replay/handshake.c).  Nothing may
 * crash or over-read; errors are fine.
 */
#include <stdint.h>
#include <string.h>

#include "core/buf.h"
#include "replay/cursor.h"
#include "replay/handshake.h"
#include "replay/match.h"
#include "replay/matchkey.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
        match_key_diff((const char *)key.data, key.len, other,
                       sizeof(other) - 1, diff, sizeof(diff));
        match_key_diff(other, sizeof(other) - 1, (const char *)key.data,
                       key.len, diff, sizeof(diff));
        match_key_display((const char *)key.data, key.len, disp, sizeof(disp));
        (void)match_key_hash(key.data, key.len);
    }
    mt_buf_free(&key);
    (void)match_reply_cursor_id(data, size);
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
