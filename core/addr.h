/*
 * addr.h -- "HOST:PORT" and "[V6]:PORT" addresses, parsed and formatted in
 * one place for every CLI, server (core/srv.h) and test helper.  HOST is a
 * numeric IPv4 or IPv6 address or a name (`localhost`, a DNS name).
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

/*
 * Formats sa (AF_INET or AF_INET6) as "1.2.3.4:5" or "[::1]:5" into out
 * (n bytes, always NUL-terminated); "?" for another family.
 */
void mt_addr_format(const struct sockaddr *sa, char *out, size_t n);

#endif
