/*
 * log.c -- see log.h.
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

static enum mt_log_level min_level = MT_LOG_INFO;

void
mt_log_set_level(enum mt_log_level level)
{
    min_level = level;
}

enum mt_log_level
mt_log_get_level(void)
{
    return min_level;
}

void
mt_log(enum mt_log_level level, const char *fmt, ...)
{
    static const char *const names[] = {"debug", "info", "warning", "error"};
    char line[1024];
    va_list ap;
    int n, m;

    if (level < min_level)
        return;
    n = snprintf(line, sizeof(line), "mtrace: %s: ", names[level]);
    va_start(ap, fmt);
    m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (m < 0)
        return;
    n += m;
    if ((size_t)n > sizeof(line) - 2)
        n = (int)sizeof(line) - 2;
    line[n++] = '\n';
    if (write(STDERR_FILENO, line, (size_t)n) < 0)
        return;
}
