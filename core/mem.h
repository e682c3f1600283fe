/*
 * mem.h -- allocation through one door, so tests can fail the Nth call
 * (curl's torture tests).  mt_free(NULL) is a no-op.
 */
#ifndef MT_MEM_H
#define MT_MEM_H

#include <stddef.h>
#include <stdint.h>

void *mt_malloc(size_t n);
void *mt_calloc(size_t count, size_t n);
void *mt_realloc(void *p, size_t n);
char *mt_strdup(const char *s);
void mt_free(void *p);

/*
 * Test hook: the nth allocation from now (1 = the next one) and every one
 * after it returns NULL; 0 disables.  Not thread-safe; for unit tests only.
 */
void mt_mem_fail_after(uint64_t nth);

#endif
