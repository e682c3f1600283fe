/*
 * tls.h -- TLS for the capture proxy and replay, on OpenSSL (libssl).
 *
 * Two objects: a context (struct tls_ctx: one per role, built once from
 * PEM files at start and shared read-only by every loop thread) and a
 * connection (struct tls_conn: one per TLS socket, used only by the thread
 * of its loop).  Sockets stay non-blocking and are watched by core/loop;
 * the calls here never block and translate OpenSSL's results into the
 * recv()/send() convention the callers already have:
 *
 *   tls_recv / tls_send   > 0 bytes; 0 EOF (recv only: close_notify, or a
 *                         TCP close without it, which MongoDB peers do);
 *                         -1 with errno EAGAIN (OpenSSL wants the socket
 *                         readable or writable: the next event on it),
 *                         a socket errno (ECONNRESET, EPIPE, ...), or
 *                         EPROTO (a TLS error; tls_conn_why says which)
 *   tls_handshake         0 done, -EAGAIN in progress, MT_EPROTO failed
 *
 * Data already decrypted inside OpenSSL is invisible to epoll: tls_recv
 * reads until the caller's buffer is full or OpenSSL needs the socket, and
 * says through *more whether it stopped with bytes possibly left (the
 * caller must read again without waiting for an event).
 *
 * Writes use SSL_MODE_ENABLE_PARTIAL_WRITE and
 * SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER: after -1/EAGAIN the caller retries
 * later with the same unsent bytes at its new address (at least as many
 * as before), as the proxy does from its out buffer.
 *
 * Renegotiation is refused (SSL_OP_NO_RENEGOTIATION) and the minimum
 * version is TLS 1.2.  Not supported: OCSP, CRLs, session resumption
 * (no tickets are issued), encrypted private keys (no passphrase prompt).
 */
#ifndef MT_CORE_TLS_H
#define MT_CORE_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "err.h"

struct tls_ctx;
struct tls_conn;

/* Text of the reasons of a failure (at most TLS_WHY_LEN - 1 bytes). */
#define TLS_WHY_LEN 192

/*
 * A server context (the proxy's client side, replay): certificate chain
 * from cert_path (PEM), private key from key_path, or from cert_path when
 * key_path is NULL (a mongod-style tlsCertificateKeyFile); the key must
 * match the certificate.  ca_path non-NULL: clients must present a
 * certificate that chains to a CA of that PEM file.  The context, or NULL
 * with err set (the file and OpenSSL's reason).
 */
struct tls_ctx *tls_ctx_server_new(const char *cert_path, const char *key_path,
                                   const char *ca_path, struct mt_err *err);

/*
 * A client context (the proxy's upstream side): the server's certificate
 * is verified against ca_path (PEM), or the system's default CAs when
 * NULL; insecure: no verification at all.  NULL with err set on failure.
 */
struct tls_ctx *tls_ctx_client_new(const char *ca_path, bool insecure,
                                   struct mt_err *err);

/*
 * Gives a client context a certificate to present when the server asks
 * for one (mongod with client certificates required, X.509 users): the
 * chain from cert_path, the key from key_path or cert_path.  0, or a
 * negative code with err set.
 */
int tls_ctx_client_cert(struct tls_ctx *ctx, const char *cert_path,
                        const char *key_path, struct mt_err *err);

/* True for a client context that verifies the server's certificate, or
 * a server context that requires client certificates. */
bool tls_ctx_verifies(const struct tls_ctx *ctx);

/* Frees ctx; NULL is a no-op.  Only after every connection made from it
 * is freed. */
void tls_ctx_free(struct tls_ctx *ctx);

/*
 * A connection on the connected, non-blocking socket fd (borrowed: the
 * caller closes it after tls_conn_free).  Server contexts accept; client
 * contexts connect, sending host as SNI when it is a name and verifying
 * the server's certificate for host (a name or an IP address literal;
 * NULL: no name check).  NULL when out of memory.
 */
struct tls_conn *tls_conn_new(struct tls_ctx *ctx, int fd, const char *host);

/* Frees c (not its socket; sends nothing).  NULL is a no-op. */
void tls_conn_free(struct tls_conn *c);

/* One handshake step; see the top of this file.  On failure
 * tls_conn_why(c) says why (OpenSSL's reasons, the verification error). */
int tls_handshake(struct tls_conn *c);

/* True once the handshake completed. */
bool tls_conn_ready(const struct tls_conn *c);

/* Reads up to len decrypted bytes; see the top of this file.  *more: it
 * stopped with bytes possibly left (buffer full, or an EOF or error to
 * report next), so the caller must not wait for an event to read on. */
ssize_t tls_recv(struct tls_conn *c, void *buf, size_t len, bool *more);

/* Writes up to len bytes; see the top of this file.  After the peer's
 * reset (-1 with ECONNRESET or EPIPE) every later write fails the same
 * way, but tls_recv still returns what the peer sent before it, and the
 * alert that says why it closed (EPROTO, tls_conn_why). */
ssize_t tls_send(struct tls_conn *c, const void *buf, size_t len);

/* The last tls_handshake or tls_recv returned EAGAIN because OpenSSL
 * must write first (a full socket buffer; a TLS 1.3 key update): the
 * caller tries again on the socket's next writable event. */
bool tls_wants_write(const struct tls_conn *c);

/* Decrypted bytes (or an EOF or error to report) wait inside OpenSSL:
 * no socket event will say so. */
bool tls_pending(const struct tls_conn *c);

/* Sends close_notify, best effort, once (nothing when the connection
 * failed).  The caller then shuts the socket down for writing. */
void tls_close_notify(struct tls_conn *c);

/* Why the last call failed ("" when nothing failed). */
const char *tls_conn_why(const struct tls_conn *c);

/* The negotiated protocol and cipher, "TLSv1.3 TLS_AES_256_GCM_SHA384",
 * into out (n bytes). */
void tls_conn_desc(const struct tls_conn *c, char *out, size_t n);

/* What a completed handshake negotiated (tls_conn_info). */
struct tls_info {
    char version[16];   /* "TLSv1.3" */
    char cipher[64];    /* IANA name: "TLS_AES_256_GCM_SHA384" */
    char group[32];     /* key exchange group: "X25519"; "" unknown, none */
    char sni[256];      /* server name sent (client) or received (server) */
    bool resumed;       /* session resumption */
    bool peer_cert;     /* the peer presented a certificate */
    bool peer_verified; /* ... and it was verified (the context verifies) */
};

/* Fills *out for c (after its handshake completed; strings cut to fit).
 * Cost: a few OpenSSL getters, no allocation. */
void tls_conn_info(const struct tls_conn *c, struct tls_info *out);

/* The negotiated protocol version once the handshake completed
 * (0x0303 TLS 1.2, 0x0304 TLS 1.3, as on the wire), else 0. */
int tls_conn_version(const struct tls_conn *c);

/* Why a connection failed, as far as OpenSSL's first reason and the
 * certificate check tell (for statistics; tls_conn_why has the text). */
enum tls_cause {
    TLS_CAUSE_NONE = 0,     /* nothing failed */
    TLS_CAUSE_NOT_TLS,      /* the peer sent something else than TLS (a
                               plain MongoDB client, an HTTP request) */
    TLS_CAUSE_NO_CERT,      /* a certificate was required; the peer sent
                               none */
    TLS_CAUSE_PEER_CERT,    /* the peer's certificate did not verify */
    TLS_CAUSE_CERT_REFUSED, /* the peer refused ours (its alert: unknown
                               CA, bad certificate, ...) */
    TLS_CAUSE_CLOSED,       /* the peer closed or reset the connection */
    TLS_CAUSE_OTHER,        /* any other TLS error (no shared version or
                               cipher, a malformed message, ...) */
};

/* The cause of c's failure; TLS_CAUSE_NONE while nothing failed. */
enum tls_cause tls_conn_cause(const struct tls_conn *c);

/* True when host is an IPv4 or IPv6 address literal (no SNI for it). */
bool tls_host_is_ip(const char *host);

#endif
