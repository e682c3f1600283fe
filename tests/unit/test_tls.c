/*
 * test_tls.c -- core/tls.c over non-blocking socketpairs (and one loopback TCP
 * connection, for the reset case below): handshakes driven
 * step by step (EAGAIN both ways), data both ways, a read into a small
 * buffer reporting *more and the rest read without a socket event, a
 * write to a full socket returning a partial count then EAGAIN and
 * finishing from a moved buffer, data followed by close_notify (the data,
 * then EOF), a peer closing without close_notify (EOF), certificate
 * verification (a foreign CA, a wrong host name, an IP SAN, insecure), a
 * required client certificate, the alert of a server that refused us read
 * after our write met its reset (TCP), and context errors (missing file, key
 * not matching); the cause of each failure (tls_conn_cause: not TLS, no or a
 * foreign client certificate, ours refused, the peer closing) and the
 * negotiated version.  The certificates are made here with OpenSSL's API (EC
 * P-256), written as PEM into a temp dir.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "core/tls.h"

static char dir[64];
static char ca_pem[128], srv_pem[128], srv_crt[128], srv_key[128];
static char other_ca_pem[128], cli_pem[128], other_key[128];

static EVP_PKEY *
key_new(void)
{
    EVP_PKEY *k = EVP_EC_gen("P-256");
    assert_non_null(k);
    return k;
}

static void
add_ext(X509 *c, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509_EXTENSION *e;

    X509V3_set_ctx(&ctx, issuer, c, NULL, NULL, 0);
    e = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    assert_non_null(e);
    X509_add_ext(c, e, -1);
    X509_EXTENSION_free(e);
}

/* A certificate for key k named cn, signed by (issuer, ikey) or self. */
static X509 *
cert_new(EVP_PKEY *k, const char *cn, X509 *issuer, EVP_PKEY *ikey,
         const char *san, bool ca)
{
    X509 *c = X509_new();
    static long serial = 1;

    ASN1_INTEGER_set(X509_get_serialNumber(c), serial++);
    X509_set_version(c, 2);
    X509_gmtime_adj(X509_getm_notBefore(c), -60);
    X509_gmtime_adj(X509_getm_notAfter(c), 3600);
    X509_set_pubkey(c, k);
    X509_NAME_add_entry_by_txt(X509_get_subject_name(c), "CN", MBSTRING_ASC,
                               (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(c, X509_get_subject_name(issuer ? issuer : c));
    add_ext(c, issuer ? issuer : c, NID_basic_constraints,
            ca ? "critical,CA:TRUE" : "CA:FALSE");
    if (san != NULL)
        add_ext(c, issuer ? issuer : c, NID_subject_alt_name, san);
    assert_true(X509_sign(c, ikey ? ikey : k, EVP_sha256()) > 0);
    return c;
}

static void
write_pem(const char *path, X509 *c, EVP_PKEY *k)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    if (c != NULL)
        assert_int_equal(PEM_write_X509(f, c), 1);
    if (k != NULL)
        assert_int_equal(PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL),
                         1);
    fclose(f);
}

static int
setup(void **state)
{
    EVP_PKEY *cak = key_new(), *sk = key_new(), *ock = key_new(),
             *ck = key_new();
    X509 *ca = cert_new(cak, "test CA", NULL, NULL, NULL, true);
    X509 *oca = cert_new(ock, "other CA", NULL, NULL, NULL, true);
    X509 *srv =
        cert_new(sk, "localhost", ca, cak, "DNS:localhost,IP:127.0.0.1", false);
    X509 *cli = cert_new(ck, "client", ca, cak, NULL, false);

    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/mtrace-tls.XXXXXX");
    assert_non_null(mkdtemp(dir));
#define P(var, name) snprintf(var, sizeof(var), "%s/%s", dir, name)
    P(ca_pem, "ca.pem");
    P(srv_pem, "server.pem");
    P(srv_crt, "server.crt");
    P(srv_key, "server.key");
    P(other_ca_pem, "other_ca.pem");
    P(cli_pem, "client.pem");
    P(other_key, "other.key");
#undef P
    write_pem(ca_pem, ca, NULL);
    write_pem(other_ca_pem, oca, NULL);
    write_pem(srv_pem, srv, sk);
    write_pem(srv_crt, srv, NULL);
    write_pem(srv_key, NULL, sk);
    write_pem(cli_pem, cli, ck);
    write_pem(other_key, NULL, ock);
    X509_free(ca);
    X509_free(oca);
    X509_free(srv);
    X509_free(cli);
    EVP_PKEY_free(cak);
    EVP_PKEY_free(sk);
    EVP_PKEY_free(ock);
    EVP_PKEY_free(ck);
    return 0;
}

static int
teardown(void **state)
{
    const char *f[] = {ca_pem,  srv_pem,      srv_crt,  srv_key,
                       cli_pem, other_ca_pem, other_key};
    (void)state;
    for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
        unlink(f[i]);
    rmdir(dir);
    return 0;
}

/* A connected pair of non-blocking stream sockets with small buffers. */
static void
pair(int sv[2], int sndbuf)
{
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv),
                     0);
    if (sndbuf > 0) {
        setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
        setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
    }
}

/* Steps both handshakes until neither makes progress; the results. */
static void
shake(struct tls_conn *s, struct tls_conn *c, int *rs, int *rc)
{
    *rs = *rc = -EAGAIN;
    for (int i = 0; i < 100 && (*rs == -EAGAIN || *rc == -EAGAIN); i++) {
        if (*rc == -EAGAIN)
            *rc = tls_handshake(c);
        if (*rs == -EAGAIN)
            *rs = tls_handshake(s);
    }
}

struct duo {
    struct tls_ctx *sctx, *cctx;
    struct tls_conn *s, *c;
    int sv[2];
};

static void
duo_open(struct duo *d, const char *ca, const char *host, bool insecure,
         const char *client_ca, int sndbuf)
{
    struct mt_err err = {0};

    d->sctx = tls_ctx_server_new(srv_pem, NULL, client_ca, &err);
    assert_non_null(d->sctx);
    d->cctx = tls_ctx_client_new(ca, insecure, &err);
    assert_non_null(d->cctx);
    pair(d->sv, sndbuf);
    d->s = tls_conn_new(d->sctx, d->sv[0], NULL);
    d->c = tls_conn_new(d->cctx, d->sv[1], host);
    assert_non_null(d->s);
    assert_non_null(d->c);
}

static void
duo_close(struct duo *d)
{
    tls_conn_free(d->s);
    tls_conn_free(d->c);
    tls_ctx_free(d->sctx);
    tls_ctx_free(d->cctx);
    close(d->sv[0]);
    close(d->sv[1]);
}

static void
test_tls_data_both_ways(void **state)
{
    struct tls_info ci, si;
    struct duo d;
    char buf[64], desc[96];
    bool more;
    int rs, rc;

    (void)state;
    duo_open(&d, ca_pem, "localhost", false, NULL, 0);
    assert_int_equal(tls_recv(d.s, buf, sizeof(buf), &more), -1);
    shake(d.s, d.c, &rs, &rc);
    assert_int_equal(rs, 0);
    assert_int_equal(rc, 0);
    assert_true(tls_conn_ready(d.s) && tls_conn_ready(d.c));
    tls_conn_desc(d.c, desc, sizeof(desc));
    assert_non_null(strstr(desc, "TLSv1.3"));
    /* what the trace's tls record holds: both ends agree */
    tls_conn_info(d.c, &ci);
    tls_conn_info(d.s, &si);
    assert_string_equal(ci.version, "TLSv1.3");
    assert_string_equal(si.version, ci.version);
    assert_true(strncmp(ci.cipher, "TLS_", 4) == 0);
    assert_string_equal(si.cipher, ci.cipher);
    assert_string_equal(si.group, ci.group);
    assert_true(ci.group[0] != '\0');
    assert_string_equal(ci.sni, "localhost"); /* sent */
    assert_string_equal(si.sni, "localhost"); /* received */
    assert_true(ci.peer_cert && ci.peer_verified && !ci.resumed);
    assert_false(si.peer_cert || si.peer_verified || si.resumed);
    assert_int_equal(tls_conn_version(d.s), 0x0304);
    assert_int_equal(tls_conn_cause(d.s), TLS_CAUSE_NONE);
    /* nothing yet: EAGAIN, not EOF */
    errno = 0;
    assert_int_equal(tls_recv(d.s, buf, sizeof(buf), &more), -1);
    assert_int_equal(errno, EAGAIN);
    assert_false(more);
    assert_int_equal(tls_send(d.c, "hello", 5), 5);
    assert_int_equal(tls_recv(d.s, buf, sizeof(buf), &more), 5);
    assert_false(more);
    assert_memory_equal(buf, "hello", 5);
    assert_int_equal(tls_send(d.s, "world!", 6), 6);
    /* a small buffer: *more, and the rest is there without an event */
    assert_int_equal(tls_recv(d.c, buf, 4, &more), 4);
    assert_true(more);
    assert_true(tls_pending(d.c));
    assert_int_equal(tls_recv(d.c, buf + 4, 4, &more), 2);
    assert_false(more);
    assert_memory_equal(buf, "world!", 6);
    duo_close(&d);
}

/* A write to a full socket: a partial count, then EAGAIN; the rest goes
 * out from another buffer (moved) once the peer read. */
static void
test_tls_partial_write_moving_buffer(void **state)
{
    enum { N = 1 << 20 };
    struct duo d;
    uint8_t *src = malloc(N), *moved = malloc(N), *dst = malloc(N);
    size_t put = 0, got = 0;
    bool more;
    int rs, rc, rounds = 0;

    (void)state;
    assert_non_null(src);
    assert_non_null(moved);
    assert_non_null(dst);
    for (size_t i = 0; i < N; i++)
        src[i] = (uint8_t)(i * 7 + i / 251);
    duo_open(&d, ca_pem, "localhost", false, NULL, 16384);
    shake(d.s, d.c, &rs, &rc);
    assert_int_equal(rs | rc, 0);
    while (got < N) {
        if (put < N) {
            /* retry from a different address each time (as the proxy's
             * out buffer may move) */
            uint8_t *from = rounds % 2 ? moved : src;
            memcpy(moved, src, N);
            ssize_t w = tls_send(d.s, from + put, N - put);
            if (w < 0)
                assert_int_equal(errno, EAGAIN);
            else
                put += (size_t)w;
        }
        ssize_t r = tls_recv(d.c, dst + got, N - got, &more);
        if (r < 0)
            assert_int_equal(errno, EAGAIN);
        else
            got += (size_t)r;
        rounds++;
        assert_true(rounds < 100000);
    }
    assert_true(rounds > 2); /* it did block on the full socket */
    assert_memory_equal(src, dst, N);
    duo_close(&d);
    free(src);
    free(moved);
    free(dst);
}

static void
test_tls_close_notify_after_data(void **state)
{
    struct duo d;
    char buf[64];
    bool more;
    int rs, rc;

    (void)state;
    duo_open(&d, ca_pem, "localhost", false, NULL, 0);
    shake(d.s, d.c, &rs, &rc);
    assert_int_equal(rs | rc, 0);
    assert_int_equal(tls_send(d.c, "last", 4), 4);
    tls_close_notify(d.c);
    shutdown(d.sv[1], SHUT_WR);
    /* the data first, flagged to read on; then EOF, twice */
    assert_int_equal(tls_recv(d.s, buf, sizeof(buf), &more), 4);
    assert_true(more);
    assert_true(tls_pending(d.s));
    assert_int_equal(tls_recv(d.s, buf, sizeof(buf), &more), 0);
    assert_int_equal(tls_recv(d.s, buf, sizeof(buf), &more), 0);
    /* a TCP close without close_notify is an EOF too */
    close(d.sv[0]);
    d.sv[0] = -1;
    assert_int_equal(tls_recv(d.c, buf, sizeof(buf), &more), 0);
    duo_close(&d);
}

static void
test_tls_verify_failures(void **state)
{
    struct tls_info ci;
    struct duo d;
    int rs, rc;

    (void)state;
    /* a CA that did not sign the server */
    duo_open(&d, other_ca_pem, "localhost", false, NULL, 0);
    shake(d.s, d.c, &rs, &rc);
    assert_int_equal(rc, MT_EPROTO);
    assert_int_equal(rs, MT_EPROTO);
    assert_non_null(strstr(tls_conn_why(d.c), "certificate verify failed"));
    assert_non_null(strstr(tls_conn_why(d.s), "unknown ca"));
    assert_int_equal(tls_conn_cause(d.c), TLS_CAUSE_PEER_CERT);
    assert_int_equal(tls_conn_cause(d.s), TLS_CAUSE_CERT_REFUSED);
    assert_int_equal(tls_conn_version(d.s), 0);
    duo_close(&d);
    /* the right CA, a name the certificate does not have */
    duo_open(&d, ca_pem, "db.example.net", false, NULL, 0);
    shake(d.s, d.c, &rs, &rc);
    assert_int_equal(rc, MT_EPROTO);
    assert_non_null(strstr(tls_conn_why(d.c), "hostname mismatch"));
    assert_int_equal(rs, MT_EPROTO); /* the client's alert */
    assert_int_equal(tls_conn_cause(d.s), TLS_CAUSE_CERT_REFUSED);
    duo_close(&d);
    /* an IP address the SAN lists, and one it does not */
    duo_open(&d, ca_pem, "127.0.0.1", false, NULL, 0);
    shake(d.s, d.c, &rs, &rc);
    assert_int_equal(rs | rc, 0);
    duo_close(&d);
    duo_open(&d, ca_pem, "127.0.0.2", false, NULL, 0);
    shake(d.s, d.c, &rs, &rc);
    assert_int_equal(rc, MT_EPROTO);
    assert_non_null(strstr(tls_conn_why(d.c), "IP address mismatch"));
    duo_close(&d);
    /* insecure: anything goes */
    duo_open(&d, other_ca_pem, "db.example.net", true, NULL, 0);
    assert_false(tls_ctx_verifies(d.cctx));
    shake(d.s, d.c, &rs, &rc);
    assert_int_equal(rs | rc, 0);
    tls_conn_info(d.c, &ci); /* a certificate, not verified */
    assert_true(ci.peer_cert && !ci.peer_verified);
    assert_string_equal(ci.sni, "db.example.net");
    duo_close(&d);
}

static void
test_tls_client_certificate_required(void **state)
{
    struct tls_info si;
    struct mt_err err = {0};
    struct duo d;
    char buf[8];
    bool more;
    int rs, rc;

    (void)state;
    /* no client certificate: the server refuses (TLS 1.3 tells the
     * client at its first read) */
    duo_open(&d, ca_pem, "localhost", false, ca_pem, 0);
    assert_true(tls_ctx_verifies(d.sctx));
    shake(d.s, d.c, &rs, &rc);
    assert_int_equal(rs, MT_EPROTO);
    assert_non_null(strstr(tls_conn_why(d.s), "certificate"));
    assert_int_equal(tls_conn_cause(d.s), TLS_CAUSE_NO_CERT);
    duo_close(&d);
    /* with one */
    duo_open(&d, ca_pem, "localhost", false, ca_pem, 0);
    tls_ctx_free(d.cctx);
    tls_conn_free(d.c);
    d.cctx = tls_ctx_client_new(ca_pem, false, &err);
    assert_non_null(d.cctx);
    assert_non_null(d.cctx);
    assert_int_equal(tls_ctx_client_cert(d.cctx, cli_pem, NULL, &err), 0);
    d.c = tls_conn_new(d.cctx, d.sv[1], "localhost");
    shake(d.s, d.c, &rs, &rc);
    assert_int_equal(rs | rc, 0);
    tls_conn_info(d.s, &si); /* the client's certificate, verified */
    assert_true(si.peer_cert && si.peer_verified);
    assert_int_equal(tls_send(d.c, "x", 1), 1);
    assert_int_equal(tls_recv(d.s, buf, sizeof(buf), &more), 1);
    duo_close(&d);
}

/* A connected pair of non-blocking TCP sockets on 127.0.0.1, sv[0] the
 * accepted one (a close with unread data resets: TCP, not AF_UNIX). */
static void
tcp_pair(int sv[2])
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof(a);
    int ls = socket(AF_INET, SOCK_STREAM, 0);

    assert_true(ls >= 0);
    assert_int_equal(bind(ls, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(ls, 1), 0);
    assert_int_equal(getsockname(ls, (struct sockaddr *)&a, &alen), 0);
    sv[1] = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(sv[1] >= 0);
    assert_int_equal(connect(sv[1], (struct sockaddr *)&a, sizeof(a)), 0);
    sv[0] = accept4(ls, NULL, NULL, SOCK_NONBLOCK);
    assert_true(sv[0] >= 0);
    assert_int_equal(fcntl(sv[1], F_SETFL, O_NONBLOCK), 0);
    close(ls);
}

/* Waits (at most 5 s) until fd reports one of events. */
static void
wait_for(int fd, short events)
{
    struct pollfd p = {.fd = fd, .events = events};

    assert_int_equal(poll(&p, 1, 5000), 1);
    assert_true(p.revents & (events | POLLERR | POLLHUP));
}

/*
 * TLS 1.3, a server that requires a client certificate we do not have:
 * our handshake ends before the server refuses, and its alert ("certificate
 * required") comes after.  The server closes with our first bytes unread,
 * so its TCP resets; our next write meets the reset before we read.  The
 * alert was queued before the reset and must still be read and reported
 * (EPROTO and its reason), not lost behind the write's ECONNRESET.
 */
static void
test_tls_alert_read_after_write_reset(void **state)
{
    struct mt_err err = {0};
    struct tls_ctx *sctx = tls_ctx_server_new(srv_pem, NULL, ca_pem, &err);
    struct tls_ctx *cctx = tls_ctx_client_new(ca_pem, false, &err);
    struct tls_conn *s, *c;
    char buf[64];
    bool more;
    int sv[2], rs, rc;

    (void)state;
    assert_non_null(sctx);
    assert_non_null(cctx);
    tcp_pair(sv);
    s = tls_conn_new(sctx, sv[0], NULL);
    c = tls_conn_new(cctx, sv[1], "localhost");
    assert_non_null(s);
    assert_non_null(c);
    shake(s, c, &rs, &rc);
    assert_int_equal(rc, 0);         /* ours is done (TLS 1.3) */
    assert_int_equal(rs, MT_EPROTO); /* the server refused, alert sent */
    assert_int_equal(tls_conn_version(c), 0x0304); /* TLS 1.3 */
    assert_int_equal(tls_send(c, "hello", 5), 5);
    wait_for(sv[0], POLLIN);
    tls_conn_free(s);
    close(sv[0]); /* "hello" unread: a reset */
    wait_for(sv[1], POLLERR);
    assert_int_equal(tls_send(c, "more", 4), -1);
    assert_true(errno == ECONNRESET || errno == EPIPE);
    assert_int_equal(tls_send(c, "more", 4), -1); /* and stays so */
    assert_true(errno == ECONNRESET || errno == EPIPE);
    tls_close_notify(c); /* nothing to send it on: a no-op */
    /* the alert, read after the reset */
    assert_int_equal(tls_recv(c, buf, sizeof(buf), &more), -1);
    assert_int_equal(errno, EPROTO);
    assert_false(more);
    assert_non_null(strstr(tls_conn_why(c), "certificate required"));
    assert_int_equal(tls_recv(c, buf, sizeof(buf), &more), -1);
    assert_int_equal(errno, EPROTO);
    tls_conn_free(c);
    close(sv[1]);
    tls_ctx_free(sctx);
    tls_ctx_free(cctx);
}

/* A server handshake on sv[0] after what the peer sent (len bytes of
 * bytes, then nothing more or, close_after, a TCP close): its cause. */
static enum tls_cause
server_cause(const void *bytes, size_t len, bool close_after)
{
    struct mt_err err = {0};
    struct tls_ctx *ctx = tls_ctx_server_new(srv_pem, NULL, NULL, &err);
    struct tls_conn *s;
    enum tls_cause cause;
    int sv[2], rc = -EAGAIN;

    assert_non_null(ctx);
    pair(sv, 0);
    s = tls_conn_new(ctx, sv[0], NULL);
    assert_non_null(s);
    if (len > 0)
        assert_int_equal(write(sv[1], bytes, len), (ssize_t)len);
    if (close_after)
        close(sv[1]);
    for (int i = 0; i < 10 && rc == -EAGAIN; i++)
        rc = tls_handshake(s);
    assert_int_equal(rc, MT_EPROTO);
    assert_false(tls_conn_ready(s));
    cause = tls_conn_cause(s);
    tls_conn_free(s);
    tls_ctx_free(ctx);
    close(sv[0]);
    if (!close_after)
        close(sv[1]);
    return cause;
}

static void
test_tls_failure_causes(void **state)
{
    /* a plain OP_MSG hello {hello: 1, $db: "admin"} */
    static const uint8_t hello[] = {
        0x34, 0x00, 0x00, 0x00,                   /* 0: messageLength 52 */
        0x01, 0x00, 0x00, 0x00,                   /* 4: requestID */
        0x00, 0x00, 0x00, 0x00,                   /* 8: responseTo */
        0xdd, 0x07, 0x00, 0x00,                   /* 12: opCode 2013 OP_MSG */
        0x00, 0x00, 0x00, 0x00,                   /* 16: flagBits */
        0x00,                                     /* 20: section kind 0 */
        0x1f, 0x00, 0x00, 0x00,                   /* 21: document length 31 */
        0x10, 'h',  'e',  'l',  'l',  'o',  0x00, /* 25: int32 "hello" */
        0x01, 0x00, 0x00, 0x00,                   /* 32: 1 */
        0x02, '$',  'd',  'b',  0x00,             /* 36: string "$db" */
        0x06, 0x00, 0x00, 0x00,                   /* 41: its length 6 */
        'a',  'd',  'm',  'i',  'n',  0x00,       /* 45: "admin" */
        0x00,                                     /* 51: end of document */
    };
    static const char http[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    struct mt_err err = {0};
    struct duo d;
    int rs, rc;

    (void)state;
    assert_int_equal(hello[0], sizeof(hello));
    assert_int_equal(server_cause(hello, sizeof(hello), false),
                     TLS_CAUSE_NOT_TLS);
    assert_int_equal(server_cause(http, strlen(http), false),
                     TLS_CAUSE_NOT_TLS);
    /* a peer that closes before or in the middle of its ClientHello */
    assert_int_equal(server_cause(NULL, 0, true), TLS_CAUSE_CLOSED);
    assert_int_equal(server_cause("\x16\x03\x01\x02\x00\x01", 6, true),
                     TLS_CAUSE_CLOSED);
    /* a client certificate of a CA the server does not take (the other
     * CA's own, self-signed) */
    duo_open(&d, ca_pem, "localhost", false, ca_pem, 0);
    tls_conn_free(d.c);
    tls_ctx_free(d.cctx);
    d.cctx = tls_ctx_client_new(ca_pem, false, &err);
    assert_non_null(d.cctx);
    assert_int_equal(tls_ctx_client_cert(d.cctx, other_ca_pem, other_key, &err),
                     0);
    d.c = tls_conn_new(d.cctx, d.sv[1], "localhost");
    shake(d.s, d.c, &rs, &rc);
    assert_int_equal(rs, MT_EPROTO);
    assert_int_equal(tls_conn_cause(d.s), TLS_CAUSE_PEER_CERT);
    assert_non_null(strstr(tls_conn_why(d.s), "certificate"));
    duo_close(&d);
}

static void
test_tls_ctx_errors(void **state)
{
    struct mt_err err = {0};
    char missing[160];

    (void)state;
    snprintf(missing, sizeof(missing), "%s/nope.pem", dir);
    assert_null(tls_ctx_server_new(missing, NULL, NULL, &err));
    assert_int_equal(err.code, -ENOENT);
    assert_non_null(strstr(err.msg, "nope.pem"));
    /* a certificate file without its key */
    memset(&err, 0, sizeof(err));
    assert_null(tls_ctx_server_new(srv_crt, NULL, NULL, &err));
    assert_non_null(strstr(err.msg, "private key"));
    /* a key that is not the certificate's */
    memset(&err, 0, sizeof(err));
    assert_null(tls_ctx_server_new(srv_crt, other_key, NULL, &err));
    assert_non_null(strstr(err.msg, "does not match"));
    /* separate files are fine */
    struct tls_ctx *ok = tls_ctx_server_new(srv_crt, srv_key, NULL, &err);
    assert_non_null(ok);
    tls_ctx_free(ok);
    tls_ctx_free(NULL);
    tls_conn_free(NULL);
    /* a CA file that is not PEM */
    memset(&err, 0, sizeof(err));
    assert_null(tls_ctx_client_new(srv_key, false, &err));
    assert_non_null(strstr(err.msg, "CA file"));
    assert_true(tls_host_is_ip("127.0.0.1") && tls_host_is_ip("::1"));
    assert_false(tls_host_is_ip("localhost"));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tls_data_both_ways),
        cmocka_unit_test(test_tls_partial_write_moving_buffer),
        cmocka_unit_test(test_tls_close_notify_after_data),
        cmocka_unit_test(test_tls_verify_failures),
        cmocka_unit_test(test_tls_client_certificate_required),
        cmocka_unit_test(test_tls_alert_read_after_write_reset),
        cmocka_unit_test(test_tls_failure_causes),
        cmocka_unit_test(test_tls_ctx_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
