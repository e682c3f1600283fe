/*
 * reader.c -- `mtrace play`'s trace reader thread (see reader.h).
 */
#include "reader.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "core/mem.h"

/* One record (or a reader status) as the loop will see it. */
struct rent {
    struct rent *next;
    int rc;               /* MT_OK, MT_END or a negative code */
    struct mt_err err;    /* with rc < 0 */
    struct trace_rec rec; /* message pointers into data[] */
    size_t bytes;         /* charged to the queue */
    uint8_t data[];
};

struct play_reader {
    struct trace_reader *rd; /* owned; used by the thread only */
    struct loop *l;          /* borrowed */
    bool threaded;           /* false: read by play_reader_next itself */
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t space;
    /* under mu */
    struct rent *head, *tail; /* owned */
    size_t bytes;
    bool waiting; /* the consumer found the queue empty */
    bool stop;
    bool oom;  /* the thread ran out of memory and stopped */
    bool full; /* the thread waits for room */
    /* the consumer's */
    struct rent *held; /* owned: the record last returned */
};

/* A copy of rec (its message bytes into data[]), or NULL (-ENOMEM). */
static struct rent *
rent_new(int rc, const struct trace_rec *rec, const struct mt_err *err)
{
    size_t n = 0;
    struct rent *e;

    if (rc == MT_OK && rec->type == TRACE_REC_MSG)
        n = (size_t)rec->u.msg.wire_len +
            (rec->u.msg.plain != NULL ? rec->u.msg.plain_len : 0);
    e = mt_malloc(sizeof(*e) + n);
    if (e == NULL)
        return NULL;
    memset(e, 0, sizeof(*e));
    e->rc = rc;
    e->bytes = sizeof(*e) + n;
    if (rc < 0 && err != NULL)
        e->err = *err;
    if (rc != MT_OK)
        return e;
    e->rec = *rec;
    if (rec->type == TRACE_REC_MSG) {
        memcpy(e->data, rec->u.msg.wire, rec->u.msg.wire_len);
        e->rec.u.msg.wire = e->data;
        if (rec->u.msg.plain != NULL) {
            memcpy(e->data + rec->u.msg.wire_len, rec->u.msg.plain,
                   rec->u.msg.plain_len);
            e->rec.u.msg.plain = e->data + rec->u.msg.wire_len;
        }
    }
    return e;
}

/* Queues e; false when the reader is stopping (e freed). */
static bool
push(struct play_reader *r, struct rent *e)
{
    bool wake;

    pthread_mutex_lock(&r->mu);
    while (!r->stop && r->bytes >= PLAY_READER_BYTES_MAX) {
        r->full = true;
        pthread_cond_wait(&r->space, &r->mu);
    }
    if (r->stop) {
        pthread_mutex_unlock(&r->mu);
        mt_free(e);
        return false;
    }
    if (r->tail != NULL)
        r->tail->next = e;
    else
        r->head = e;
    r->tail = e;
    r->bytes += e->bytes;
    wake = r->waiting;
    r->waiting = false;
    pthread_mutex_unlock(&r->mu);
    if (wake)
        loop_wake(r->l);
    return true;
}

static void *
reader_main(void *arg)
{
    struct play_reader *r = arg;
    struct trace_rec rec;
    struct mt_err err;
    struct rent *e;
    int rc;

    for (;;) {
        memset(&err, 0, sizeof(err));
        rc = trace_reader_next(r->rd, &rec, &err);
        if (rc == MT_OK && rec.type != TRACE_REC_CONN_OPEN &&
            rec.type != TRACE_REC_MSG && rec.type != TRACE_REC_CONN_CLOSE)
            continue; /* play has no use for it */
        e = rent_new(rc, &rec, &err);
        if (e == NULL) {
            /* the consumer reports it once the queue is drained */
            pthread_mutex_lock(&r->mu);
            r->oom = true;
            bool wake = r->waiting;
            pthread_mutex_unlock(&r->mu);
            if (wake)
                loop_wake(r->l);
            return NULL;
        }
        if (!push(r, e))
            return NULL;
        if (rc == MT_END || (rc < 0 && rc != MT_ECORRUPT && rc != MT_ETOOBIG)) {
            if (rc < 0 && (e = rent_new(MT_END, NULL, NULL)) != NULL)
                (void)push(r, e);
            return NULL;
        }
    }
}

struct play_reader *
play_reader_open(const char *path, struct loop *l, bool threaded,
                 struct mt_err *err)
{
    struct play_reader *r = mt_calloc(1, sizeof(*r));

    if (r == NULL) {
        mt_err_set(err, -ENOMEM, 0, "out of memory");
        return NULL;
    }
    r->l = l;
    r->threaded = threaded;
    r->rd = trace_reader_open(path, err);
    if (r->rd == NULL) {
        mt_free(r);
        return NULL;
    }
    if (!threaded)
        return r;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->space, NULL);
    if (pthread_create(&r->th, NULL, reader_main, r) != 0) {
        mt_err_set(err, -EAGAIN, 0, "cannot start the reader thread");
        pthread_mutex_destroy(&r->mu);
        pthread_cond_destroy(&r->space);
        trace_reader_free(r->rd);
        mt_free(r);
        return NULL;
    }
    return r;
}

int
play_reader_next(struct play_reader *r, struct trace_rec *rec,
                 struct mt_err *err)
{
    struct rent *e;
    bool oom = false;
    int rc;

    if (!r->threaded) {
        do
            rc = trace_reader_next(r->rd, rec, err);
        while (rc == MT_OK && rec->type != TRACE_REC_CONN_OPEN &&
               rec->type != TRACE_REC_MSG && rec->type != TRACE_REC_CONN_CLOSE);
        return rc;
    }
    mt_free(r->held);
    r->held = NULL;
    pthread_mutex_lock(&r->mu);
    e = r->head;
    if (e != NULL) {
        r->head = e->next;
        if (r->head == NULL)
            r->tail = NULL;
        /* the thread, waiting for room, resumes once half is free: one
         * wake-up per half queue, not one per record */
        if (r->full && r->bytes - e->bytes < PLAY_READER_BYTES_MAX / 2) {
            r->full = false;
            pthread_cond_signal(&r->space);
        }
        r->bytes -= e->bytes;
    } else if (!(oom = r->oom)) {
        r->waiting = true;
    }
    pthread_mutex_unlock(&r->mu);
    if (e == NULL && oom)
        return mt_err_set(err, -ENOMEM, 0, "reading the trace: out of memory");
    if (e == NULL)
        return MT_PARTIAL;
    r->held = e;
    if (e->rc < 0) {
        *err = e->err;
        return e->rc;
    }
    if (e->rc == MT_END)
        return MT_END;
    *rec = e->rec;
    return MT_OK;
}

void
play_reader_free(struct play_reader *r)
{
    if (r == NULL)
        return;
    if (!r->threaded) {
        trace_reader_free(r->rd);
        mt_free(r);
        return;
    }
    pthread_mutex_lock(&r->mu);
    r->stop = true;
    pthread_cond_signal(&r->space);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->th, NULL);
    for (struct rent *e = r->head, *n; e != NULL; e = n) {
        n = e->next;
        mt_free(e);
    }
    mt_free(r->held);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->space);
    trace_reader_free(r->rd);
    mt_free(r);
}
