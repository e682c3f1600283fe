/*
 * err.h -- error codes and error detail shared by every module.
 *
 * A fallible function returns int: MT_OK (0), a positive status that is not
 * an error (MT_PARTIAL: a parser needs more bytes; MT_END: a stream ended
 * cleanly), or a negative code.  Negative codes are -errno values, or the
 * project codes below, produced from one X-macro table (as libuv's
 * UV_ERRNO_MAP does) so that mt_strerror() and the enum never disagree.
 */
#ifndef MT_ERR_H
#define MT_ERR_H

#include <stddef.h>
#include <stdint.h>

#define MT_OK 0
#define MT_PARTIAL 1 /* parser: the buffer holds a prefix; read more */
#define MT_END 2     /* reader: clean end of the stream */

/* XX(name, value, message).  Values stay below -4096 so they never collide
 * with -errno. */
#define MT_ERRNO_MAP(XX)                                                       \
    XX(EPROTO, -5001, "malformed wire message")                                \
    XX(ETOOBIG, -5002, "size exceeds a limit")                                 \
    XX(EBSON, -5003, "invalid BSON document")                                  \
    XX(ECHECKSUM, -5004, "checksum mismatch")                                  \
    XX(ECOMPRESS, -5005, "decompression failed")                               \
    XX(ETRUNC, -5006, "input truncated")                                       \
    XX(ECORRUPT, -5007, "input corrupt")                                       \
    XX(EVERSION, -5008, "unsupported format version")                          \
    XX(EUNSUPPORTED, -5009, "unsupported feature")                             \
    XX(ENOMATCH, -5010, "no matching record")                                  \
    XX(EUSAGE, -5011, "bad usage")                                             \
    XX(ELIMIT, -5012, "resource limit reached")                                \
    XX(ECLOSED, -5013, "peer closed the connection")

enum mt_errno {
#define XX(name, val, msg) MT_##name = val,
    MT_ERRNO_MAP(XX)
#undef XX
};

/* Optional detail for a failure, modelled on libbson's bson_error_t. */
struct mt_err {
    int code;      /* MT_* or -errno */
    size_t offset; /* byte offset of the first bad byte, if meaningful */
    char msg[128]; /* one line, no trailing newline */
};

/* Returns a static string describing code (MT_* or -errno). Never NULL. */
const char *mt_strerror(int code);

/*
 * Fills err (if not NULL) with code, offset and a printf-style message, and
 * returns code so callers can write `return mt_err_set(err, ...)`.
 */
int mt_err_set(struct mt_err *err, int code, size_t offset, const char *fmt,
               ...) __attribute__((format(printf, 4, 5)));

/* Propagate a negative return; `rc` must be declared int, cleanup at `out`. */
#define TRY(expr)                                                              \
    do {                                                                       \
        rc = (expr);                                                           \
        if (rc < 0)                                                            \
            goto out;                                                          \
    } while (0)

/* Assertions: MT_ASSERT stays on in release builds; MT_DASSERT only with
 * DEBUG=1 (expensive checks). */
void mt_assert_fail(const char *expr, const char *file, int line)
    __attribute__((noreturn));
#define MT_ASSERT(e) ((e) ? (void)0 : mt_assert_fail(#e, __FILE__, __LINE__))
#ifdef MT_DEBUG
#define MT_DASSERT(e) MT_ASSERT(e)
#else
#define MT_DASSERT(e) ((void)0)
#endif

#endif
