/*
 * tlsstats.c -- TLS handshake statistics (see tlsstats.h).
 */
#include "tlsstats.h"

#include <string.h>

#include "core/log.h"

void
tlsstats_init(struct tlsstats *t)
{
    memset(t, 0, sizeof(*t));
    delay_hist_init(&t->time);
}

void
tlsstats_merge(struct tlsstats *dst, const struct tlsstats *src)
{
    dst->completed += src->completed;
    for (int i = 0; i < TLSSTATS_VERSION_N; i++)
        dst->version[i] += src->version[i];
    for (int i = 0; i < TLSSTATS_FAIL_N; i++)
        dst->failed[i] += src->failed[i];
    dst->aborted += src->aborted;
    delay_hist_merge(&dst->time, &src->time);
}

void
tlsstats_add_completed(struct tlsstats *t, int version, uint64_t took_ns)
{
    t->completed++;
    t->version[version == 0x0303   ? TLSSTATS_TLS12
               : version == 0x0304 ? TLSSTATS_TLS13
                                   : TLSSTATS_VERSION_OTHER]++;
    delay_hist_add(&t->time, took_ns);
}

/* The replay cause of a core/tls cause (TLS_CAUSE_NONE excluded). */
static enum tlsstats_fail
tlsstats_fail_of(enum tls_cause cause)
{
    switch (cause) {
    case TLS_CAUSE_NOT_TLS:
        return TLSSTATS_NOT_TLS;
    case TLS_CAUSE_NO_CERT:
        return TLSSTATS_NO_CLIENT_CERT;
    case TLS_CAUSE_PEER_CERT:
        return TLSSTATS_CLIENT_CERT;
    case TLS_CAUSE_CERT_REFUSED:
        return TLSSTATS_SERVER_CERT;
    case TLS_CAUSE_CLOSED:
        return TLSSTATS_CLOSED;
    case TLS_CAUSE_NONE:
    case TLS_CAUSE_OTHER:
        break;
    }
    return TLSSTATS_OTHER;
}

void
tlsstats_add_unfinished(struct tlsstats *t, enum tls_cause cause,
                        bool timed_out)
{
    if (cause != TLS_CAUSE_NONE)
        t->failed[tlsstats_fail_of(cause)]++;
    else if (timed_out)
        t->failed[TLSSTATS_TIMEOUT]++;
    else
        t->aborted++;
}

uint64_t
tlsstats_failed(const struct tlsstats *t)
{
    uint64_t n = 0;

    for (int i = 0; i < TLSSTATS_FAIL_N; i++)
        n += t->failed[i];
    return n;
}

static const char *const fail_key[TLSSTATS_FAIL_N] = {
    [TLSSTATS_NOT_TLS] = "not_tls",
    [TLSSTATS_NO_CLIENT_CERT] = "no_client_cert",
    [TLSSTATS_CLIENT_CERT] = "client_cert_refused",
    [TLSSTATS_SERVER_CERT] = "server_cert_refused",
    [TLSSTATS_CLOSED] = "closed",
    [TLSSTATS_TIMEOUT] = "timeout",
    [TLSSTATS_OTHER] = "other",
};

static const char *const fail_text[TLSSTATS_FAIL_N] = {
    [TLSSTATS_NOT_TLS] = "not TLS",
    [TLSSTATS_NO_CLIENT_CERT] = "no client certificate",
    [TLSSTATS_CLIENT_CERT] = "client certificate refused",
    [TLSSTATS_SERVER_CERT] = "server certificate refused by the client",
    [TLSSTATS_CLOSED] = "closed by the client",
    [TLSSTATS_TIMEOUT] = "timed out",
    [TLSSTATS_OTHER] = "other TLS error",
};

const char *
tlsstats_fail_key(enum tlsstats_fail f)
{
    MT_ASSERT(f >= 0 && f < TLSSTATS_FAIL_N);
    return fail_key[f];
}

const char *
tlsstats_fail_text(enum tlsstats_fail f)
{
    MT_ASSERT(f >= 0 && f < TLSSTATS_FAIL_N);
    return fail_text[f];
}

const char *
tlsstats_version_name(enum tlsstats_version v)
{
    MT_ASSERT(v >= 0 && v < TLSSTATS_VERSION_N);
    return v == TLSSTATS_TLS12   ? "TLSv1.2"
           : v == TLSSTATS_TLS13 ? "TLSv1.3"
                                 : "other";
}
