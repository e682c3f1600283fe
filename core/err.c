/*
 * err.c -- mt_strerror and mt_err_set (see err.h).
 */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *
mt_strerror(int code)
{
    switch (code) {
    case MT_OK:
        return "success";
    case MT_PARTIAL:
        return "incomplete input";
    case MT_END:
        return "end of stream";
#define XX(name, val, msg)                                                     \
    case MT_##name:                                                            \
        return msg;
        MT_ERRNO_MAP(XX)
#undef XX
    default:
        break;
    }
    if (code < 0 && code > -4096)
        return strerror(-code);
    return "unknown error";
}

int
mt_err_set(struct mt_err *err, int code, size_t offset, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL)
        return code;
    err->code = code;
    err->offset = offset;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    return code;
}

void
mt_assert_fail(const char *expr, const char *file, int line)
{
    fprintf(stderr, "mtrace: assertion failed: %s (%s:%d)\n", expr, file, line);
    abort();
}
