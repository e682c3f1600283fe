/*
 * auth.c -- SASL commands and hello's authentication fields (see auth.h).
 *
 *   saslStart    {saslStart: 1, mechanism, payload: BinData,
 *                 options: {skipEmptyExchange}, $db}
 *   saslContinue {saslContinue: 1, conversationId: 1, payload: BinData}
 *   reply        {conversationId: 1, done, payload: BinData, ok: 1}
 *
 * Errors as mongod's: a failed SCRAM step (malformed message, unknown
 * user, wrong password, a step after the end) is AuthenticationFailed
 * (18) "Authentication failed."; an unknown mechanism MechanismUnavailable
 * (334); saslContinue without a conversation, or with a conversationId
 * other than 1, ProtocolError (17); a missing field IDLFailedToParse
 * (40414); a field of the wrong type TypeMismatch (14).  Any failure ends
 * the conversation (mongod's AuthenticationSession::doStep).
 */
#include "auth.h"

#include <stdio.h>
#include <string.h>
#include <stddef.h>

#include "core/mem.h"

void
auth_cfg_free(struct auth_cfg *cfg)
{
    scram_creds_free(&cfg->creds);
}

void
auth_session_free(struct auth_session *s)
{
    mt_free(s->conv);
    s->conv = NULL;
}

bool
auth_is_auth_cmd(const char *name)
{
    return strcmp(name, "saslStart") == 0 ||
           strcmp(name, "saslContinue") == 0 ||
           strcmp(name, "authenticate") == 0 || strcmp(name, "getnonce") == 0;
}

bool
auth_allowed_unauthenticated(const char *name)
{
    static const char *const ok[] = {
        "hello",        "isMaster", "ismaster", "saslStart", "saslContinue",
        "authenticate", "logout",   "ping",     "buildInfo", "buildinfo",
    };

    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        if (strcmp(name, ok[i]) == 0)
            return true;
    return false;
}

static enum auth_result
error_doc(bson_t *out, int code, const char *code_name, const char *msg)
{
    bson_reinit(out);
    BSON_APPEND_DOUBLE(out, "ok", 0.0);
    BSON_APPEND_UTF8(out, "errmsg", msg);
    BSON_APPEND_INT32(out, "code", code);
    BSON_APPEND_UTF8(out, "codeName", code_name);
    return AUTH_FAILED;
}

static enum auth_result
auth_failed(bson_t *out)
{
    return error_doc(out, AUTH_FAILED_CODE, "AuthenticationFailed",
                     AUTH_FAILED_MSG);
}

/* A SASL payload: BinData (answered BinData) or a base64 string (answered
 * as a string, as mongod's SaslPayload does). */
struct payload {
    const uint8_t *p; /* borrowed, or buf */
    size_t len;
    bool as_string;
    uint8_t buf[SCRAM_MSG_MAX + 4];
};

/* 0, or a result with out filled (missing field, wrong type). */
static int
get_payload(const bson_t *cmd, const char *cmd_name, struct payload *pl,
            bson_t *out, char *why, size_t why_len)
{
    bson_iter_t it;
    char msg[160];

    memset(pl, 0, offsetof(struct payload, buf));
    if (!bson_iter_init_find(&it, cmd, "payload")) {
        snprintf(msg, sizeof(msg),
                 "BSON field '%s.payload' is missing but a required field",
                 cmd_name);
        snprintf(why, why_len, "%s", msg);
        error_doc(out, 40414, "IDLFailedToParse", msg);
        return -1;
    }
    if (BSON_ITER_HOLDS_BINARY(&it)) {
        bson_subtype_t st;
        uint32_t l;
        bson_iter_binary(&it, &st, &l, &pl->p);
        pl->len = l;
        return 0;
    }
    if (BSON_ITER_HOLDS_UTF8(&it)) {
        uint32_t l;
        const char *s = bson_iter_utf8(&it, &l);
        int n = scram_b64_decode(s, l, pl->buf, sizeof(pl->buf));
        pl->as_string = true;
        pl->p = pl->buf;
        if (n < 0) {
            snprintf(why, why_len, "%s payload string is not base64", cmd_name);
            auth_failed(out);
            return -1;
        }
        pl->len = (size_t)n;
        return 0;
    }
    snprintf(msg, sizeof(msg),
             "BSON field '%s.payload' is the wrong type '%s', expected types "
             "'[binData, string]'",
             cmd_name, "other");
    snprintf(why, why_len, "%s", msg);
    error_doc(out, 14, "TypeMismatch", msg);
    return -1;
}

/* {conversationId: 1, done, payload} (ok is the caller's). */
static bool
sasl_reply(bson_t *out, bool done, const char *data, size_t len, bool as_string)
{
    char b64[2 * SCRAM_OUT_MAX];

    if (!BSON_APPEND_INT32(out, "conversationId", 1) ||
        !BSON_APPEND_BOOL(out, "done", done))
        return false;
    if (as_string) {
        size_t n = scram_b64_encode((const uint8_t *)data, len, b64);
        return bson_append_utf8(out, "payload", -1, b64, (int)n);
    }
    return bson_append_binary(out, "payload", -1, BSON_SUBTYPE_BINARY,
                              (const uint8_t *)data, (uint32_t)len);
}

static const char *const fail_names[] = {
    [SCRAM_FAIL_NONE] = "",
    [SCRAM_FAIL_MALFORMED] = "malformed SCRAM message",
    [SCRAM_FAIL_NO_USER] = "unknown user",
    [SCRAM_FAIL_PROOF] = "wrong password",
    [SCRAM_FAIL_STATE] = "step after the end of the conversation",
};

/* A saslStart document (cmd) for database db: a new conversation.  With
 * ok false (speculative), no "ok" is appended. */
static enum auth_result
sasl_start(const struct auth_cfg *cfg, struct auth_session *s, const char *db,
           const bson_t *cmd, bool with_ok, bson_t *out, char *why,
           size_t why_len)
{
    struct payload pl;
    bson_iter_t it, opt;
    char reply[SCRAM_OUT_MAX], msg[200];
    const char *mech_name = NULL;
    enum scram_fail fw;
    struct mt_err err = {0};
    bool skip = false;
    size_t n = 0;
    int mech;

    auth_session_free(s); /* a new saslStart abandons the old one */
    if (bson_iter_init_find(&it, cmd, "mechanism") && BSON_ITER_HOLDS_UTF8(&it))
        mech_name = bson_iter_utf8(&it, NULL);
    if (mech_name == NULL) {
        snprintf(why, why_len, "saslStart without a mechanism string");
        return error_doc(out, 40414, "IDLFailedToParse",
                         "BSON field 'saslStart.mechanism' is missing but a "
                         "required field");
    }
    if (get_payload(cmd, "saslStart", &pl, out, why, why_len) < 0)
        return AUTH_FAILED;
    if ((mech = scram_mech_parse(mech_name)) < 0) {
        snprintf(msg, sizeof(msg),
                 "Received authentication for mechanism %.64s which is not "
                 "enabled",
                 mech_name);
        snprintf(why, why_len,
                 "mechanism %.64s: replay offers SCRAM-SHA-1 "
                 "and SCRAM-SHA-256",
                 mech_name);
        return error_doc(out, 334, "MechanismUnavailable", msg);
    }
    if (bson_iter_init_find(&it, cmd, "options") &&
        BSON_ITER_HOLDS_DOCUMENT(&it) && bson_iter_recurse(&it, &opt) &&
        bson_iter_find(&opt, "skipEmptyExchange")) {
        if (!BSON_ITER_HOLDS_BOOL(&opt)) {
            snprintf(why, why_len, "skipEmptyExchange is not a boolean");
            return error_doc(out, 2, "BadValue",
                             "skipEmptyExchange must be boolean");
        }
        skip = bson_iter_bool(&opt);
    }
    if ((s->conv = mt_malloc(sizeof(*s->conv))) == NULL) {
        snprintf(why, why_len, "out of memory");
        return auth_failed(out);
    }
    if (scram_conv_start(s->conv, &cfg->creds, (enum scram_mech)mech, db, skip,
                         pl.p, pl.len, cfg->test_snonce, reply, &n, &fw,
                         &err) < 0) {
        snprintf(why, why_len, "%s: %s (%s, database %s)", fail_names[fw],
                 err.msg, mech_name, db);
        auth_session_free(s);
        return auth_failed(out);
    }
    bson_reinit(out);
    if (!sasl_reply(out, false, reply, n, pl.as_string) ||
        (with_ok && !BSON_APPEND_DOUBLE(out, "ok", 1.0))) {
        snprintf(why, why_len, "reply too large");
        auth_session_free(s);
        return auth_failed(out);
    }
    return AUTH_STEP;
}

static enum auth_result
sasl_continue(struct auth_session *s, const bson_t *cmd, bson_t *out, char *why,
              size_t why_len)
{
    struct payload pl;
    bson_iter_t it;
    char reply[SCRAM_OUT_MAX];
    enum scram_fail fw;
    struct mt_err err = {0};
    bool done = false;
    size_t n = 0;

    if (!bson_iter_init_find(&it, cmd, "conversationId") ||
        !BSON_ITER_HOLDS_NUMBER(&it)) {
        snprintf(why, why_len, "saslContinue without a conversationId");
        auth_session_free(s);
        return error_doc(out, 40414, "IDLFailedToParse",
                         "BSON field 'saslContinue.conversationId' is "
                         "missing but a required field");
    }
    if (s->conv == NULL) {
        snprintf(why, why_len, "saslContinue with no conversation");
        return error_doc(out, 17, "ProtocolError",
                         "No SASL session state found");
    }
    if (bson_iter_as_int64(&it) != 1) {
        snprintf(why, why_len, "saslContinue with conversationId %lld",
                 (long long)bson_iter_as_int64(&it));
        auth_session_free(s);
        return error_doc(out, 17, "ProtocolError",
                         "sasl: Mismatched conversation id");
    }
    if (get_payload(cmd, "saslContinue", &pl, out, why, why_len) < 0) {
        auth_session_free(s);
        return AUTH_FAILED;
    }
    if (scram_conv_step(s->conv, pl.p, pl.len, reply, &n, &done, &fw, &err) <
        0) {
        snprintf(why, why_len, "%s: %s (%s, user %s of %s)", fail_names[fw],
                 err.msg, scram_mech_name(s->conv->mech), s->conv->user->name,
                 s->conv->user->db);
        auth_session_free(s);
        return auth_failed(out);
    }
    bson_reinit(out);
    if (!sasl_reply(out, done, reply, n, pl.as_string) ||
        !BSON_APPEND_DOUBLE(out, "ok", 1.0)) {
        snprintf(why, why_len, "reply too large");
        auth_session_free(s);
        return auth_failed(out);
    }
    if (!done)
        return AUTH_STEP;
    s->user = s->conv->user;
    snprintf(why, why_len, "%s as %s of %s", scram_mech_name(s->conv->mech),
             s->user->name, s->user->db);
    auth_session_free(s);
    return AUTH_SUCCEEDED;
}

enum auth_result
auth_command(const struct auth_cfg *cfg, struct auth_session *s,
             const struct match_req *req, bson_t *out, char *why,
             size_t why_len)
{
    bson_t cmd;
    char msg[160];

    why[0] = '\0';
    if (!cfg->enabled) {
        snprintf(why, why_len, "%s refused: no --credentials", req->name);
        return error_doc(out, AUTH_FAILED_CODE, "AuthenticationFailed",
                         AUTH_REFUSED_MSG);
    }
    if (!bson_init_static(&cmd, req->cmd, req->cmd_len)) {
        snprintf(why, why_len, "unreadable command");
        return auth_failed(out);
    }
    if (strcmp(req->name, "saslStart") == 0)
        return sasl_start(cfg, s, req->db, &cmd, true, out, why, why_len);
    if (strcmp(req->name, "saslContinue") == 0)
        return sasl_continue(s, &cmd, out, why, why_len);
    if (strcmp(req->name, "getnonce") == 0) {
        snprintf(why, why_len, "getnonce (MONGODB-CR) is gone from mongod");
        return error_doc(out, 59, "CommandNotFound",
                         "no such command: 'getnonce'");
    }
    /* authenticate: MONGODB-X509 (or the removed MONGODB-CR) */
    snprintf(msg, sizeof(msg),
             "Received authentication for mechanism %s which is not enabled",
             "MONGODB-X509");
    snprintf(why, why_len, "authenticate (X.509) is not offered by replay");
    return error_doc(out, 334, "MechanismUnavailable", msg);
}

/* saslSupportedMechs: "db.user" -> both mechanisms for a known user. */
static int
append_mechs(const struct auth_cfg *cfg, const bson_t *cmd, bson_t *out)
{
    bson_iter_t it;
    const char *v, *dot;
    char db[SCRAM_DB_MAX];
    uint32_t len;
    bson_t arr;

    if (!bson_iter_init_find(&it, cmd, "saslSupportedMechs") ||
        !BSON_ITER_HOLDS_UTF8(&it))
        return 0;
    v = bson_iter_utf8(&it, &len);
    dot = memchr(v, '.', len);
    if (dot == NULL || (size_t)(dot - v) >= sizeof(db))
        return 0;
    memcpy(db, v, (size_t)(dot - v));
    db[dot - v] = '\0';
    if (scram_creds_find(&cfg->creds, db, dot + 1,
                         len - (size_t)(dot - v) - 1) == NULL)
        return 0;
    return bson_append_array_begin(out, "saslSupportedMechs", -1, &arr) &&
                   BSON_APPEND_UTF8(&arr, "0", "SCRAM-SHA-1") &&
                   BSON_APPEND_UTF8(&arr, "1", "SCRAM-SHA-256") &&
                   bson_append_array_end(out, &arr)
               ? 0
               : MT_EBSON;
}

int
auth_hello_append(const struct auth_cfg *cfg, struct auth_session *s,
                  const struct match_req *req, bson_t *out,
                  enum auth_result *result, char *why, size_t why_len)
{
    bson_t cmd, spec, reply;
    bson_iter_t it, first;
    const uint8_t *d;
    uint32_t len;
    char db[SCRAM_DB_MAX];
    int rc = 0;

    *result = AUTH_NONE;
    why[0] = '\0';
    if (!cfg->enabled || !bson_init_static(&cmd, req->cmd, req->cmd_len))
        return 0;
    if (append_mechs(cfg, &cmd, out) < 0)
        return MT_EBSON;
    if (!bson_iter_init_find(&it, &cmd, "speculativeAuthenticate") ||
        !BSON_ITER_HOLDS_DOCUMENT(&it))
        return 0;
    bson_iter_document(&it, &len, &d);
    /* mongod: a saslStart with its database in "db" (else ignored) */
    if (!bson_init_static(&spec, d, len) || !bson_iter_init(&first, &spec) ||
        !bson_iter_next(&first) ||
        strcmp(bson_iter_key(&first), "saslStart") != 0 ||
        !bson_iter_init_find(&it, &spec, "db") || !BSON_ITER_HOLDS_UTF8(&it) ||
        bson_iter_utf8(&it, NULL)[0] == '\0') {
        *result = AUTH_FAILED;
        snprintf(why, why_len,
                 "speculativeAuthenticate that is not a "
                 "saslStart with a db: ignored");
        return 0;
    }
    snprintf(db, sizeof(db), "%s", bson_iter_utf8(&it, NULL));
    bson_init(&reply);
    *result = sasl_start(cfg, s, db, &spec, false, &reply, why, why_len);
    if (*result == AUTH_STEP &&
        !BSON_APPEND_DOCUMENT(out, "speculativeAuthenticate", &reply))
        rc = MT_EBSON;
    if (*result != AUTH_STEP)
        auth_session_free(s); /* as if it never started (mongod) */
    bson_destroy(&reply);
    return rc;
}
