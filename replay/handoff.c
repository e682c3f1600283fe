/*
 * handoff.c -- accepted connections passed between loops (see handoff.h).
 */
#include "handoff.h"

#include <string.h>
#include <unistd.h>

/* An empty queue. */
void
handoff_init(struct handoff *h)
{
    memset(h, 0, sizeof(*h));
    pthread_mutex_init(&h->mu, NULL);
    atomic_init(&h->len, 0);
}

/* Closes what is still queued (a server stopping before its loops took
 * them) and destroys the mutex.  No other thread may use h any more. */
void
handoff_free(struct handoff *h)
{
    int fd;
    struct sockaddr_storage ss;
    uint64_t t;

    while (handoff_pop(h, &fd, &ss, &t))
        close(fd);
    pthread_mutex_destroy(&h->mu);
}

/* Appends fd; false (nothing queued) when HANDOFF_MAX are waiting. */
bool
handoff_push(struct handoff *h, int fd, const struct sockaddr_storage *peer,
             uint64_t accepted_ns)
{
    size_t n;
    bool ok = false;

    pthread_mutex_lock(&h->mu);
    n = atomic_load(&h->len);
    if (n < HANDOFF_MAX) {
        struct handoff_item *it = &h->items[(h->head + n) % HANDOFF_MAX];
        it->fd = fd;
        it->peer = *peer;
        it->accepted_ns = accepted_ns;
        atomic_store(&h->len, n + 1);
        ok = true;
    }
    pthread_mutex_unlock(&h->mu);
    return ok;
}

/* Removes the oldest entry into *fd / *peer / *accepted_ns; false when
 * empty. */
bool
handoff_pop(struct handoff *h, int *fd, struct sockaddr_storage *peer,
            uint64_t *accepted_ns)
{
    size_t n;
    bool ok = false;

    if (atomic_load_explicit(&h->len, memory_order_acquire) == 0)
        return false;
    pthread_mutex_lock(&h->mu);
    n = atomic_load(&h->len);
    if (n > 0) {
        *fd = h->items[h->head].fd;
        *peer = h->items[h->head].peer;
        *accepted_ns = h->items[h->head].accepted_ns;
        h->head = (h->head + 1) % HANDOFF_MAX;
        atomic_store(&h->len, n - 1);
        ok = true;
    }
    pthread_mutex_unlock(&h->mu);
    return ok;
}
