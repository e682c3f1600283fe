/*
 * fuzz_wire.c -- libFuzzer target for core/wire: the input is a byte
 * stream of wire messages.  Each message is framed, parsed deep and
 * shallow, its command looked up, its body copied through
 * wire_bson_append_iter (replay's copy of recorded fields), and an
 * OP_COMPRESSED one decompressed into a bounded buffer and parsed again.
 * Any crash, over-read (ASan) or broken invariant (abort) is a bug.
 *
 * Seeds (tests/data/corpus/wire/): enc-* written by
 * tests/helpers/wire_gen_corpus from core/wire's encoders; pcap-* the
 * MongoDB messages of ../shared/captures/{mongotools-compressed-snappy,
 * deeptrace-mongo-msg}.pcap (TCP payloads cut at messageLength), plus
 * the client half of the mongotools stream as one multi-message input;
 * crash-* inputs that once broke an invariant here (kept as regressions).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/wire.h"

#define OUT_MAX (1u << 20) /* decompressed output cap: keeps runs fast */

static void
check(int ok)
{
    if (!ok)
        abort();
}

/* A deep-parsed body (every nested document walked) copied element by
 * element through wire_bson_append_iter, as replay copies recorded replies:
 * every copy succeeds, keeps the element count and the top-level keys,
 * and the copy walks clean to its end. */
static void
copy_body(const struct wire_msg *m)
{
    bson_t in, out;
    bson_iter_t it, oit;
    size_t nin = 0, nout = 0;

    if (m->body == NULL || !bson_init_static(&in, m->body, m->body_len))
        return;
    bson_init(&out);
    check(bson_iter_init(&it, &in));
    while (bson_iter_next(&it)) {
        check(wire_bson_append_iter(&out, NULL, 0, &it));
        nin++;
    }
    check(bson_iter_init(&it, &in) && bson_iter_init(&oit, &out));
    while (bson_iter_next(&oit)) {
        check(bson_iter_next(&it));
        check(strcmp(bson_iter_key(&it), bson_iter_key(&oit)) == 0);
        check(bson_iter_type(&it) == bson_iter_type(&oit));
        nout++;
    }
    check(oit.err_off == 0 && nin == nout);
    bson_destroy(&out);
}

static void
one(const uint8_t *p, size_t n)
{
    struct wire_msg m, shallow;
    struct wire_cmd cmd;
    struct mt_err err;
    struct mt_buf out;
    size_t used, framed;
    int rc, rf;

    rf = wire_frame(p, n, 0, &framed, &err);
    rc = wire_msg_parse(p, n, &m, &used, &err);
    /* Framing and parsing agree on what is a whole message. */
    check((rf == MT_PARTIAL) == (rc == MT_PARTIAL));
    if (rc == MT_PARTIAL) {
        check(used > n && used == framed);
        return;
    }
    if (rc < 0) {
        check(err.code == rc && err.msg[0] != 0);
        check(used <= n && (rf < 0 || err.offset <= used));
        /* A deep failure may pass shallow, never the other way round. */
        if (rf == MT_OK && wire_msg_parse_opts(p, n, WIRE_PARSE_SHALLOW,
                                               &shallow, &used, &err) == MT_OK)
            (void)wire_msg_command(&shallow, &cmd);
        return;
    }
    check(rc == MT_OK && used == m.raw_len && used <= n);
    check(wire_msg_parse_opts(p, n, WIRE_PARSE_SHALLOW, &shallow, &used,
                              &err) == MT_OK);
    (void)wire_msg_command(&m, &cmd);
    copy_body(&m);
    if (m.h.op_code != WIRE_OP_COMPRESSED)
        return;
    mt_buf_init(&out, OUT_MAX);
    if (wire_decompress(&m, &out, &err) == 0) {
        struct wire_msg inner;
        check(out.len == WIRE_HEADER_LEN + (size_t)m.uncompressed_size);
        if (wire_msg_parse(out.data, out.len, &inner, &used, &err) == MT_OK)
            (void)wire_msg_command(&inner, &cmd);
    } else {
        check(out.len == 0); /* nothing appended on failure */
    }
    mt_buf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Walk the stream the way capture does: message after message. */
    for (int i = 0; i < 64 && size > 0; i++) {
        struct wire_msg m;
        struct mt_err err;
        size_t used;
        int rc;

        one(data, size);
        rc = wire_msg_parse_opts(data, size, WIRE_PARSE_SHALLOW, &m, &used,
                                 &err);
        if (rc != MT_OK)
            break;
        data += used;
        size -= used;
    }
    return 0;
}
