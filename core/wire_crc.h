/*
 * wire_crc.h -- CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) for
 * OP_MSG checksums.  The public entry point is wire_crc32c() in wire.h; it
 * uses the SSE4.2 crc32 instruction when the CPU has it and slice-by-8
 * tables otherwise.  The two implementations are exposed for tests and the
 * benchmark so that they can be checked against each other.
 */
#ifndef MT_WIRE_CRC_H
#define MT_WIRE_CRC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Portable slice-by-8 (8 x 256-entry tables built once). crc starts at 0. */
uint32_t wire__crc32c_sw(uint32_t crc, const void *p, size_t n);

/* SSE4.2 version; only call when wire__crc32c_hw_ok() is true. */
uint32_t wire__crc32c_hw(uint32_t crc, const void *p, size_t n);

/* True when this CPU has the SSE4.2 crc32 instruction. */
bool wire__crc32c_hw_ok(void);

#endif
