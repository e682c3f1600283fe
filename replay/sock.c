/*
 * sock.c -- listening sockets and peer address text (see sock.h).
 */
#include "sock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Opens a listener or a probe on host:port; see sock.h. */
int
sock_listen_open(const char *host, uint16_t port, bool reuseport,
                 uint16_t *bound, struct mt_err *err)
{
    struct sockaddr_storage ss;
    socklen_t len;
    int fd, one = 1;

    memset(&ss, 0, sizeof(ss));
    if (inet_pton(AF_INET, host, &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
        ss.ss_family = AF_INET;
        ((struct sockaddr_in *)&ss)->sin_port = htons(port);
        len = sizeof(struct sockaddr_in);
    } else if (inet_pton(AF_INET6, host,
                         &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1) {
        ss.ss_family = AF_INET6;
        ((struct sockaddr_in6 *)&ss)->sin6_port = htons(port);
        len = sizeof(struct sockaddr_in6);
    } else {
        return mt_err_set(err, MT_EUSAGE, 0,
                          "--listen host '%s' is not a numeric IP address",
                          host);
    }
    fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return mt_err_set(err, -errno, 0, "socket: %s", strerror(errno));
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if ((reuseport &&
         setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0) ||
        bind(fd, (struct sockaddr *)&ss, len) < 0 ||
        (reuseport && listen(fd, 4096) < 0)) {
        int e = errno;
        close(fd);
        return mt_err_set(err, -e, 0, "cannot listen on %s:%u: %s", host, port,
                          strerror(e));
    }
    len = sizeof(ss);
    getsockname(fd, (struct sockaddr *)&ss, &len);
    *bound = ntohs(ss.ss_family == AF_INET
                       ? ((struct sockaddr_in *)&ss)->sin_port
                       : ((struct sockaddr_in6 *)&ss)->sin6_port);
    return fd;
}

/* Address text of a peer; see sock.h. */
void
sock_addr_text(const struct sockaddr_storage *ss, char *out, size_t n)
{
    char host[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;

    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
        inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
        port = ntohs(a->sin_port);
        snprintf(out, n, "%s:%u", host, port);
    } else {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
        inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
        port = ntohs(a->sin6_port);
        snprintf(out, n, "[%s]:%u", host, port);
    }
}
