/*
 * ptls.c -- TLS legs of the capture proxy (see ptls.h).
 */
#include "ptls.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/log.h"
#include "core/tls.h"
#include "core/trace.h"
#include "precord.h"

/* See ptls.h. */
int
ptls_init(struct proxy *p, const struct proxy_opts *o, struct mt_err *err)
{
    if (o->tls_cert != NULL) {
        p->tls_accept =
            tls_ctx_server_new(o->tls_cert, o->tls_key, o->tls_ca, err);
        if (p->tls_accept == NULL)
            return err->code;
    }
    if (o->target_tls) {
        p->tls_connect =
            tls_ctx_client_new(o->target_tls_ca, o->target_tls_insecure, err);
        if (p->tls_connect == NULL)
            return err->code;
        if (o->target_tls_cert != NULL &&
            tls_ctx_client_cert(p->tls_connect, o->target_tls_cert, NULL, err) <
                0)
            return err->code;
        snprintf(p->tls_host, sizeof(p->tls_host), "%s", o->target_host);
    }
    return 0;
}

/* See ptls.h. */
void
ptls_free(struct proxy *p)
{
    tls_ctx_free(p->tls_accept);
    tls_ctx_free(p->tls_connect);
    p->tls_accept = p->tls_connect = NULL;
}

/* See ptls.h. */
void
ptls_desc(const struct proxy *p, bool paren, char *out, size_t n)
{
    out[0] = '\0';
    if (p->tls_accept == NULL && p->tls_connect == NULL)
        return;
    snprintf(out, n, "%s%s%s%s%s", paren ? " (" : "",
             p->tls_accept != NULL ? "client TLS" : "client plain",
             p->tls_connect == NULL ? ", target plain" : ", target TLS",
             p->tls_connect == NULL ? ""
             : tls_ctx_verifies(p->tls_connect)
                 ? " verified"
                 : " NOT verified (--target-tls-insecure)",
             paren ? ")" : "");
}

/* See ptls.h. */
int
ptls_conn_init(struct pconn *c)
{
    struct proxy *p = c->pl->p;

    if (p->tls_accept != NULL &&
        (c->tls[0] = tls_conn_new(p->tls_accept, c->cfd, NULL)) == NULL)
        return -ENOMEM;
    if (p->tls_connect != NULL &&
        (c->tls[1] = tls_conn_new(p->tls_connect, c->sfd,
                                  p->tls_host[0] ? p->tls_host : NULL)) == NULL)
        return -ENOMEM;
    if (c->tls[0] != NULL || c->tls[1] != NULL) {
        c->tls_hs = true;
        c->connecting = true;
    }
    return 0;
}

/*
 * Records the end of leg's handshake (leg 0 the client's, 1 the
 * target's), now: completed, or failed for why (NULL: OpenSSL's reasons).
 * Its time runs from c's accept (leg 0) or from the upstream TCP
 * connection's completion (leg 1).
 */
static void
ptls_record(struct pconn *c, int leg, const char *why)
{
    struct trace_tls t = {0};
    struct tls_info info;
    uint64_t start = leg == 0 ? c->open_ns : c->up_ns;

    t.conn_id = c->id;
    t.t_ns = loop_update_time(c->pl->l);
    t.leg = (uint8_t)leg;
    t.handshake_ns = t.t_ns > start ? t.t_ns - start : 0;
    if (why != NULL || !tls_conn_ready(c->tls[leg])) {
        t.flags = TRACE_TLS_FAILED;
        snprintf(t.error, sizeof(t.error), "%s",
                 why != NULL ? why : tls_conn_why(c->tls[leg]));
    } else {
        tls_conn_info(c->tls[leg], &info);
        memcpy(t.version, info.version, sizeof(t.version));
        memcpy(t.cipher, info.cipher, sizeof(t.cipher));
        memcpy(t.group, info.group, sizeof(t.group));
        memcpy(t.sni, info.sni, sizeof(t.sni));
        t.flags = (info.resumed ? TRACE_TLS_RESUMED : 0) |
                  (info.peer_cert ? TRACE_TLS_PEER_CERT : 0) |
                  (info.peer_verified ? TRACE_TLS_PEER_VERIFIED : 0);
    }
    precord_tls(c, &t);
}

/* One handshake step of leg; true when c died (the failure is logged,
 * counted and recorded). */
static bool
ptls_step_leg(struct pconn *c, int leg)
{
    struct ploop *pl = c->pl;
    int rc = tls_handshake(c->tls[leg]);

    if (rc == 0)
        ptls_record(c, leg, NULL);
    if (rc >= 0 || rc == -EAGAIN)
        return false;
    ptls_record(c, leg, NULL);
    if (leg == 0) {
        mt_warn("capture: conn %llu from %s: TLS handshake with the "
                "client failed: %s; closing the connection (a client "
                "without TLS, or one that does not trust --tls-cert, "
                "fails here)",
                (unsigned long long)c->id, c->client, tls_conn_why(c->tls[0]));
        pl->st.tls_fail++;
        pconn__die(c, TRACE_CLOSE_ERROR);
    } else {
        mt_warn("capture: conn %llu from %s: TLS handshake with the "
                "target %s failed: %s; closing the client connection "
                "(see --target-tls-ca, --target-tls-insecure)",
                (unsigned long long)c->id, c->client, pl->p->target_desc,
                tls_conn_why(c->tls[1]));
        pl->st.upstream_fail++;
        pconn__die(c, TRACE_CLOSE_UPSTREAM_FAIL);
    }
    return true;
}

/* See ptls.h. */
void
ptls_step(struct pconn *c)
{
    char desc[96];

    if (c->dead || !c->tls_hs)
        return;
    if (c->tls[0] != NULL && !tls_conn_ready(c->tls[0]) && ptls_step_leg(c, 0))
        return;
    if (c->tls[1] != NULL && c->tcp_up && !tls_conn_ready(c->tls[1]) &&
        ptls_step_leg(c, 1))
        return;
    if (!c->tcp_up || (c->tls[0] != NULL && !tls_conn_ready(c->tls[0])) ||
        (c->tls[1] != NULL && !tls_conn_ready(c->tls[1])))
        return;
    c->tls_hs = false;
    c->connecting = false;
    if (mt_log_get_level() <= MT_LOG_DEBUG) {
        tls_conn_desc(c->tls[c->tls[0] != NULL ? 0 : 1], desc, sizeof(desc));
        mt_debug("capture: conn %llu from %s: TLS established (%s)",
                 (unsigned long long)c->id, c->client, desc);
    }
}

/* See ptls.h. */
void
ptls_notify(struct pconn *c, int d)
{
    if (c->tls[1 - d] != NULL)
        tls_close_notify(c->tls[1 - d]);
}

/* See ptls.h. */
void
ptls_log_error(const struct pconn *c, int side, const char *how)
{
    const char *why = tls_conn_why(c->tls[side]);

    mt_warn("capture: conn %llu from %s: TLS error %s the %s: %s; closing "
            "the connection%s",
            (unsigned long long)c->id, c->client, how,
            side == 0 ? "client" : "server", why,
            side == 1 && strstr(why, "certificate required") != NULL
                ? " (the target requires a client certificate: "
                  "--target-tls-cert)"
                : "");
}

/* See ptls.h.  The handshake's clock starts at accept (last_io_ns does
 * not move before the connection forwards). */
bool
ptls_expired(struct pconn *c, uint64_t now_ns)
{
    uint64_t limit = c->pl->p->msg_timeout_ns;

    if (limit == 0 || now_ns - c->last_io_ns < limit)
        return false;
    mt_warn("capture: conn %llu from %s: TLS handshake not complete after "
            "%.1f s (--msg-timeout-s); closing the connection",
            (unsigned long long)c->id, c->client,
            (double)(now_ns - c->last_io_ns) / 1e9);
    if (c->tls[0] != NULL && !tls_conn_ready(c->tls[0])) {
        c->pl->st.tls_fail++;
        ptls_record(c, 0, "handshake not complete within --msg-timeout-s");
    }
    if (c->tls[1] != NULL && c->tcp_up && !tls_conn_ready(c->tls[1]))
        ptls_record(c, 1, "handshake not complete within --msg-timeout-s");
    return true;
}

/* See ptls.h. */
void
ptls_conn_free(struct pconn *c)
{
    tls_conn_free(c->tls[0]);
    tls_conn_free(c->tls[1]);
    c->tls[0] = c->tls[1] = NULL;
}
