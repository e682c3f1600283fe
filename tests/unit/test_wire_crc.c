/*
 * test_wire_crc.c -- core/wire_crc.c: CRC-32C against published vectors,
 * the table and SSE4.2 versions against each other, and continuation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "core/wire.h"
#include "core/wire_crc.h"

/* "123456789" is the CRC catalogue's check input; the 32-byte vectors are
 * RFC 3720 (iSCSI) appendix B.4. */
static void
test_wire_crc32c_known_vectors(void **state)
{
    uint8_t b[32];

    assert_int_equal(wire_crc32c(0, "123456789", 9), 0xE3069283u);
    assert_int_equal(wire__crc32c_sw(0, "123456789", 9), 0xE3069283u);
    assert_int_equal(wire_crc32c(0, "", 0), 0);
    memset(b, 0, sizeof(b));
    assert_int_equal(wire_crc32c(0, b, 32), 0x8A9136AAu);
    memset(b, 0xff, sizeof(b));
    assert_int_equal(wire_crc32c(0, b, 32), 0x62A8AB43u);
    for (int i = 0; i < 32; i++)
        b[i] = (uint8_t)i;
    assert_int_equal(wire_crc32c(0, b, 32), 0x46DD794Eu);
    for (int i = 0; i < 32; i++)
        b[i] = (uint8_t)(31 - i);
    assert_int_equal(wire_crc32c(0, b, 32), 0x113FDB5Cu);
    assert_int_equal(wire__crc32c_sw(0, b, 32), 0x113FDB5Cu);
}

/* Every length and alignment up to 300 bytes: sw == hw == split. */
static void
test_wire_crc32c_sw_hw_split_agree(void **state)
{
    uint8_t buf[512];
    uint32_t x = 12345;

    for (size_t i = 0; i < sizeof(buf); i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (uint8_t)(x >> 16);
    }
    for (size_t off = 0; off < 8; off++) {
        for (size_t n = 0; n <= 300; n++) {
            uint32_t sw = wire__crc32c_sw(0, buf + off, n);
            size_t half = n / 3;

            if (wire__crc32c_hw_ok())
                assert_int_equal(wire__crc32c_hw(0, buf + off, n), sw);
            assert_int_equal(wire_crc32c(0, buf + off, n), sw);
            assert_int_equal(wire_crc32c(wire_crc32c(0, buf + off, half),
                                         buf + off + half, n - half),
                             sw);
        }
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wire_crc32c_known_vectors),
        cmocka_unit_test(test_wire_crc32c_sw_hw_split_agree),
    };
    return cmocka_run_group_tests_name("wire_crc", tests, NULL, NULL);
}
