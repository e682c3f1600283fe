/*
 * tls.c -- TLS contexts and non-blocking connections on OpenSSL (see
 * tls.h).  No cryptography here: OpenSSL does all of it; this file picks
 * the settings, maps results to the recv()/send() convention and turns
 * OpenSSL's error queue into one line for the logs.
 */
#include "tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "mem.h"

struct tls_ctx {
    SSL_CTX *ssl_ctx; /* owned */
    bool server;
    bool verify; /* client: verify the server's certificate */
};

struct tls_conn {
    SSL *ssl; /* owned */
    bool server, verify;
    bool ready;      /* handshake done */
    bool failed;     /* a fatal error: no more OpenSSL calls but free */
    bool notified;   /* close_notify sent */
    bool want_write; /* the last handshake step or tls_recv needs the
                        socket writable */
    /* A write met the peer's reset (ECONNRESET, EPIPE): the errno every
     * later tls_send reports.  Reads go on: what the peer sent before it
     * reset, such as the alert that says why it refused us, still waits
     * in the socket, and tls_recv reports it. */
    int wgone_errno;
    /* A result to report at the next tls_recv (the call that met it had
     * bytes to return first): 1 EOF, 2 the failure (fail_errno). */
    int stash;
    int fail_errno;       /* once failed: the errno every later call reports */
    enum tls_cause cause; /* once failed: why, for statistics */
    char why[TLS_WHY_LEN];
};

/* Appends OpenSSL's queued reasons to out (n bytes) and empties the
 * queue. */
static void
tls_collect(char *out, size_t n)
{
    unsigned long e;
    size_t len = strlen(out);

    while ((e = ERR_get_error()) != 0) {
        const char *r = ERR_reason_error_string(e);
        char tmp[128];
        if (r == NULL) {
            ERR_error_string_n(e, tmp, sizeof(tmp));
            r = tmp;
        }
        if (len + 3 < n) {
            snprintf(out + len, n - len, "%s%s", len ? "; " : "", r);
            len = strlen(out);
        }
    }
}

static int
tls_ctx_fail(struct mt_err *err, SSL_CTX *ctx, const char *what,
             const char *path)
{
    char why[TLS_WHY_LEN] = "";

    tls_collect(why, sizeof(why));
    SSL_CTX_free(ctx);
    return mt_err_set(err, -EINVAL, 0, "%s %s: %s", what, path,
                      why[0] ? why : "rejected by OpenSSL");
}

/* Settings both roles share. */
static SSL_CTX *
tls_ctx_base(const SSL_METHOD *m)
{
    SSL_CTX *ctx = SSL_CTX_new(m);

    if (ctx == NULL)
        return NULL;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION
#ifdef SSL_OP_IGNORE_UNEXPECTED_EOF
                                 | SSL_OP_IGNORE_UNEXPECTED_EOF
#endif
    );
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
                              SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    return ctx;
}

/* A readable regular file, or err set with errno's text. */
static int
tls_check_file(const char *what, const char *path, struct mt_err *err)
{
    FILE *f = fopen(path, "r");

    if (f == NULL)
        return mt_err_set(err, -errno, 0, "%s %s: %s", what, path,
                          strerror(errno));
    fclose(f);
    return 0;
}

static struct tls_ctx *
tls_ctx_wrap(SSL_CTX *ssl_ctx, bool server, bool verify, struct mt_err *err)
{
    struct tls_ctx *ctx = mt_calloc(1, sizeof(*ctx));

    if (ctx == NULL) {
        SSL_CTX_free(ssl_ctx);
        mt_err_set(err, -ENOMEM, 0, "out of memory for a TLS context");
        return NULL;
    }
    ctx->ssl_ctx = ssl_ctx;
    ctx->server = server;
    ctx->verify = verify;
    return ctx;
}

/* Loads the certificate chain and its key (key_path, or cert_path when
 * NULL) into ctx and checks they match; 0 or err set (ctx kept). */
static int
tls_ctx_use_cert(SSL_CTX *ctx, const char *cert_path, const char *key_path,
                 struct mt_err *err)
{
    const char *key = key_path != NULL ? key_path : cert_path;
    char why[TLS_WHY_LEN] = "";

    if (tls_check_file("TLS certificate", cert_path, err) < 0 ||
        tls_check_file("TLS private key", key, err) < 0)
        return err->code;
    ERR_clear_error();
    if (SSL_CTX_use_certificate_chain_file(ctx, cert_path) != 1) {
        tls_collect(why, sizeof(why));
        return mt_err_set(err, -EINVAL, 0, "TLS certificate (PEM) %s: %s",
                          cert_path, why[0] ? why : "rejected by OpenSSL");
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
        tls_collect(why, sizeof(why));
        if (strstr(why, "mismatch") != NULL)
            return mt_err_set(err, -EINVAL, 0,
                              "TLS private key %s does not match the "
                              "certificate %s",
                              key, cert_path);
        return mt_err_set(err, -EINVAL, 0, "TLS private key (PEM%s) %s: %s",
                          key_path != NULL ? ""
                                           : ", expected in the certificate "
                                             "file",
                          key, why[0] ? why : "rejected by OpenSSL");
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        ERR_clear_error();
        return mt_err_set(err, -EINVAL, 0,
                          "TLS private key %s does not match the certificate "
                          "%s",
                          key, cert_path);
    }
    return 0;
}

/* See tls.h. */
struct tls_ctx *
tls_ctx_server_new(const char *cert_path, const char *key_path,
                   const char *ca_path, struct mt_err *err)
{
    SSL_CTX *ctx;

    if (ca_path != NULL && tls_check_file("TLS CA file", ca_path, err) < 0)
        return NULL;
    ERR_clear_error();
    if ((ctx = tls_ctx_base(TLS_server_method())) == NULL) {
        mt_err_set(err, -ENOMEM, 0, "cannot create a TLS context");
        return NULL;
    }
    /* No resumption: no tickets, no cache (drivers open long-lived
     * pooled connections). */
    SSL_CTX_set_num_tickets(ctx, 0);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    if (tls_ctx_use_cert(ctx, cert_path, key_path, err) < 0) {
        SSL_CTX_free(ctx);
        return NULL;
    }
    if (ca_path != NULL) {
        STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(ca_path);
        if (names == NULL ||
            SSL_CTX_load_verify_locations(ctx, ca_path, NULL) != 1) {
            sk_X509_NAME_pop_free(names, X509_NAME_free);
            tls_ctx_fail(err, ctx, "TLS CA file (PEM)", ca_path);
            return NULL;
        }
        SSL_CTX_set_client_CA_list(ctx, names);
        SSL_CTX_set_verify(
            ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    }
    return tls_ctx_wrap(ctx, true, ca_path != NULL, err);
}

/* See tls.h. */
struct tls_ctx *
tls_ctx_client_new(const char *ca_path, bool insecure, struct mt_err *err)
{
    SSL_CTX *ctx;

    if (ca_path != NULL && tls_check_file("TLS CA file", ca_path, err) < 0)
        return NULL;
    ERR_clear_error();
    if ((ctx = tls_ctx_base(TLS_client_method())) == NULL) {
        mt_err_set(err, -ENOMEM, 0, "cannot create a TLS context");
        return NULL;
    }
    if (insecure) {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    } else {
        if (ca_path != NULL
                ? SSL_CTX_load_verify_locations(ctx, ca_path, NULL) != 1
                : SSL_CTX_set_default_verify_paths(ctx) != 1) {
            tls_ctx_fail(err, ctx, "TLS CA file (PEM)",
                         ca_path != NULL ? ca_path : "(system default)");
            return NULL;
        }
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    }
    return tls_ctx_wrap(ctx, false, !insecure, err);
}

/* See tls.h. */
int
tls_ctx_client_cert(struct tls_ctx *ctx, const char *cert_path,
                    const char *key_path, struct mt_err *err)
{
    return tls_ctx_use_cert(ctx->ssl_ctx, cert_path, key_path, err);
}

/* See tls.h. */
bool
tls_ctx_verifies(const struct tls_ctx *ctx)
{
    return ctx->verify;
}

/* See tls.h. */
void
tls_ctx_free(struct tls_ctx *ctx)
{
    if (ctx == NULL)
        return;
    SSL_CTX_free(ctx->ssl_ctx);
    mt_free(ctx);
}

/* See tls.h. */
bool
tls_host_is_ip(const char *host)
{
    unsigned char a[sizeof(struct in6_addr)];

    return inet_pton(AF_INET, host, a) == 1 ||
           inet_pton(AF_INET6, host, a) == 1;
}

/* See tls.h. */
struct tls_conn *
tls_conn_new(struct tls_ctx *ctx, int fd, const char *host)
{
    struct tls_conn *c = mt_calloc(1, sizeof(*c));
    bool ip;

    if (c == NULL)
        return NULL;
    ERR_clear_error();
    c->ssl = SSL_new(ctx->ssl_ctx);
    if (c->ssl == NULL || SSL_set_fd(c->ssl, fd) != 1)
        goto fail;
    c->server = ctx->server;
    c->verify = ctx->verify;
    if (ctx->server) {
        SSL_set_accept_state(c->ssl);
        return c;
    }
    SSL_set_connect_state(c->ssl);
    if (host == NULL)
        return c;
    ip = tls_host_is_ip(host); /* an IP: no SNI, checked against IP SANs */
    if (!ip && SSL_set_tlsext_host_name(c->ssl, host) != 1)
        goto fail;
    if (ctx->verify &&
        (ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), host) != 1
            : SSL_set1_host(c->ssl, host) != 1))
        goto fail;
    return c;
fail:
    ERR_clear_error();
    SSL_free(c->ssl);
    mt_free(c);
    return NULL;
}

/* See tls.h. */
void
tls_conn_free(struct tls_conn *c)
{
    if (c == NULL)
        return;
    SSL_free(c->ssl);
    mt_free(c);
}

/* See tls.h. */
bool
tls_conn_ready(const struct tls_conn *c)
{
    return c->ready;
}

/* See tls.h. */
const char *
tls_conn_why(const struct tls_conn *c)
{
    return c->why;
}

/* See tls.h. */
bool
tls_wants_write(const struct tls_conn *c)
{
    return c->want_write;
}

/* See tls.h. */
bool
tls_pending(const struct tls_conn *c)
{
    return c->stash != 0 || SSL_pending(c->ssl) > 0;
}

/* The cause of a TLS error (SSL_ERROR_SSL) whose first queued reason is
 * err, the certificate check's verdict being verify. */
static enum tls_cause
tls_cause_of(unsigned long err, long verify)
{
    if (verify != X509_V_OK)
        return TLS_CAUSE_PEER_CERT;
    if (ERR_GET_LIB(err) != ERR_LIB_SSL)
        return TLS_CAUSE_OTHER;
    switch (ERR_GET_REASON(err)) {
    case SSL_R_WRONG_VERSION_NUMBER: /* no TLS record header */
    case SSL_R_HTTP_REQUEST:
    case SSL_R_HTTPS_PROXY_REQUEST:
    case SSL_R_UNKNOWN_PROTOCOL:
    case SSL_R_PACKET_LENGTH_TOO_LONG:
    case SSL_R_RECORD_LENGTH_MISMATCH:
        return TLS_CAUSE_NOT_TLS;
    case SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE:
        return TLS_CAUSE_NO_CERT;
    case SSL_R_CERTIFICATE_VERIFY_FAILED:
        return TLS_CAUSE_PEER_CERT;
    case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE: /* the peer's alerts */
    case SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
    case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
        return TLS_CAUSE_CERT_REFUSED;
    case SSL_R_UNEXPECTED_EOF_WHILE_READING:
        return TLS_CAUSE_CLOSED;
    default:
        return TLS_CAUSE_OTHER;
    }
}

/*
 * Fills c->why after OpenSSL call result r failed with SSL_get_error e
 * (not WANT_*); returns the errno to report.  The certificate check's
 * verdict is added when it failed.
 */
static int
tls_fail(struct tls_conn *c, int e, int saved_errno)
{
    long v = SSL_get_verify_result(c->ssl);

    c->failed = true;
    c->fail_errno = EPROTO;
    c->why[0] = '\0';
    c->cause = e == SSL_ERROR_SYSCALL || e == SSL_ERROR_ZERO_RETURN
                   ? TLS_CAUSE_CLOSED
                   : tls_cause_of(ERR_peek_error(), v);
    if (e == SSL_ERROR_SYSCALL) {
        tls_collect(c->why, sizeof(c->why));
        if (c->why[0] == '\0')
            snprintf(c->why, sizeof(c->why), "%s",
                     saved_errno ? strerror(saved_errno)
                                 : "the peer closed the connection");
        c->fail_errno = saved_errno ? saved_errno : ECONNRESET;
        return c->fail_errno;
    }
    if (e == SSL_ERROR_ZERO_RETURN) {
        snprintf(c->why, sizeof(c->why), "the peer closed the connection");
        c->fail_errno = ECONNRESET;
        return ECONNRESET;
    }
    tls_collect(c->why, sizeof(c->why));
    if (c->why[0] == '\0')
        snprintf(c->why, sizeof(c->why), "TLS error %d", e);
    if (v != X509_V_OK) {
        size_t len = strlen(c->why);
        snprintf(c->why + len, sizeof(c->why) - len, " (certificate: %s)",
                 X509_verify_cert_error_string(v));
    }
    return EPROTO;
}

/* See tls.h. */
int
tls_handshake(struct tls_conn *c)
{
    int r, e, se;

    if (c->ready)
        return 0;
    if (c->failed)
        return MT_EPROTO;
    c->want_write = false;
    ERR_clear_error();
    errno = 0;
    r = SSL_do_handshake(c->ssl);
    se = errno;
    if (r == 1) {
        c->ready = true;
        return 0;
    }
    e = SSL_get_error(c->ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        c->want_write = e == SSL_ERROR_WANT_WRITE;
        return -EAGAIN;
    }
    if (e == SSL_ERROR_SYSCALL && se == 0 && ERR_peek_error() == 0) {
        c->failed = true;
        c->fail_errno = ECONNRESET;
        c->cause = TLS_CAUSE_CLOSED;
        snprintf(c->why, sizeof(c->why),
                 "the peer closed the connection during the handshake");
        return MT_EPROTO;
    }
    (void)tls_fail(c, e, se);
    return MT_EPROTO;
}

/* Reports a stashed result: 0 (EOF) or -1 with errno. */
static ssize_t
tls_unstash(struct tls_conn *c)
{
    int s = c->stash;

    c->stash = 0;
    if (s == 1)
        return 0;
    errno = c->fail_errno;
    return -1;
}

/* See tls.h. */
ssize_t
tls_recv(struct tls_conn *c, void *buf, size_t len, bool *more)
{
    size_t got = 0;

    *more = false;
    c->want_write = false;
    if (c->stash)
        return tls_unstash(c);
    if (c->failed) {
        errno = c->fail_errno;
        return -1;
    }
    while (got < len) {
        size_t n = 0;
        int r, e, se;
        ERR_clear_error();
        errno = 0;
        r = SSL_read_ex(c->ssl, (char *)buf + got, len - got, &n);
        se = errno;
        if (r == 1) {
            got += n;
            continue;
        }
        e = SSL_get_error(c->ssl, r);
        if (e == SSL_ERROR_WANT_READ)
            break;
        if (e == SSL_ERROR_WANT_WRITE) {
            c->want_write = true;
            break;
        }
        if (e == SSL_ERROR_ZERO_RETURN ||
            (e == SSL_ERROR_SYSCALL && se == 0 && ERR_peek_error() == 0)) {
            c->stash = 1; /* EOF: close_notify, or TCP closed without it */
        } else {
            c->stash = 2;
            (void)tls_fail(c, e, se);
        }
        if (got == 0)
            return tls_unstash(c);
        *more = true;
        return (ssize_t)got;
    }
    if (got == 0) {
        errno = EAGAIN;
        return -1;
    }
    *more = got == len;
    return (ssize_t)got;
}

/* See tls.h. */
ssize_t
tls_send(struct tls_conn *c, const void *buf, size_t len)
{
    size_t put = 0;

    if (c->failed || c->wgone_errno) {
        errno = c->failed ? c->fail_errno : c->wgone_errno;
        return -1;
    }
    while (put < len) {
        size_t n = 0;
        int r, e, se;
        ERR_clear_error();
        errno = 0;
        r = SSL_write_ex(c->ssl, (const char *)buf + put, len - put, &n);
        se = errno;
        if (r == 1) {
            put += n;
            continue;
        }
        e = SSL_get_error(c->ssl, r);
        if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ)
            break;
        if (e == SSL_ERROR_SYSCALL && (se == ECONNRESET || se == EPIPE)) {
            ERR_clear_error(); /* the reset: not a TLS failure (yet) */
            c->wgone_errno = se;
        } else {
            se = tls_fail(c, e, se);
        }
        if (put > 0)
            return (ssize_t)put; /* the next call reports the failure */
        errno = se;
        return -1;
    }
    if (put == 0) {
        errno = EAGAIN;
        return -1;
    }
    return (ssize_t)put;
}

/* See tls.h. */
void
tls_close_notify(struct tls_conn *c)
{
    if (c->failed || !c->ready || c->notified || c->wgone_errno)
        return;
    c->notified = true;
    ERR_clear_error();
    (void)SSL_shutdown(c->ssl);
    ERR_clear_error();
}

/* See tls.h. */
void
tls_conn_desc(const struct tls_conn *c, char *out, size_t n)
{
    snprintf(out, n, "%s %s", SSL_get_version(c->ssl),
             SSL_get_cipher_name(c->ssl));
}

/* See tls.h. */
void
tls_conn_info(const struct tls_conn *c, struct tls_info *out)
{
    const SSL_CIPHER *ci = SSL_get_current_cipher(c->ssl);
    const char *name = ci != NULL ? SSL_CIPHER_standard_name(ci) : NULL;
    const char *sni = SSL_get_servername(c->ssl, TLSEXT_NAMETYPE_host_name);
    int nid = SSL_get_negotiated_group(c->ssl);
    const char *group =
        nid > 0 && !(nid & TLSEXT_nid_unknown) ? OBJ_nid2sn(nid) : NULL;

    memset(out, 0, sizeof(*out));
    snprintf(out->version, sizeof(out->version), "%s", SSL_get_version(c->ssl));
    if (name == NULL && ci != NULL)
        name = SSL_CIPHER_get_name(ci);
    snprintf(out->cipher, sizeof(out->cipher), "%s", name ? name : "");
    snprintf(out->group, sizeof(out->group), "%s", group ? group : "");
    snprintf(out->sni, sizeof(out->sni), "%s", sni ? sni : "");
    out->resumed = SSL_session_reused(c->ssl) == 1;
    out->peer_cert = SSL_get0_peer_certificate(c->ssl) != NULL;
    out->peer_verified = out->peer_cert && c->verify &&
                         SSL_get_verify_result(c->ssl) == X509_V_OK;
}

/* See tls.h. */
int
tls_conn_version(const struct tls_conn *c)
{
    return c->ready ? SSL_version(c->ssl) : 0;
}

/* See tls.h. */
enum tls_cause
tls_conn_cause(const struct tls_conn *c)
{
    return c->failed ? c->cause : TLS_CAUSE_NONE;
}
