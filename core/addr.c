/*
 * addr.c -- see addr.h.
 */
#include "addr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"

int
mt_addr_split(const char *spec, char *host, size_t host_len, uint16_t *port)
{
    const char *colon = strrchr(spec, ':');
    const char *p;
    unsigned long v;
    char *end;
    size_t hl;

    if (colon == NULL)
        return MT_EUSAGE;
    p = colon + 1;
    if (*p < '0' || *p > '9')
        return MT_EUSAGE;
    errno = 0;
    v = strtoul(p, &end, 10);
    if (errno != 0 || *end != '\0' || v > 65535)
        return MT_EUSAGE;
    hl = (size_t)(colon - spec);
    if (hl >= 2 && spec[0] == '[' && spec[hl - 1] == ']') {
        spec++;
        hl -= 2;
    }
    if (hl == 0 || hl >= host_len)
        return MT_EUSAGE;
    memcpy(host, spec, hl);
    host[hl] = '\0';
    *port = (uint16_t)v;
    return 0;
}

int
mt_addr_resolve(const char *spec, struct sockaddr_storage *ss, socklen_t *len)
{
    char host[256], serv[8];
    struct addrinfo hints, *res = NULL;
    uint16_t port;
    int rc = mt_addr_split(spec, host, sizeof(host), &port);

    if (rc < 0)
        return rc;
    snprintf(serv, sizeof(serv), "%u", (unsigned)port);
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    if (getaddrinfo(host, serv, &hints, &res) != 0 || res == NULL)
        return MT_EUSAGE;
    if (res->ai_addrlen > sizeof(*ss)) {
        freeaddrinfo(res);
        return MT_EUSAGE;
    }
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

/* See addr.h. */
void
mt_addr_format(const struct sockaddr *sa, char *out, size_t n)
{
    char ip[INET6_ADDRSTRLEN] = "?";

    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
        snprintf(out, n, "%s:%u", ip, ntohs(in->sin_port));
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
        snprintf(out, n, "[%s]:%u", ip, ntohs(in6->sin6_port));
    } else {
        snprintf(out, n, "?");
    }
}
