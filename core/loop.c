/*
 * loop.c -- epoll event loop with a timer heap (see loop.h).
 *
 * One iteration (loop_run_once):
 *   1. the before-sleep hook runs;
 *   2. the wait deadline is the earliest of the first timer and the caller's
 *      timeout; a timerfd (CLOCK_MONOTONIC, absolute when the loop runs on
 *      the real clock) is armed to it, so waits have nanosecond resolution
 *      rather than epoll_wait's milliseconds;
 *   3. epoll_wait; then the clock is read once (loop_now_ns());
 *   4. due timers run in (deadline, seq) order, before the I/O of this
 *      tick so that a deadline is not late by the time the I/O takes;
 *      timers started during this tick wait for the next one, so a timer
 *      that re-arms itself at "now" cannot starve I/O (redis ae
 *      processTimeEvents does the same);
 *   5. ready fds are dispatched (at most LOOP_EVENTS_MAX per tick); with a
 *      spin window set (precision mode), timers that fall due meanwhile
 *      run between two fd callbacks (one clock read per callback).
 *
 * Spin: the wait sleeps only until spin_ns before the first deadline and
 * busy-polls (epoll_wait with timeout 0) from there, because a sleeping
 * thread wakes tens of microseconds late on a VM.  Each timerfd wake-up's
 * lateness (woke_ns - armed_ns) is kept in a ring of LOOP_WAKE_SAMPLES;
 * the adaptive mode sets spin_ns from their p99 every LOOP_WAKE_WARMUP
 * wake-ups.
 *
 * Each epoll registration carries the fd and a generation number in its
 * 64-bit user data: an event for an fd that was deleted (and maybe reused by
 * a new connection) earlier in the same batch is recognised and skipped.
 */
#include "loop.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "mem.h"

#define LOOP_EVENTS_MAX 256
#define LOOP_HEAP_MAX ((size_t)1 << 26) /* timers armed at once */
#define LOOP_FD_MAX_CAP (1 << 22)
#define LOOP_TAG_TIMER 0xfffffffeu
#define LOOP_TAG_WAKE 0xffffffffu
/* What loop_fd_add/loop_fd_mod keep of their events argument. */
#define LOOP_FD_EVENTS                                                         \
    (LOOP_READ | LOOP_WRITE | LOOP_EDGE | LOOP_RDHUP | LOOP_PRI)

struct loop_fd {
    loop_io_fn *cb;  /* NULL when the fd is not registered */
    void *arg;       /* borrowed */
    unsigned events; /* LOOP_READ|LOOP_WRITE currently watched */
    uint32_t gen;    /* bumped on each add */
    bool exclusive;  /* added with EPOLLEXCLUSIVE (no MOD allowed) */
};

struct loop {
    const struct mt_clock *clk; /* borrowed */
    bool clk_real;              /* clk reads CLOCK_MONOTONIC */
    uint64_t now_ns;            /* cached at each iteration */
    int epfd, tfd, wfd;         /* owned: epoll, timerfd, eventfd */
    uint64_t armed_ns;          /* timerfd deadline, 0 when disarmed */
    uint64_t spin_ns;           /* busy-poll this close to a deadline */
    uint64_t spin_max_ns;       /* adaptive mode: bound of spin_ns */
    bool spin_auto;             /* spin_ns follows the wake-up lateness */
    bool slept;                 /* this tick's epoll_wait could block */
    bool poll_next;             /* the next wait polls (loop_poll_next) */
    uint64_t woke_ns;           /* clock right after this tick's wait */
    uint32_t wake_ring[LOOP_WAKE_SAMPLES]; /* recent lateness, ns */
    uint64_t wakes, wake_max_ns, spins;
    uint64_t wake_p50_ns, wake_p99_ns; /* of wake_ring, at last update */
    struct loop_fd *fds;               /* owned: fd_max entries */
    int fd_max;
    struct loop_timer **heap; /* owned array; elements borrowed */
    size_t heap_len, heap_cap;
    uint64_t seq_next;
    uint32_t batch_pos; /* callbacks run so far in this timer pass */
    loop_hook_fn *before_sleep;
    void *before_sleep_arg; /* borrowed */
    atomic_bool stop;
    atomic_bool woken; /* a wake is pending in the eventfd */
};

/* ---- timer heap: min-heap on (deadline_ns, seq) ---- */

static bool
timer_less(const struct loop_timer *a, const struct loop_timer *b)
{
    if (a->deadline_ns != b->deadline_ns)
        return a->deadline_ns < b->deadline_ns;
    return a->seq < b->seq;
}

static void
heap_place(struct loop *l, size_t i, struct loop_timer *t)
{
    l->heap[i] = t;
    t->heap_idx = i;
}

static void
heap_up(struct loop *l, size_t i)
{
    struct loop_timer *t = l->heap[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!timer_less(t, l->heap[parent]))
            break;
        heap_place(l, i, l->heap[parent]);
        i = parent;
    }
    heap_place(l, i, t);
}

static void
heap_down(struct loop *l, size_t i)
{
    struct loop_timer *t = l->heap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= l->heap_len)
            break;
        if (c + 1 < l->heap_len && timer_less(l->heap[c + 1], l->heap[c]))
            c++;
        if (!timer_less(l->heap[c], t))
            break;
        heap_place(l, i, l->heap[c]);
        i = c;
    }
    heap_place(l, i, t);
}

static void
heap_remove(struct loop *l, struct loop_timer *t)
{
    size_t i = t->heap_idx;
    struct loop_timer *last;

    MT_ASSERT(i < l->heap_len && l->heap[i] == t);
    last = l->heap[--l->heap_len];
    t->heap_idx = SIZE_MAX;
    if (last == t)
        return;
    heap_place(l, i, last);
    if (i > 0 && timer_less(last, l->heap[(i - 1) / 2]))
        heap_up(l, i);
    else
        heap_down(l, i);
}

static int
heap_grow(struct loop *l)
{
    size_t cap = l->heap_cap ? l->heap_cap * 2 : 64;
    struct loop_timer **h;

    if (cap > LOOP_HEAP_MAX)
        return MT_ELIMIT;
    h = mt_realloc(l->heap, cap * sizeof(*h));
    if (h == NULL)
        return -ENOMEM;
    l->heap = h;
    l->heap_cap = cap;
    return 0;
}

/* ---- construction ---- */

static int
loop_open_fds(struct loop *l, struct mt_err *err)
{
    struct epoll_event ev;

    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (l->epfd < 0)
        return mt_err_set(err, -errno, 0, "epoll_create1: %s", strerror(errno));
    l->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (l->tfd < 0)
        return mt_err_set(err, -errno, 0, "timerfd_create: %s",
                          strerror(errno));
    l->wfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (l->wfd < 0)
        return mt_err_set(err, -errno, 0, "eventfd: %s", strerror(errno));
    memset(&ev, 0, sizeof(ev));
    ev.events = EPOLLIN;
    ev.data.u64 = LOOP_TAG_TIMER;
    if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->tfd, &ev) < 0)
        return mt_err_set(err, -errno, 0, "epoll_ctl(timerfd): %s",
                          strerror(errno));
    ev.data.u64 = LOOP_TAG_WAKE;
    if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->wfd, &ev) < 0)
        return mt_err_set(err, -errno, 0, "epoll_ctl(eventfd): %s",
                          strerror(errno));
    return 0;
}

/*
 * New loop on clk (NULL: real monotonic clock) for fds below fd_max
 * (fd_max <= 0: the process's RLIMIT_NOFILE soft limit).  Allocates the fd
 * table (about 24 bytes per fd) and three kernel objects.  NULL with err
 * filled on failure.
 */
struct loop *
loop_new(const struct mt_clock *clk, int fd_max, struct mt_err *err)
{
    struct loop *l;
    struct rlimit rl;

    if (fd_max <= 0) {
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
            fd_max = rl.rlim_cur > LOOP_FD_MAX_CAP ? LOOP_FD_MAX_CAP
                                                   : (int)rl.rlim_cur;
        else
            fd_max = 65536;
    }
    if (fd_max > LOOP_FD_MAX_CAP) {
        mt_err_set(err, MT_ELIMIT, 0, "loop: fd_max %d over %d", fd_max,
                   LOOP_FD_MAX_CAP);
        return NULL;
    }
    l = mt_calloc(1, sizeof(*l));
    if (l == NULL) {
        mt_err_set(err, -ENOMEM, 0, "loop: out of memory");
        return NULL;
    }
    l->epfd = l->tfd = l->wfd = -1;
    l->clk = clk ? clk : mt_clock_real();
    l->clk_real = l->clk->now_ns == mt_clock_real()->now_ns;
    l->fd_max = fd_max;
    l->fds = mt_calloc((size_t)fd_max, sizeof(*l->fds));
    if (l->fds == NULL) {
        mt_err_set(err, -ENOMEM, 0, "loop: out of memory for %d fds", fd_max);
        goto fail;
    }
    atomic_init(&l->stop, false);
    atomic_init(&l->woken, false);
    if (loop_open_fds(l, err) < 0)
        goto fail;
    l->now_ns = l->clk->now_ns(l->clk);
    return l;
fail:
    loop_free(l);
    return NULL;
}

/* Frees the loop and its internal fds; caller fds stay open. NULL ok. */
void
loop_free(struct loop *l)
{
    if (l == NULL)
        return;
    for (size_t i = 0; i < l->heap_len; i++)
        l->heap[i]->heap_idx = SIZE_MAX;
    if (l->epfd >= 0)
        close(l->epfd);
    if (l->tfd >= 0)
        close(l->tfd);
    if (l->wfd >= 0)
        close(l->wfd);
    mt_free(l->heap);
    mt_free(l->fds);
    mt_free(l);
}

/* ---- fds ---- */

static uint32_t
loop_epoll_events(unsigned events)
{
    uint32_t e = 0;
    if (events & LOOP_READ)
        e |= EPOLLIN;
    if (events & LOOP_WRITE)
        e |= EPOLLOUT;
    if (events & LOOP_EDGE)
        e |= EPOLLET;
    if (events & LOOP_RDHUP)
        e |= EPOLLRDHUP;
    if (events & LOOP_PRI)
        e |= EPOLLPRI;
    return e;
}

static int
loop_fd_register(struct loop *l, int fd, unsigned events, loop_io_fn *cb,
                 void *arg, bool exclusive)
{
    struct epoll_event ev;
    struct loop_fd *f;

    if (fd < 0 || fd >= l->fd_max || cb == NULL)
        return fd >= l->fd_max ? MT_ELIMIT : -EINVAL;
    f = &l->fds[fd];
    if (f->cb != NULL)
        return -EEXIST;
    memset(&ev, 0, sizeof(ev));
    ev.events = loop_epoll_events(events) | (exclusive ? EPOLLEXCLUSIVE : 0);
    ev.data.u64 = (uint64_t)(f->gen + 1) << 32 | (uint32_t)fd;
    if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
        return -errno;
    f->gen++;
    f->cb = cb;
    f->arg = arg;
    f->events = events & LOOP_FD_EVENTS;
    f->exclusive = exclusive;
    return 0;
}

/*
 * Watches fd (below fd_max) for events (LOOP_READ|LOOP_WRITE, maybe 0);
 * cb(l, fd, arg, ready) runs from loop_run*.  0, -EEXIST if fd is already
 * watched, MT_ELIMIT if fd >= fd_max, or -errno from epoll_ctl.
 */
int
loop_fd_add(struct loop *l, int fd, unsigned events, loop_io_fn *cb, void *arg)
{
    return loop_fd_register(l, fd, events, cb, arg, false);
}

/*
 * Watches a listening fd shared between loops for LOOP_READ with
 * EPOLLEXCLUSIVE: the kernel wakes one of the loops, not all.  Such an fd
 * cannot be changed with loop_fd_mod (-EINVAL).
 */
int
loop_fd_add_exclusive(struct loop *l, int fd, loop_io_fn *cb, void *arg)
{
    return loop_fd_register(l, fd, LOOP_READ, cb, arg, true);
}

/*
 * Changes the watched events of fd; a no-op (no syscall) when unchanged.
 * 0, -ENOENT if fd is not watched, -EINVAL for an exclusive fd, or -errno.
 */
int
loop_fd_mod(struct loop *l, int fd, unsigned events)
{
    struct epoll_event ev;
    struct loop_fd *f;

    if (fd < 0 || fd >= l->fd_max || l->fds[fd].cb == NULL)
        return -ENOENT;
    f = &l->fds[fd];
    events &= LOOP_FD_EVENTS;
    if (events == f->events)
        return 0;
    if (f->exclusive)
        return -EINVAL;
    memset(&ev, 0, sizeof(ev));
    ev.events = loop_epoll_events(events);
    ev.data.u64 = (uint64_t)f->gen << 32 | (uint32_t)fd;
    if (epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &ev) < 0)
        return -errno;
    f->events = events;
    return 0;
}

/*
 * Stops watching fd (call it before close(fd)).  Events of fd already
 * fetched in this tick are not delivered.  Unknown fds are ignored.
 */
void
loop_fd_del(struct loop *l, int fd)
{
    struct epoll_event ev;

    if (fd < 0 || fd >= l->fd_max || l->fds[fd].cb == NULL)
        return;
    memset(&ev, 0, sizeof(ev));
    (void)epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, &ev);
    l->fds[fd].cb = NULL;
    l->fds[fd].arg = NULL;
    l->fds[fd].events = 0;
    l->fds[fd].exclusive = false;
}

/* ---- timers ---- */

/* Marks t as not armed; call once before first use. */
void
loop_timer_init(struct loop_timer *t)
{
    memset(t, 0, sizeof(*t));
    t->heap_idx = SIZE_MAX;
}

/*
 * (Re)arms t to fire at absolute deadline_ns of the loop's clock; a timer
 * armed at UINT64_MAX never fires.  Equal deadlines fire in start order.
 * O(log n).  Growing the heap past LOOP_HEAP_MAX timers or failing to
 * allocate is fatal (an assertion): the timer count is bounded by callers'
 * own limits (connections, queued replies).
 */
void
loop_timer_start(struct loop *l, struct loop_timer *t, uint64_t deadline_ns,
                 loop_timer_fn *cb, void *arg)
{
    MT_ASSERT(cb != NULL);
    if (t->heap_idx != SIZE_MAX)
        heap_remove(l, t);
    t->deadline_ns = deadline_ns;
    t->seq = l->seq_next++;
    t->cb = cb;
    t->arg = arg;
    if (l->heap_len == l->heap_cap) {
        int rc = heap_grow(l);
        if (rc < 0)
            mt_error("loop: timer heap: %s", mt_strerror(rc));
        MT_ASSERT(rc == 0);
    }
    l->heap[l->heap_len] = t;
    t->heap_idx = l->heap_len++;
    heap_up(l, t->heap_idx);
}

/* Disarms t if armed; O(log n). */
void
loop_timer_stop(struct loop *l, struct loop_timer *t)
{
    if (t->heap_idx != SIZE_MAX)
        heap_remove(l, t);
}

/* True while t is armed (between start and its callback or stop). */
bool
loop_timer_active(const struct loop_timer *t)
{
    return t->heap_idx != SIZE_MAX;
}

/*
 * now + delay_ns, saturating at UINT64_MAX (a timer that never fires)
 * instead of wrapping to the past.
 */
uint64_t
loop_deadline_after(const struct loop *l, uint64_t delay_ns)
{
    if (delay_ns > UINT64_MAX - l->now_ns)
        return UINT64_MAX;
    return l->now_ns + delay_ns;
}

/*
 * Runs the due timers in (deadline, seq) order.  In precision mode the
 * clock is read again after each callback (about 25 ns), so a timer that
 * falls due while the batch runs is released in the same pass instead of
 * after the next epoll_wait and the I/O callbacks of the next tick.
 */
static void
loop_run_timers(struct loop *l)
{
    uint64_t seq_end = l->seq_next; /* timers started from now wait a tick */

    l->batch_pos = 0;
    while (l->heap_len > 0) {
        struct loop_timer *t = l->heap[0];
        if (t->deadline_ns > l->now_ns && l->spin_ns > 0 && l->batch_pos > 0)
            loop_update_time(l); /* did it fall due during the batch? */
        if (t->deadline_ns > l->now_ns || t->deadline_ns == UINT64_MAX)
            break;
        if (t->seq >= seq_end)
            break; /* all due timers of this tick ran; t is new */
        heap_remove(l, t);
        t->cb(l, t, t->arg);
        l->batch_pos++;
    }
}

/* Position of the running timer callback in its batch (see loop.h). */
uint32_t
loop_timer_batch_pos(const struct loop *l)
{
    return l->batch_pos;
}

/* ---- running ---- */

/*
 * Timer precision: the loop sleeps until spin_ns before the first timer's
 * deadline, then busy-polls (epoll_wait with a zero timeout, I/O still
 * served) until it is due.  0 (the default) never spins.  A wake-up from
 * a timerfd is typically 5-60 us late (more on virtual machines); spinning
 * the last 100 us lets a 1 ms delay land within a few microseconds, at the
 * cost of that much CPU per timer.  Turns the adaptive mode off.
 */
void
loop_set_timer_spin(struct loop *l, uint64_t spin_ns)
{
    l->spin_ns = spin_ns;
    l->spin_auto = false;
}

/*
 * Adaptive spin window bounded by max_ns (see loop.h).  Starts at max_ns
 * until LOOP_WAKE_WARMUP wake-ups are measured.  Cost: a sort of
 * LOOP_WAKE_SAMPLES integers every LOOP_WAKE_WARMUP timer wake-ups.
 */
void
loop_set_timer_spin_auto(struct loop *l, uint64_t max_ns)
{
    l->spin_max_ns = max_ns;
    l->spin_auto = max_ns > 0;
    l->spin_ns = max_ns;
    if (l->spin_auto && l->wakes >= LOOP_WAKE_WARMUP)
        l->spin_ns = l->wake_p99_ns + l->wake_p99_ns / 4 + LOOP_SPIN_MARGIN_NS;
    if (l->spin_ns > max_ns)
        l->spin_ns = max_ns;
}

/* The current spin window in ns (0: the loop never spins). */
uint64_t
loop_timer_spin_ns(const struct loop *l)
{
    return l->spin_ns;
}

static int
cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* p50 and p99 of the recent wake-ups (0 when none).  Sorts a copy. */
static void
loop_wake_quantiles(const struct loop *l, uint64_t *p50, uint64_t *p99)
{
    uint32_t tmp[LOOP_WAKE_SAMPLES];
    size_t n =
        l->wakes < LOOP_WAKE_SAMPLES ? (size_t)l->wakes : LOOP_WAKE_SAMPLES;

    *p50 = *p99 = 0;
    if (n == 0)
        return;
    memcpy(tmp, l->wake_ring, n * sizeof(tmp[0]));
    qsort(tmp, n, sizeof(tmp[0]), cmp_u32);
    *p50 = tmp[(n - 1) / 2];
    *p99 = tmp[(n * 99 + 99) / 100 - 1];
}

/* Recomputes the recent wake-up quantiles and the adaptive window. */
static void
loop_wake_update(struct loop *l)
{
    loop_wake_quantiles(l, &l->wake_p50_ns, &l->wake_p99_ns);
    if (l->spin_auto) {
        uint64_t w = l->wake_p99_ns + l->wake_p99_ns / 4 + LOOP_SPIN_MARGIN_NS;
        l->spin_ns = w < l->spin_max_ns ? w : l->spin_max_ns;
    }
}

/* Wake-up lateness statistics of this loop (see struct loop_wake_stats).
 * Sorts the recent samples: call it for reports, not per event. */
void
loop_wake_stats_get(const struct loop *l, struct loop_wake_stats *out)
{
    memset(out, 0, sizeof(*out));
    out->wakes = l->wakes;
    loop_wake_quantiles(l, &out->p50_ns, &out->p99_ns);
    out->max_ns = l->wake_max_ns;
    out->spin_ns = l->spin_ns;
    out->spins = l->spins;
}

/* The timerfd woke a blocking wait: records how late (vs. armed_ns). */
static void
loop_wake_sample(struct loop *l)
{
    uint64_t late;

    if (!l->slept || l->armed_ns == 0 || l->woke_ns < l->armed_ns)
        return;
    late = l->woke_ns - l->armed_ns;
    if (late > l->wake_max_ns)
        l->wake_max_ns = late;
    l->wake_ring[l->wakes % LOOP_WAKE_SAMPLES] =
        late > UINT32_MAX ? UINT32_MAX : (uint32_t)late;
    l->wakes++;
    if (l->wakes % LOOP_WAKE_WARMUP == 0)
        loop_wake_update(l);
}

/* Sets fn(l, arg) to run once per iteration before the loop blocks. */
void
loop_set_before_sleep(struct loop *l, loop_hook_fn *fn, void *arg)
{
    l->before_sleep = fn;
    l->before_sleep_arg = arg;
}

/* The clock value read after this iteration's wait. */
uint64_t
loop_now_ns(const struct loop *l)
{
    return l->now_ns;
}

/* Reads the clock now and caches it; returns it. */
uint64_t
loop_update_time(struct loop *l)
{
    l->now_ns = l->clk->now_ns(l->clk);
    return l->now_ns;
}

/* Arms the timerfd to wake at deadline_ns (loop clock), unless it already
 * wakes earlier.  Returns false when the deadline is already due. */
static bool
loop_arm(struct loop *l, uint64_t deadline_ns)
{
    struct itimerspec its;
    uint64_t at;
    int flags = 0;

    if (deadline_ns <= l->now_ns)
        return false;
    if (l->armed_ns != 0 && l->armed_ns > l->now_ns &&
        l->armed_ns <= deadline_ns)
        return true; /* an earlier wake is pending; we re-arm then */
    memset(&its, 0, sizeof(its));
    if (l->clk_real) {
        at = deadline_ns;
        flags = TFD_TIMER_ABSTIME;
    } else {
        at = deadline_ns - l->now_ns;
    }
    its.it_value.tv_sec = (time_t)(at / 1000000000u);
    its.it_value.tv_nsec = (long)(at % 1000000000u);
    if (timerfd_settime(l->tfd, flags, &its, NULL) < 0) {
        mt_warn("loop: timerfd_settime: %s", strerror(errno));
        return false; /* poll instead of sleeping past the deadline */
    }
    l->armed_ns = deadline_ns;
    return true;
}

static void
loop_drain(int fd)
{
    uint64_t v;
    while (read(fd, &v, sizeof(v)) > 0)
        ;
}

static void
loop_dispatch(struct loop *l, const struct epoll_event *ev)
{
    uint32_t tag = (uint32_t)ev->data.u64;
    uint32_t gen = (uint32_t)(ev->data.u64 >> 32);
    unsigned ready = 0;
    struct loop_fd *f;

    if (ev->data.u64 == LOOP_TAG_TIMER) {
        loop_drain(l->tfd);
        loop_wake_sample(l);
        l->armed_ns = 0;
        return;
    }
    if (ev->data.u64 == LOOP_TAG_WAKE) {
        /* Drain first, then clear: a wake that lands in between saw
         * woken == true and did not write, but this iteration runs the
         * hook before sleeping again.  Clearing first could leave woken
         * set with the counter drained, and every later wake would be
         * lost. */
        loop_drain(l->wfd);
        atomic_store(&l->woken, false);
        return;
    }
    if (tag >= (uint32_t)l->fd_max)
        return;
    f = &l->fds[tag];
    if (f->cb == NULL || f->gen != gen)
        return; /* deleted (and maybe reused) earlier in this batch */
    if (ev->events & EPOLLIN)
        ready |= LOOP_READ;
    if (ev->events & EPOLLOUT)
        ready |= LOOP_WRITE;
    if (ev->events & (EPOLLERR | EPOLLHUP))
        ready |= LOOP_ERROR;
    if (ev->events & EPOLLRDHUP)
        ready |= LOOP_RDHUP;
    if (ev->events & EPOLLPRI)
        ready |= LOOP_PRI;
    ready &= f->events | LOOP_ERROR;
    if (ready != 0)
        f->cb(l, (int)tag, f->arg, ready);
}

/*
 * One iteration: before-sleep hook, wait for I/O at most timeout_ns (0:
 * poll; UINT64_MAX: until an fd, timer or wake), read the clock, run due
 * timers, dispatch up to LOOP_EVENTS_MAX ready fds.  0, or -errno from
 * epoll_wait (EINTR is not an error).
 */
int
loop_run_once(struct loop *l, uint64_t timeout_ns)
{
    struct epoll_event evs[LOOP_EVENTS_MAX];
    uint64_t deadline = UINT64_MAX;
    int n, wait_ms = -1;

    if (l->before_sleep != NULL)
        l->before_sleep(l, l->before_sleep_arg);
    if (l->heap_len > 0)
        deadline = l->heap[0]->deadline_ns;
    if (timeout_ns != UINT64_MAX && timeout_ns < deadline - l->now_ns)
        deadline = timeout_ns > UINT64_MAX - l->now_ns ? UINT64_MAX
                                                       : l->now_ns + timeout_ns;
    if (atomic_load(&l->stop) || l->poll_next)
        wait_ms = 0;
    else if (timeout_ns == 0 || deadline <= l->now_ns)
        wait_ms = 0;
    else if (deadline != UINT64_MAX && deadline - l->now_ns <= l->spin_ns) {
        wait_ms = 0; /* busy-poll the last stretch: wake-ups are late */
        l->spins++;
    } else if (deadline != UINT64_MAX && !loop_arm(l, deadline - l->spin_ns))
        wait_ms = 0;
    l->poll_next = false;
    l->slept = wait_ms != 0;
    n = epoll_wait(l->epfd, evs, LOOP_EVENTS_MAX, wait_ms);
    if (n < 0 && errno != EINTR)
        return -errno;
    l->woke_ns = loop_update_time(l);
    loop_run_timers(l);
    for (int i = 0; i < n; i++) {
        loop_dispatch(l, &evs[i]);
        if (l->spin_ns > 0 && l->heap_len > 0 &&
            l->heap[0]->deadline_ns <= l->clk->now_ns(l->clk)) {
            loop_update_time(l); /* a release fell due during the I/O */
            loop_run_timers(l);
        }
    }
    return 0;
}

/*
 * Runs iterations until loop_stop() (which it consumes, so the loop can be
 * run again).  0, or the negative code of a failed iteration.
 */
int
loop_run(struct loop *l)
{
    int rc;

    while (!atomic_exchange(&l->stop, false)) {
        rc = loop_run_once(l, UINT64_MAX);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* See loop.h.  Loop thread only: no eventfd write, no shared flag. */
void
loop_poll_next(struct loop *l)
{
    l->poll_next = true;
}

/* Thread-safe and async-signal-safe: loop_run returns after this tick. */
void
loop_stop(struct loop *l)
{
    atomic_store(&l->stop, true);
    loop_wake(l);
}

/* Thread-safe and async-signal-safe: interrupts a blocked wait. */
void
loop_wake(struct loop *l)
{
    uint64_t one = 1;
    if (atomic_exchange(&l->woken, true))
        return; /* a wake is already pending */
    if (write(l->wfd, &one, sizeof(one)) < 0)
        return; /* EAGAIN: the counter is already non-zero */
}
