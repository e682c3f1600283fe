/*
 * ppin.c -- pinning the proxy's event loops (see ppin.h).
 */
#include "ppin.h"

#include <errno.h>

/* See ppin.h. */
int
ppin_attr_set(pthread_attr_t *attr, const cpu_set_t *allowed, int i)
{
    int n = CPU_COUNT(allowed), k = 0;
    cpu_set_t one;

    if (n <= 0 || i < 0)
        return EINVAL;
    CPU_ZERO(&one);
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
        if (CPU_ISSET(cpu, allowed) && k++ == i % n) {
            CPU_SET(cpu, &one);
            break;
        }
    return pthread_attr_setaffinity_np(attr, sizeof(one), &one);
}
