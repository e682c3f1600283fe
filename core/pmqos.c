/*
 * pmqos.c -- a PM QoS CPU latency request held through /dev/cpu_dma_latency;
 * see pmqos.h.
 */
#include "core/pmqos.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

/*
 * Sets q to hold nothing.
 */
void
pmqos_init(struct pmqos *q)
{
    q->fd = -1;
    q->us = -1;
}

/*
 * Holds a latency request written to path; see pmqos.h.
 */
int
pmqos_hold_at(struct pmqos *q, const char *path, int us, struct mt_err *err)
{
    int32_t v = us;
    ssize_t n;
    int fd, e;

    if (us < 0 || us > PMQOS_US_MAX)
        return mt_err_set(err, MT_EUSAGE, 0,
                          "CPU latency bound %d us out of range 0..%d", us,
                          PMQOS_US_MAX);
    fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        e = errno;
        return mt_err_set(err, -e, 0, "cannot open %s: %s%s", path, strerror(e),
                          e == EACCES || e == EPERM ? " (needs root)" : "");
    }
    /* The kernel takes a raw s32 (or an ASCII hex string); one write. */
    n = write(fd, &v, sizeof(v));
    if (n != (ssize_t)sizeof(v)) {
        e = n < 0 ? errno : EIO;
        close(fd);
        return mt_err_set(err, -e, 0, "cannot write %s: %s", path, strerror(e));
    }
    pmqos_release(q);
    q->fd = fd;
    q->us = us;
    return MT_OK;
}

/*
 * Holds a latency request on /dev/cpu_dma_latency; see pmqos.h.
 */
int
pmqos_hold(struct pmqos *q, int us, struct mt_err *err)
{
    return pmqos_hold_at(q, PMQOS_DEV, us, err);
}

/*
 * Drops the request by closing its file; see pmqos.h.
 */
void
pmqos_release(struct pmqos *q)
{
    if (q->fd >= 0)
        close(q->fd);
    q->fd = -1;
    q->us = -1;
}

/*
 * Reads the aggregated bound; see pmqos.h.
 */
int
pmqos_current(int *us)
{
    int32_t v;
    ssize_t n;
    int fd, e;

    fd = open(PMQOS_DEV, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    n = read(fd, &v, sizeof(v));
    e = n < 0 ? errno : EIO;
    close(fd);
    if (n != (ssize_t)sizeof(v))
        return -e;
    *us = v;
    return MT_OK;
}
