/*
 * mem.c -- allocation wrappers with a failure-injection hook (see mem.h).
 */
#include "mem.h"

#include <stdlib.h>
#include <string.h>

static uint64_t fail_countdown; /* 0: never fail */

static int
should_fail(void)
{
    if (fail_countdown == 0)
        return 0;
    if (fail_countdown == 1)
        return 1; /* stays at 1: every later call fails too */
    fail_countdown--;
    return 0;
}

void
mt_mem_fail_after(uint64_t nth)
{
    fail_countdown = nth;
}

void *
mt_malloc(size_t n)
{
    if (should_fail())
        return NULL;
    return malloc(n ? n : 1);
}

void *
mt_calloc(size_t count, size_t n)
{
    if (should_fail())
        return NULL;
    return calloc(count ? count : 1, n ? n : 1);
}

void *
mt_realloc(void *p, size_t n)
{
    if (should_fail())
        return NULL;
    return realloc(p, n ? n : 1);
}

char *
mt_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = mt_malloc(n);
    if (d != NULL)
        memcpy(d, s, n);
    return d;
}

void
mt_free(void *p)
{
    free(p);
}
