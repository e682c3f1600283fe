/*
 * addr.h -- "HOST:PORT" and "[V6]:PORT" command-line addresses, parsed in
 * one place for every CLI and test helper.
 */
#ifndef MT_ADDR_H
#define MT_ADDR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/*
 * Splits spec into host (brackets of "[V6]" removed, NUL-terminated, at most
 * host_len - 1 bytes) and a decimal port 0..65535.  Returns 0, or
 * MT_EUSAGE when there is no colon, the host is empty or too long, or the
 * port is not a number in range.  Does not resolve.
 */
int mt_addr_split(const char *spec, char *host, size_t host_len,
                  uint16_t *port);

/*
 * mt_addr_split, then getaddrinfo (numeric port, stream socket, first
 * answer) into *ss / *len.  Returns 0 or MT_EUSAGE.  May block on DNS for
 * a host name.
 */
int mt_addr_resolve(const char *spec, struct sockaddr_storage *ss,
                    socklen_t *len);

#endif
