/*
 * wire_gen_corpus.c -- writes the seed corpora of fuzz_wire and
 * fuzz_decompress from core/wire's own encoders, and converts existing
 * OP_COMPRESSED messages (e.g. extracted from the public captures) into
 * fuzz_decompress's input layout.
 *
 * Usage: wire_gen_corpus WIRE_DIR DECOMPRESS_DIR [MESSAGE_FILE...]
 * Exit 0 on success, 1 on failure (with a message).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rd.h"
#include "core/wire.h"

static int
put_file(const char *dir, const char *name, const uint8_t *p, size_t n)
{
    char path[4096];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "wb");
    if (f == NULL || fwrite(p, 1, n, f) != n) {
        perror(path);
        if (f)
            fclose(f);
        return 1;
    }
    return fclose(f) != 0;
}

/* fuzz_decompress layout: cid, le32 size, payload. */
static int
put_decompress(const char *dir, const char *name, const uint8_t *msg, size_t n)
{
    struct wire_msg m;
    struct mt_err err;
    size_t used;
    uint8_t buf[1 << 16];

    if (wire_msg_parse(msg, n, &m, &used, &err) != MT_OK ||
        m.h.op_code != WIRE_OP_COMPRESSED || m.compressed_len + 5 > sizeof(buf))
        return 0;
    buf[0] = m.compressor_id;
    wr_le32(buf + 1, (uint32_t)m.uncompressed_size);
    memcpy(buf + 5, m.compressed, m.compressed_len);
    return put_file(dir, name, buf, m.compressed_len + 5);
}

/* A hello reply whose arrays are keyed "3", "x" and "1", "0" (a damaged
 * trace), one nested in the other: replay renumbers them where it copies
 * recorded fields (wire_bson_append_iter). */
static int
misnumbered(struct mt_buf *b)
{
    bson_t *r = bson_new();
    bson_t hosts, inner;
    int bad;

    BSON_APPEND_BOOL(r, "isWritablePrimary", true);
    bson_append_array_begin(r, "hosts", -1, &hosts);
    bson_append_utf8(&hosts, "3", -1, "a:27017", -1);
    bson_append_array_begin(&hosts, "x", -1, &inner);
    bson_append_int32(&inner, "1", -1, 1);
    bson_append_int32(&inner, "0", -1, 0);
    bson_append_array_end(&hosts, &inner);
    bson_append_array_end(r, &hosts);
    BSON_APPEND_DOUBLE(r, "ok", 1.0);
    bad = wire_encode_msg(b, 6, 3, 0, r, NULL, 0);
    bson_destroy(r);
    return bad;
}

static int
gen(const char *wdir, const char *ddir)
{
    bson_t *find = BCON_NEW("find", "test_col", "filter", "{", "_id",
                            "test-doc-1", "}", "$db", "benchmark_db");
    bson_t *hello =
        BCON_NEW("isMaster", BCON_INT32(1), "helloOk", BCON_BOOL(true));
    bson_t *reply = BCON_NEW("ok", BCON_DOUBLE(1.0), "n", BCON_INT32(1));
    bson_t *doc = BCON_NEW("_id", BCON_INT32(1), "v", "[", "x", "]");
    const bson_t *docs[2] = {reply, doc};
    struct wire_seq seq = {"documents", bson_get_data(doc), doc->len};
    struct mt_buf b;
    int bad = 0;
    char name[64];

    mt_buf_init(&b, 1 << 20);
    bad |= wire_encode_msg(&b, 1, 0, 0, find, NULL, 0);
    bad |= put_file(wdir, "enc-msg-find", b.data, b.len);
    mt_buf_reset(&b);
    bad |= wire_encode_msg(&b, 2, 0, WIRE_MSG_CHECKSUM_PRESENT, find, &seq, 1);
    bad |= put_file(wdir, "enc-msg-seq-checksum", b.data, b.len);
    mt_buf_reset(&b);
    bad |= wire_encode_query(&b, 3, 0, "admin.$cmd", 0, -1, hello);
    bad |= put_file(wdir, "enc-query-ismaster", b.data, b.len);
    mt_buf_reset(&b);
    bad |= wire_encode_reply(&b, 4, 3, 8, 0, 0, docs, 2);
    bad |= put_file(wdir, "enc-reply", b.data, b.len);
    mt_buf_reset(&b);
    bad |= misnumbered(&b);
    bad |= put_file(wdir, "enc-msg-misnumbered-array", b.data, b.len);
    for (uint8_t cid = 0; cid <= WIRE_COMPRESSOR_ZSTD; cid++) {
        struct mt_buf plain, c;
        mt_buf_init(&plain, 1 << 20);
        mt_buf_init(&c, 1 << 20);
        bad |= wire_encode_msg(&plain, 5, 0, 0, find, &seq, 1);
        bad |= wire_encode_compressed(&c, plain.data, plain.len, cid, NULL);
        snprintf(name, sizeof(name), "enc-compressed-%s",
                 wire_compressor_name(cid));
        bad |= put_file(wdir, name, c.data, c.len);
        bad |= put_decompress(ddir, name, c.data, c.len);
        mt_buf_free(&plain);
        mt_buf_free(&c);
    }
    mt_buf_free(&b);
    bson_destroy(find);
    bson_destroy(hello);
    bson_destroy(reply);
    bson_destroy(doc);
    return bad != 0;
}

int
main(int argc, char **argv)
{
    int bad;

    if (argc < 3) {
        fprintf(stderr, "usage: wire_gen_corpus WIRE_DIR DECOMPRESS_DIR "
                        "[MESSAGE_FILE...]\n");
        return 2;
    }
    bad = gen(argv[1], argv[2]);
    for (int i = 3; i < argc; i++) {
        uint8_t buf[1 << 16];
        const char *base = strrchr(argv[i], '/');
        FILE *f = fopen(argv[i], "rb");
        size_t n;
        if (f == NULL) {
            perror(argv[i]);
            return 1;
        }
        n = fread(buf, 1, sizeof(buf), f);
        fclose(f);
        bad |= put_decompress(argv[2], base ? base + 1 : argv[i], buf, n);
    }
    if (bad)
        fprintf(stderr, "wire_gen_corpus: failed\n");
    return bad ? 1 : 0;
}
