/*
 * fuzz_redact.c -- libFuzzer target for core/redact (capture --redact):
 * the input is one recorded message.  redact_msg must never crash or
 * over-read; when it rewrites the message, the result must be exactly one
 * message that passes wire_msg_parse's full validation, with its
 * messageLength equal to its size.  redact_trace_msg must leave a record
 * whose wire form is either unchanged, a valid rebuilt message, or a
 * header prefix flagged PARTIAL|REDACTED.
 *
 * Seeds (tests/data/corpus/redact/): saslStart / saslContinue requests and
 * replies, hello with speculativeAuthenticate, finds and inserts with the
 * fields named below, OP_QUERY and OP_REPLY, written once by
 * a short python3 script using the bson module (the seeds are small and
 * kept in the repository); crash-* inputs that once broke an invariant here
 * (kept as regressions: crash-empty-sequence-null-offset, an OP_MSG whose
 * kind-1 section holds no document).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/rd.h"
#include "core/redact.h"
#include "core/wire.h"

static void
check(int ok)
{
    if (!ok)
        abort();
}

static struct redact_cfg cfg;
static int cfg_ready;

static void
check_valid(const uint8_t *p, size_t n)
{
    struct wire_msg m;
    struct mt_err err = {0};
    size_t used = 0;
    struct rd r = rd_init(p, n);
    int32_t len = 0;

    check(wire_msg_parse(p, n, &m, &used, &err) == MT_OK);
    check(used == n);
    check(rd_le32s(&r, &len) && (size_t)len == n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mt_buf out;
    struct mt_err err = {0};
    struct trace_msg tm;
    int rc;

    if (!cfg_ready) {
        check(redact_cfg_add(&cfg, "ssn", &err) == 0);
        check(redact_cfg_add(&cfg, "filter.password", &err) == 0);
        check(redact_cfg_add(&cfg, "documents.card.number", &err) == 0);
        cfg_ready = 1;
    }
    if (size > WIRE_MSG_LEN_MAX)
        return 0;
    mt_buf_init(&out, WIRE_MSG_LEN_MAX);
    rc = redact_msg(&cfg, data, size, &out, &err);
    if (rc == 1)
        check_valid(out.data, out.len);
    else
        check(rc <= 0);

    memset(&tm, 0, sizeof(tm));
    tm.wire = data;
    tm.wire_len = (uint32_t)size;
    rc = redact_trace_msg(&cfg, &tm, &out);
    if (rc == 0) {
        check(tm.wire == data && tm.wire_len == size && tm.flags == 0);
    } else if (tm.flags & TRACE_MSG_PARTIAL) {
        check(tm.wire == data && tm.wire_len <= WIRE_HEADER_LEN);
        check(tm.flags & TRACE_MSG_REDACTED);
    } else {
        check(tm.flags & TRACE_MSG_REDACTED);
        check_valid(tm.wire, tm.wire_len);
    }
    mt_buf_free(&out);
    return 0;
}
