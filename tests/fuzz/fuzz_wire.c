/*
 * fuzz_wire.c -- libFuzzer target for core/wire: the input is a byte
 * stream of wire messages.  Each message is framed, parsed deep and
 * shallow, its command looked up, and an OP_COMPRESSED one decompressed
 * into a bounded buffer and parsed again.  Any crash, over-read (ASan) or
 * broken invariant (abort) is a bug.
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

#include "core/wire.h"

#define OUT_MAX (1u << 20) /* decompressed output cap: keeps runs fast */

static void
check(int ok)
{
    if (!ok)
        abort();
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
