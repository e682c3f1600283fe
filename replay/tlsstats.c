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

/* Each cause's JSON key and the summary's words for it. */
static const struct {
    const char *key, *text;
} fail_names[TLSSTATS_FAIL_N] = {
    [TLSSTATS_NOT_TLS] = {"not_tls", "not TLS"},
    [TLSSTATS_NO_CLIENT_CERT] = {"no_client_cert", "no client certificate"},
    [TLSSTATS_CLIENT_CERT] = {"client_cert_refused",
                              "client certificate refused"},
    [TLSSTATS_SERVER_CERT] = {"server_cert_refused",
                              "server certificate refused by the client"},
    [TLSSTATS_CLOSED] = {"closed", "closed by the client"},
    [TLSSTATS_TIMEOUT] = {"timeout", "timed out"},
    [TLSSTATS_OTHER] = {"other", "other TLS error"},
};

const char *
tlsstats_fail_key(enum tlsstats_fail f)
{
    MT_ASSERT(f >= 0 && f < TLSSTATS_FAIL_N);
    return fail_names[f].key;
}

const char *
tlsstats_fail_text(enum tlsstats_fail f)
{
    MT_ASSERT(f >= 0 && f < TLSSTATS_FAIL_N);
    return fail_names[f].text;
}

const char *
tlsstats_version_name(enum tlsstats_version v)
{
    MT_ASSERT(v >= 0 && v < TLSSTATS_VERSION_N);
    return v == TLSSTATS_TLS12   ? "TLSv1.2"
           : v == TLSSTATS_TLS13 ? "TLSv1.3"
                                 : "other";
}
