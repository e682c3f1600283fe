/*
 * fuzz_tcp.c -- TCP reassembly alone (capture/tcp_reasm.c), driven by a
 * script of operations, with invariants checked after each one:
 * delivered + lost bytes == the distance `next` moved; buffered bytes stay
 * within ooo_max; no byte is delivered twice (the output is contiguous).
 *
 * Input: ooo_max[1] (x 16 bytes), isn[4 LE], then 6-byte operations:
 *   op[1] off[2 LE] len[1] cap[1] fill[1]
 *   op % 4: 0 segment at isn+1+off (len bytes, cap captured, content
 *   derived from the stream offset so duplicates agree), 1 ack at
 *   isn+1+off*8, 2 SYN (isn), 3 FIN at isn+1+off.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "capture/tcp_reasm.h"
#include "core/err.h"
#include "core/rd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct acc {
    uint64_t data_bytes, gap_bytes;
    uint8_t data_xor;
};

static int
on_data(void *ctx, const uint8_t *p, size_t n, uint64_t t_ns)
{
    struct acc *a = ctx;
    uint8_t x = 0;
    for (size_t i = 0; i < n; i++) /* touch every byte (ASan) */
        x ^= p[i];
    a->data_xor ^= x; /* kept, so the reads are not optimised away */
    a->data_bytes += n;
    return 0;
}

static int
on_gap(void *ctx, uint64_t n, uint64_t t_ns)
{
    ((struct acc *)ctx)->gap_bytes += n;
    return 0;
}

static const struct tcp_reasm_ops ops = {on_data, on_gap};

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rd r = rd_init(data, size);
    struct tcp_reasm_stats st;
    struct tcp_reasm rs;
    struct acc a = {0, 0, 0};
    uint8_t omax, op, len, cap, fill;
    uint16_t off;
    uint32_t isn, origin = 0;
    uint8_t buf[256];
    bool have = false;

    if (!rd_u8(&r, &omax) || !rd_le32(&r, &isn))
        return 0;
    memset(&st, 0, sizeof(st));
    tcp_reasm_init(&rs, (size_t)omax * 16, &ops, &a, &st);
    while (rd_u8(&r, &op) && rd_le16(&r, &off) && rd_u8(&r, &len) &&
           rd_u8(&r, &cap) && rd_u8(&r, &fill)) {
        uint32_t seq = isn + 1 + off;
        (void)fill;
        if (cap > len)
            cap = len;
        switch (op % 4) {
        case 0:
            for (int i = 0; i < len; i++)
                buf[i] = (uint8_t)(off + i);
            tcp_reasm_segment(&rs, seq, buf, cap, len, 0);
            break;
        case 1:
            tcp_reasm_ack(&rs, isn + 1 + (uint32_t)off * 8, 0);
            break;
        case 2:
            tcp_reasm_syn(&rs, isn);
            break;
        default:
            tcp_reasm_fin(&rs, seq);
            break;
        }
        if (rs.have_seq && !have) {
            have = true;
            origin = rs.next - (uint32_t)(a.data_bytes + a.gap_bytes);
        }
        if (rs.ooo_bytes > rs.ooo_max)
            abort(); /* the buffer limit holds after every call */
        if (have && (uint32_t)(rs.next - origin) !=
                        (uint32_t)(a.data_bytes + a.gap_bytes))
            abort(); /* every byte delivered or declared lost, once */
    }
    tcp_reasm_flush(&rs, 0);
    if (rs.ooo != NULL || rs.ooo_bytes != 0)
        abort();
    if (have &&
        (uint32_t)(rs.next - origin) != (uint32_t)(a.data_bytes + a.gap_bytes))
        abort();
    tcp_reasm_free(&rs);
    return 0;
}
