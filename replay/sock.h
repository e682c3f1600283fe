/*
 * sock.h -- the replay server's listening sockets and peer address text.
 */
#ifndef MT_REPLAY_SOCK_H
#define MT_REPLAY_SOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "core/err.h"

/*
 * Opens a non-blocking TCP socket bound to host (a numeric IPv4 or IPv6
 * address) and port.  reuseport: with SO_REUSEPORT and listening (one per
 * loop); else a plain bound probe that fails if anything, even another
 * SO_REUSEPORT process, holds the port.  *bound: the port bound (port 0
 * picks one).  The fd, or a negative code with err filled (MT_EUSAGE for a
 * host that is not a numeric address).
 */
int sock_listen_open(const char *host, uint16_t port, bool reuseport,
                     uint16_t *bound, struct mt_err *err);

/* "A.B.C.D:PORT" or "[V6]:PORT" of ss into out (n bytes, NUL-terminated). */
void sock_addr_text(const struct sockaddr_storage *ss, char *out, size_t n);

#endif
