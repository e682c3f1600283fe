/*
 * handoff.h -- accepted connections passed from one replay loop to another.
 *
 * SO_REUSEPORT spreads connections by a hash of their addresses, not by
 * load: 64 connections from one client came out anywhere from 32/33 to
 * 24/41 over two loops, and the loop with more writes more replies one
 * after the other when they fall due together.  A loop that accepts a
 * connection while another loop holds fewer pushes it here; the target
 * loop takes it in its before-sleep hook after a loop_wake().  A bounded
 * FIFO under a mutex (only accepts go through it); its length is also
 * kept in an atomic so the hook's check costs no lock when it is empty.
 */
#ifndef MT_REPLAY_HANDOFF_H
#define MT_REPLAY_HANDOFF_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define HANDOFF_MAX 256 /* queued connections per loop; then kept locally */

struct handoff_item {
    int fd; /* owned by the queue while queued */
    struct sockaddr_storage peer;
    uint64_t accepted_ns; /* the accepting loop's clock at accept() */
};

struct handoff {
    pthread_mutex_t mu;
    struct handoff_item items[HANDOFF_MAX]; /* ring */
    size_t head;                            /* under mu */
    _Atomic size_t len;                     /* written under mu */
};

void handoff_init(struct handoff *h);
/* Closes the fds still queued. */
void handoff_free(struct handoff *h);

/* Thread-safe: queues fd (ownership passes to the queue) with its peer
 * address and accept time; false when the queue is full (the caller keeps
 * fd). */
bool handoff_push(struct handoff *h, int fd,
                  const struct sockaddr_storage *peer, uint64_t accepted_ns);

/* Thread-safe: the oldest queued fd (ownership passes to the caller), its
 * peer and accept time, or false when empty.  Lock-free when empty. */
bool handoff_pop(struct handoff *h, int *fd, struct sockaddr_storage *peer,
                 uint64_t *accepted_ns);

#endif
