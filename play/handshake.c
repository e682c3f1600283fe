/*
 * handshake.c -- a live connection's own handshake: TLS, hello with play's
 * client metadata and the recorded compression offer, SCRAM (see
 * handshake.h).
 */
#include "handshake.h"

#include <errno.h>
#include <string.h>

#include "auth.h"

static void conn_auth_start(struct play_conn *c);

static int
conn_command(struct play_conn *c, const bson_t *cmd, int32_t *rid)
{
    struct mt_buf *t = &c->pl->tmp;
    int rc;

    mt_buf_reset(t);
    *rid = c->next_rid++;
    rc = wire_encode_msg(t, *rid, 0, 0, cmd, NULL, 0);
    if (rc == 0)
        rc = mt_buf_append(&c->wb, t->data, t->len);
    if (rc < 0)
        return rc;
    play_conn__rec_msg(c, TRACE_DIR_C2S, t->data, t->len, NULL, 0);
    c->wait_since_ns = loop_now_ns(c->pl->loop);
    play_conn__flush(c);
    return 0;
}

static void
append_offer(bson_t *cmd, const char *offer)
{
    bson_t arr;
    char name[16], idx[8];
    const char *p = offer;
    unsigned n = 0;

    if (*offer == '\0')
        return;
    bson_append_array_begin(cmd, "compression", -1, &arr);
    while (*p) {
        size_t len = strcspn(p, ",");
        if (len > 0 && len < sizeof(name)) {
            memcpy(name, p, len);
            name[len] = '\0';
            snprintf(idx, sizeof(idx), "%u", n++);
            bson_append_utf8(&arr, idx, -1, name, -1);
        }
        p += len;
        if (*p == ',')
            p++;
    }
    bson_append_array_end(cmd, &arr);
}

static void
conn_send_hello(struct play_conn *c)
{
    bson_t cmd, client, sub;
    int32_t rid;
    int rc;

    bson_init(&cmd);
    bson_append_int32(&cmd, "hello", -1, 1);
    bson_append_bool(&cmd, "helloOk", -1, true);
    bson_append_document_begin(&cmd, "client", -1, &client);
    bson_append_document_begin(&client, "application", -1, &sub);
    bson_append_utf8(&sub, "name", -1, "mtrace play", -1);
    bson_append_document_end(&client, &sub);
    bson_append_document_begin(&client, "driver", -1, &sub);
    bson_append_utf8(&sub, "name", -1, "mtrace", -1);
    bson_append_utf8(&sub, "version", -1, MT_VERSION, -1);
    bson_append_document_end(&client, &sub);
    bson_append_document_begin(&client, "os", -1, &sub);
    bson_append_utf8(&sub, "type", -1, "Linux", -1);
    bson_append_document_end(&client, &sub);
    bson_append_document_end(&cmd, &client);
    append_offer(&cmd, c->offer);
    bson_append_utf8(&cmd, "$db", -1, "admin", -1);
    rc = conn_command(c, &cmd, &rid);
    bson_destroy(&cmd);
    if (rc < 0) {
        play__fail(c->pl, "hello: %s", mt_strerror(rc));
        return;
    }
    c->hs_rid = rid;
    c->st = PLAY_CONN_HELLO;
}

/* One step of the TLS handshake; the hello once it is done. */
void
play_hs_tls_step(struct play_conn *c)
{
    struct player *pl = c->pl;
    int rc = tls_handshake(c->tls);

    if (rc == -EAGAIN) {
        (void)loop_fd_mod(pl->loop, c->fd,
                          LOOP_READ |
                              (tls_wants_write(c->tls) ? LOOP_WRITE : 0));
        return;
    }
    if (rc < 0) {
        play__fail(pl, "TLS handshake with %s failed: %s", pl->o->target,
                   tls_conn_why(c->tls));
        return;
    }
    (void)loop_fd_mod(pl->loop, c->fd, LOOP_READ);
    conn_send_hello(c);
}

/* The agreed compressor: the first name of the reply's list we know. */
static uint8_t
hello_compressor(bson_iter_t *it)
{
    bson_iter_t a;
    static const char *const names[] = {"snappy", "zlib", "zstd"};
    static const uint8_t ids[] = {WIRE_COMPRESSOR_SNAPPY, WIRE_COMPRESSOR_ZLIB,
                                  WIRE_COMPRESSOR_ZSTD};

    if (!BSON_ITER_HOLDS_ARRAY(it) || !bson_iter_recurse(it, &a))
        return 0;
    while (bson_iter_next(&a)) {
        if (!BSON_ITER_HOLDS_UTF8(&a))
            continue;
        for (size_t i = 0; i < 3; i++)
            if (strcmp(bson_iter_utf8(&a, NULL), names[i]) == 0)
                return ids[i];
    }
    return 0;
}

static void
conn_hello_reply(struct play_conn *c, const struct wire_msg *m)
{
    struct player *pl = c->pl;
    struct runcmp_shape sh;
    bson_t b;
    bson_iter_t it;
    bool mongo = false;

    runcmp_shape_of(m, &sh);
    if (m->h.op_code != WIRE_OP_MSG || m->h.response_to != c->hs_rid ||
        !sh.valid || m->body == NULL ||
        !bson_init_static(&b, m->body, m->body_len)) {
        play__fail(pl,
                   "%s is not a MongoDB server: its reply to hello is "
                   "not an OP_MSG reply",
                   pl->o->target);
        return;
    }
    if (sh.error) {
        play__fail(pl, "%s refused the handshake (hello failed, code %d)",
                   pl->o->target, (int)sh.code);
        return;
    }
    if (bson_iter_init(&it, &b))
        while (bson_iter_next(&it)) {
            const char *k = bson_iter_key(&it);
            if (strcmp(k, "maxWireVersion") == 0 ||
                strcmp(k, "isWritablePrimary") == 0 ||
                strcmp(k, "ismaster") == 0)
                mongo = true;
            else if (strcmp(k, "compression") == 0)
                c->compressor = hello_compressor(&it);
        }
    if (!mongo) {
        play__fail(pl,
                   "%s is not a MongoDB server: its hello reply has no "
                   "maxWireVersion",
                   pl->o->target);
        return;
    }
    remap_note_reply(pl->rm, m->body, m->body_len);
    if (pl->o->username == NULL) {
        play_conn__ready(c);
        return;
    }
    conn_auth_start(c);
}

static void
conn_auth_send(struct play_conn *c, bson_t *cmd)
{
    int32_t rid;
    int rc = conn_command(c, cmd, &rid);

    bson_destroy(cmd);
    if (rc < 0) {
        play__fail(c->pl, "authentication: %s", mt_strerror(rc));
        return;
    }
    c->hs_rid = rid;
}

static void
conn_auth_start(struct play_conn *c)
{
    const struct play_opts *o = c->pl->o;
    struct mt_err err = {0};
    bson_t cmd;

    c->auth =
        play_auth_new(o->mechanism, o->username, o->password, o->auth_db, &err);
    if (c->auth == NULL || play_auth_start(c->auth, &cmd, &err) < 0) {
        play__fail(c->pl, "authentication as %s: %s", o->username, err.msg);
        return;
    }
    c->st = PLAY_CONN_AUTH;
    conn_auth_send(c, &cmd);
}

static void
conn_auth_reply(struct play_conn *c, const struct wire_msg *m)
{
    const struct play_opts *o = c->pl->o;
    struct mt_err err = {0};
    bson_t cmd;
    bool done = false;

    if (m->h.response_to != c->hs_rid || m->body == NULL) {
        play__fail(c->pl, "authentication as %s: unexpected reply",
                   o->username);
        return;
    }
    if (play_auth_step(c->auth, m->body, m->body_len, &cmd, &done, &err) < 0) {
        play__fail(c->pl, "%s refused authentication as %s on %s: %s",
                   o->target, o->username, o->auth_db, err.msg);
        return;
    }
    if (!done) {
        conn_auth_send(c, &cmd);
        return;
    }
    play_auth_free(c->auth);
    c->auth = NULL;
    play_conn__ready(c);
}

void
play_hs_start(struct play_conn *c)
{
    struct player *pl = c->pl;

    if (pl->tls != NULL) {
        c->tls = tls_conn_new(pl->tls, c->fd, pl->host);
        if (c->tls == NULL) {
            play__fail(pl, "out of memory");
            return;
        }
        c->st = PLAY_CONN_TLS;
        play_hs_tls_step(c);
        return;
    }
    (void)loop_fd_mod(pl->loop, c->fd, LOOP_READ);
    conn_send_hello(c);
}

void
play_hs_reply(struct play_conn *c, const struct wire_msg *m)
{
    if (c->st == PLAY_CONN_HELLO)
        conn_hello_reply(c, m);
    else if (c->st == PLAY_CONN_AUTH)
        conn_auth_reply(c, m);
}
