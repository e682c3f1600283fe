/*
 * fuzz_decompress.c -- libFuzzer target for wire_decompress alone, so the
 * fuzzer spends its time inside the decompressors rather than on headers.
 *
 * Input layout (not a wire message, to keep the fuzzer's job small):
 *     0  uint8  compressorId (taken modulo 5: 4 exercises "unknown")
 *     1  int32  uncompressedSize, little-endian (any value, even negative)
 *     5  ...    compressed payload
 * The output buffer is capped at OUT_MAX, as capture caps it, so a lying
 * size must be refused before anything is allocated.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/rd.h"
#include "core/wire.h"

#define OUT_MAX (1u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rd r = rd_init(data, size);
    struct wire_msg m;
    struct mt_buf out;
    struct mt_err err;
    uint8_t cid;
    int rc;

    memset(&m, 0, sizeof(m));
    if (!rd_u8(&r, &cid) || !rd_le32s(&r, &m.uncompressed_size))
        return 0;
    m.h.op_code = WIRE_OP_COMPRESSED;
    m.h.request_id = 7;
    m.original_opcode = WIRE_OP_MSG;
    m.compressor_id = (uint8_t)(cid % 5);
    m.compressed = r.p;
    m.compressed_len = r.left;
    mt_buf_init(&out, OUT_MAX);
    rc = wire_decompress(&m, &out, &err);
    if (rc == 0) {
        if (m.uncompressed_size < 0 ||
            out.len != WIRE_HEADER_LEN + (size_t)m.uncompressed_size)
            abort();
    } else if (out.len != 0 || err.code != rc) {
        abort();
    }
    mt_buf_free(&out);
    return 0;
}
