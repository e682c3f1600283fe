/*
 * pframe_fixtures.h -- the byte stream shared by test_pframe.c and
 * test_pstream.c: two OP_MSG messages back to back, then the first 10
 * bytes of a third.
 */
#ifndef MT_TEST_PFRAME_FIXTURES_H
#define MT_TEST_PFRAME_FIXTURES_H

#include <stdint.h>

/* Two OP_MSG messages back to back, then the first 10 bytes of a third. */
static const uint8_t stream[] = {
    /* message 1: 26 bytes */
    0x1a, 0x00, 0x00, 0x00, /*  0: messageLength 26 */
    0x01, 0x00, 0x00, 0x00, /*  4: requestID 1 */
    0x00, 0x00, 0x00, 0x00, /*  8: responseTo 0 */
    0xdd, 0x07, 0x00, 0x00, /* 12: opCode 2013 OP_MSG */
    0x00, 0x00, 0x00, 0x00, /* 16: flagBits */
    0x00,                   /* 20: section kind 0 */
    0x05, 0x00, 0x00, 0x00, /* 21: {} length 5 */
    0x00,                   /* 25: EOO */
    /* message 2: 26 bytes */
    0x1a, 0x00, 0x00, 0x00, /* 26: messageLength 26 */
    0x02, 0x00, 0x00, 0x00, /* 30: requestID 2 */
    0x01, 0x00, 0x00, 0x00, /* 34: responseTo 1 */
    0xdd, 0x07, 0x00, 0x00, /* 38: OP_MSG */
    0x00, 0x00, 0x00, 0x00, /* 42: flagBits */
    0x00,                   /* 46: kind 0 */
    0x05, 0x00, 0x00, 0x00, /* 47: {} */
    0x00,                   /* 51: EOO */
    /* message 3, cut after 10 bytes */
    0x1a, 0x00, 0x00, 0x00, /* 52: messageLength 26 */
    0x03, 0x00, 0x00, 0x00, /* 56: requestID 3 */
    0x00, 0x00,             /* 60: responseTo, first half */
};

#endif
