/*
 * loop.h -- an epoll event loop with a timer heap (the shape of redis ae.h).
 *
 * One loop per thread; a loop object is used only from its own thread,
 * except loop_stop() and loop_wake(), which any thread may call.
 * Timers live in a binary min-heap keyed on (deadline_ns, seq), so timers
 * with equal deadlines fire in the order they were started (libuv
 * src/timer.c).  Deadlines are absolute nanoseconds of the loop's clock;
 * they are armed with a timerfd so a 1 ms delay is not rounded to epoll's
 * millisecond timeout.  The loop reads its clock once per iteration
 * (loop_now_ns() is that cached value), and in precision mode (a spin
 * window set) also after each fd callback, to run timers that fell due.
 */
#ifndef MT_LOOP_H
#define MT_LOOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "err.h"

#define LOOP_READ (1u << 0)
#define LOOP_WRITE (1u << 1)
/* Passed to callbacks only (EPOLLERR/EPOLLHUP). */
#define LOOP_ERROR (1u << 2)
/*
 * With LOOP_READ/LOOP_WRITE in loop_fd_add/loop_fd_mod: edge-triggered
 * (EPOLLET).  The fd is reported when it becomes ready, not at every
 * iteration while it stays ready, so the callback must read (or write)
 * until EAGAIN.  Saves the kernel re-polling drained sockets that
 * level-triggered epoll puts back on its ready list.
 */
#define LOOP_EDGE (1u << 3)
/*
 * With LOOP_READ in loop_fd_add/loop_fd_mod: also watch for the peer's
 * FIN (EPOLLRDHUP), reported to the callback as LOOP_RDHUP (with
 * LOOP_READ).  Lets an edge-triggered reader tell "a short read drained
 * the socket" from "an EOF waits behind the data just read".
 */
#define LOOP_RDHUP (1u << 4)
/*
 * In loop_fd_add/loop_fd_mod: also watch for TCP urgent data (EPOLLPRI),
 * reported to the callback as LOOP_PRI.  recv() stops short at an urgent
 * mark with bytes still queued behind it, so an edge-triggered reader
 * must not take a short read for "drained" while LOOP_PRI was reported.
 */
#define LOOP_PRI (1u << 5)

struct loop;
struct loop_timer;

typedef void loop_io_fn(struct loop *l, int fd, void *arg, unsigned events);
typedef void loop_timer_fn(struct loop *l, struct loop_timer *t, void *arg);
typedef void loop_hook_fn(struct loop *l, void *arg);

/* Embedded by the caller; the loop only links it into its heap. */
struct loop_timer {
    uint64_t deadline_ns;
    uint64_t seq;    /* insertion order, for ties */
    size_t heap_idx; /* position in the heap; SIZE_MAX when not armed */
    loop_timer_fn *cb;
    void *arg; /* borrowed */
};

/*
 * New loop on clock clk (borrowed; NULL = real monotonic clock), for file
 * descriptors below fd_max.  NULL with err filled on failure.
 */
struct loop *loop_new(const struct mt_clock *clk, int fd_max,
                      struct mt_err *err);
void loop_free(struct loop *l); /* NULL is a no-op; fds are not closed */

/* Watch fd for events (LOOP_READ|LOOP_WRITE); cb(l, fd, arg, events). */
int loop_fd_add(struct loop *l, int fd, unsigned events, loop_io_fn *cb,
                void *arg);
int loop_fd_mod(struct loop *l, int fd, unsigned events);
void loop_fd_del(struct loop *l, int fd);

/* Same as loop_fd_add, with EPOLLEXCLUSIVE (for a shared listening fd). */
int loop_fd_add_exclusive(struct loop *l, int fd, loop_io_fn *cb, void *arg);

void loop_timer_init(struct loop_timer *t);
/* (Re)arms t at absolute deadline_ns; overflow clamps to UINT64_MAX. */
void loop_timer_start(struct loop *l, struct loop_timer *t,
                      uint64_t deadline_ns, loop_timer_fn *cb, void *arg);
void loop_timer_stop(struct loop *l, struct loop_timer *t);
bool loop_timer_active(const struct loop_timer *t);
/* loop_now_ns(l) + delay_ns, saturating at UINT64_MAX (never fires). */
uint64_t loop_deadline_after(const struct loop *l, uint64_t delay_ns);

/*
 * Sleep only until spin_ns before the first timer's deadline, then
 * busy-poll (I/O still served) until it is due: trades CPU for timer
 * precision (timerfd wake-ups are typically 5-60 us late).  0: never spin.
 */
void loop_set_timer_spin(struct loop *l, uint64_t spin_ns);

/*
 * Adaptive spin (precision mode): like loop_set_timer_spin, but the spin
 * window follows this loop's own measured wake-up lateness: each time the
 * timerfd wakes the loop, how late it woke is recorded (last
 * LOOP_WAKE_SAMPLES wake-ups); the window is their p99 plus a quarter,
 * plus LOOP_SPIN_MARGIN_NS, at most max_ns (0 turns spinning off).  Until
 * LOOP_WAKE_WARMUP wake-ups are seen the window is max_ns.
 *
 * Both spin modes also run due timers between the fd callbacks of a tick
 * (one clock read per callback), so a burst of I/O does not delay a
 * release that falls due meanwhile.
 */
#define LOOP_WAKE_SAMPLES 256
#define LOOP_WAKE_WARMUP 32
#define LOOP_SPIN_MARGIN_NS 5000u
#define LOOP_SPIN_AUTO_MAX_NS 200000u /* a suggested bound: 0.2 ms */
void loop_set_timer_spin_auto(struct loop *l, uint64_t max_ns);
/* The spin window in use now (fixed, or the adaptive one). */
uint64_t loop_timer_spin_ns(const struct loop *l);

/* Timer wake-up lateness seen by this loop (recent LOOP_WAKE_SAMPLES). */
struct loop_wake_stats {
    uint64_t wakes;   /* timerfd wake-ups since loop_new */
    uint64_t p50_ns;  /* of the recent samples */
    uint64_t p99_ns;  /* of the recent samples */
    uint64_t max_ns;  /* since loop_new */
    uint64_t spin_ns; /* the current window */
    uint64_t spins;   /* iterations that busy-polled instead of sleeping */
};
void loop_wake_stats_get(const struct loop *l, struct loop_wake_stats *out);

/*
 * Inside a timer callback: how many timer callbacks ran before this one in
 * the same pass over the due timers (0: the first of its batch).  A
 * release that is late with position 0 was late because the loop woke or
 * was scheduled late; a later position was also queued behind the earlier
 * callbacks of its batch.  In precision mode (a spin window set) a pass
 * re-reads the clock after each callback, so timers that fall due while a
 * batch runs join it.  Outside a timer callback: the last pass's count.
 */
uint32_t loop_timer_batch_pos(const struct loop *l);

/* Called once per iteration before the loop blocks. */
void loop_set_before_sleep(struct loop *l, loop_hook_fn *fn, void *arg);
/*
 * From the loop's own thread (a callback or the before-sleep hook): the
 * next wait of this loop only polls (epoll_wait timeout 0), then the hook
 * runs again.  For work left for the next turn (an edge-triggered socket
 * still readable); unlike loop_wake, no eventfd write and read, and no
 * dependence on a wake another thread has announced but not yet written.
 */
void loop_poll_next(struct loop *l);

/* The clock value read at the start of this iteration. */
uint64_t loop_now_ns(const struct loop *l);
/* Re-reads the clock (for precise stamping of a read that just completed). */
uint64_t loop_update_time(struct loop *l);

/* Runs until loop_stop(). Returns 0 or a negative code. */
int loop_run(struct loop *l);
/* One iteration, blocking at most timeout_ns (0: poll, UINT64_MAX: wait). */
int loop_run_once(struct loop *l, uint64_t timeout_ns);

/* Thread-safe: makes loop_run() return after the current iteration. */
void loop_stop(struct loop *l);
/*
 * Thread-safe and async-signal-safe: interrupts a blocked epoll_wait.
 * Guarantee: after loop_wake returns, the before-sleep hook runs at least
 * once before the loop blocks again, so state a thread published before
 * calling it is seen by the hook.  Wakes are coalesced (one eventfd write
 * while one is pending).
 */
void loop_wake(struct loop *l);

#endif
