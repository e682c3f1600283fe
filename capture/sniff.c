/*
 * sniff.c -- `mtrace capture --pcap FILE` and `--iface IF`: libpcap input
 * feeding the flow table (pcap_flow.c), trace header / stats / summary,
 * progress bar, live capture loop (see sniff.h, docs/capture-pcap.md).
 *
 * Timestamps: packets are read at nanosecond precision
 * (PCAP_TSTAMP_PRECISION_NANO); the trace's t_ns is the packet's Unix time
 * in ns, start_wall_ns = start_mono_ns = the first packet's time, and
 * ts_precision_ns records the file's native precision (1 or 1000).
 *
 * Live capture (docs/capture-pcap.md "Live capture"): libpcap without
 * immediate mode, so that on Linux it uses a TPACKET_V3 ring of 256 KiB
 * blocks packed with packets of any size (immediate mode forces
 * TPACKET_V2, whose slots are sized for the interface MTU: on lo, 64 KiB
 * each, so a 32 MiB ring held 256 packets, each lo packet taking two slots).
 * The kernel hands a block over when it is full or LIVE_BLOCK_MS after it
 * was opened; at the stop the loop waits that long for the last block and
 * keeps the packets stamped up to the stop.  On a loopback interface the
 * kernel queues each packet twice (outgoing and incoming; libpcap discards
 * the outgoing copy after it took ring space), so the ring holds half as
 * much and kernel_dropped may count a lost packet twice.  (An `inbound`
 * filter would avoid the copy, but libpcap runs a new filter in user space
 * on the first ring block, where `inbound` matches nothing: that block's
 * packets would be lost.)
 */
#include "sniff.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pcap/pcap.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture/linkdec.h"
#include "capture/pcap_flow.h"
#include "capture/pcap_src.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/trace.h"

#define SNAPLEN 262144
#define PROGRESS_MIN_BYTES (32ull * 1024 * 1024)
#define PROGRESS_EVERY_NS (200ull * 1000 * 1000)
#define LIVE_POLL_MS 100
/* TPACKET_V3 block timeout: a packet reaches us at most this late. */
#define LIVE_BLOCK_MS 50
/* At the stop, how long past LIVE_BLOCK_MS to wait for the last block. */
#define LIVE_DRAIN_SLACK_MS 50
#define READ_BUF (1024 * 1024)
#define OFFLINE_BATCH 4096
#define PROBE_BYTES (64 * 1024)

static volatile sig_atomic_t g_stop;
static pcap_t *volatile g_pcap;

void
sniff_stop(void)
{
    pcap_t *p = g_pcap;

    g_stop = 1;
    if (p != NULL)
        pcap_breakloop(p);
}

static void
on_signal(int sig)
{
    (void)sig;
    sniff_stop();
}

/* State of one run. */
struct sniff {
    const struct sniff_opts *o;
    pcap_t *p; /* owned */
    int dlt;
    struct pflow_table *tab; /* owned */
    struct trace_writer *w;  /* owned */
    uint64_t first_ns, last_ns;
    uint64_t kernel_dropped;
    uint64_t pkts;    /* packets read from a file so far */
    uint64_t stop_ns; /* live drain: keep packets stamped up to this */
    int rc;           /* first fatal error from the callback */
    struct mt_err *err;
    /* progress */
    bool progress;
    uint64_t file_size;
    uint64_t next_progress_ns;
    uint32_t prec_ns; /* the file's native timestamp precision */
};

/*
 * The BPF expression for --port (default 27017), or --filter as given.  On
 * Ethernet the same ports are matched behind one VLAN tag too; other link
 * types have no VLAN tags in the frame, and libpcap refuses "vlan" there
 * (e.g. the cooked headers of --iface any).
 */
static void
build_filter(const struct sniff_opts *o, int dlt, char *out, size_t cap)
{
    size_t n = 0;
    uint16_t def = 27017;
    const uint16_t *ports = o->nports ? o->ports : &def;
    size_t np = o->nports ? o->nports : 1;
    int variants = dlt == DLT_EN10MB ? 2 : 1;

    if (o->filter != NULL) {
        snprintf(out, cap, "%s", o->filter);
        return;
    }
    out[0] = 0;
    for (int v = 0; v < variants; v++) {
        n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, "%s(%stcp and (",
                              v ? " or " : "", v ? "vlan and " : "");
        for (size_t i = 0; i < np && n < cap; i++)
            n += (size_t)snprintf(out + n, cap - n, "%sport %u",
                                  i ? " or " : "", ports[i]);
        if (n < cap)
            n += (size_t)snprintf(out + n, cap - n, "))");
    }
}

static int
apply_filter(struct sniff *s, const char *expr)
{
    struct bpf_program prog;

    if (pcap_compile(s->p, &prog, expr, 1, PCAP_NETMASK_UNKNOWN) < 0)
        return mt_err_set(s->err, MT_EUSAGE, 0, "bad --filter '%s': %s", expr,
                          pcap_geterr(s->p));
    if (pcap_setfilter(s->p, &prog) < 0) {
        pcap_freecode(&prog);
        return mt_err_set(s->err, MT_EUSAGE, 0, "cannot set filter: %s",
                          pcap_geterr(s->p));
    }
    pcap_freecode(&prog);
    return 0;
}

static int
check_dlt(struct sniff *s, const char *what)
{
    const char *name;

    s->dlt = pcap_datalink(s->p);
    if (linkdec_dlt_supported(s->dlt))
        return 0;
    name = pcap_datalink_val_to_name(s->dlt);
    return mt_err_set(s->err, MT_EUNSUPPORTED, 0,
                      "%s: link type %s (%d) is not supported; supported: "
                      "EN10MB (Ethernet, VLAN), LINUX_SLL, LINUX_SLL2, NULL, "
                      "LOOP, RAW, IPV4, IPV6",
                      what, name ? name : "?", s->dlt);
}

static void
ports_desc(const struct sniff_opts *o, char *out, size_t cap)
{
    size_t n = 0;

    if (o->filter != NULL) {
        snprintf(out, cap, "filter '%s'", o->filter);
        return;
    }
    n += (size_t)snprintf(out, cap, "port");
    if (o->nports == 0)
        snprintf(out + n, cap - n, " 27017");
    for (size_t i = 0; i < o->nports && n < cap; i++)
        n += (size_t)snprintf(out + n, cap - n, "%s%u", i ? "," : " ",
                              o->ports[i]);
}

static int
open_writer(struct sniff *s, uint8_t source, uint64_t start_ns,
            uint32_t prec_ns)
{
    struct trace_header h;
    char pd[128];
    const char *dn = pcap_datalink_val_to_name(s->dlt);
    int level;

    memset(&h, 0, sizeof(h));
    snprintf(h.tool_version, sizeof(h.tool_version), "mtrace %s", MT_VERSION);
    h.source = source;
    ports_desc(s->o, pd, sizeof(pd));
    snprintf(h.source_desc, sizeof(h.source_desc), "%s %s (linktype %s, %s)",
             source == TRACE_SRC_PCAP ? "pcap" : "live",
             source == TRACE_SRC_PCAP ? s->o->pcap_path : s->o->iface,
             dn ? dn : "?", pd);
    h.start_wall_ns = start_ns;
    h.start_mono_ns = start_ns;
    h.ts_precision_ns = prec_ns;
    s->w = trace_writer_open(s->o->out_path, s->o->trace_flags, &h, s->err);
    if (s->w == NULL)
        return s->err ? s->err->code : MT_EUSAGE;
    /* A file import is bound by compression (docs/benchmarks.md "pcap
     * import"): it uses a faster level than live capture. */
    level = s->o->zstd_level != 0      ? s->o->zstd_level
            : source == TRACE_SRC_PCAP ? TRACE_ZSTD_LEVEL_IMPORT
                                       : TRACE_ZSTD_LEVEL_DEFAULT;
    return trace_writer_set_level(s->w, level); /* checked in sniff_run */
}

/* A file import compresses on a second thread when it may use two CPUs
 * (sniff_opts.compress_thread): the import's wall time then drops to about
 * its packet path's, for the same CPU seconds (docs/capture-pcap.md). */
static bool
want_compress_thread(const struct sniff_opts *o)
{
    cpu_set_t set;

    if (o->compress_thread != 0)
        return o->compress_thread > 0;
    if (sched_getaffinity(0, sizeof(set), &set) != 0)
        return false;
    return CPU_COUNT(&set) >= 2;
}

/* Opens the writer (header) and the flow table. */
static int
start_trace(struct sniff *s, uint8_t source, uint64_t start_ns,
            uint32_t prec_ns)
{
    struct pflow_opts po;
    int rc = open_writer(s, source, start_ns, prec_ns);

    if (rc < 0)
        return rc;
    if (source == TRACE_SRC_PCAP && want_compress_thread(s->o)) {
        rc = trace_writer_set_async(s->w);
        if (rc < 0) /* not fatal: the import compresses on its own thread */
            mt_warn("no compression thread (%s); compressing inline",
                    mt_strerror(rc));
    }
    memset(&po, 0, sizeof(po));
    po.ports = s->o->ports;
    po.nports = s->o->nports;
    po.port_filter = s->o->filter == NULL;
    po.redact = s->o->redact;
    s->tab = pflow_new(&po, s->w);
    if (s->tab == NULL)
        return mt_err_set(s->err, -ENOMEM, 0, "out of memory");
    return 0;
}

static void
progress_update(struct sniff *s, bool done)
{
    uint64_t now = mt_now_ns(), pos;
    FILE *f;

    if (!s->progress || (!done && now < s->next_progress_ns))
        return;
    s->next_progress_ns = now + PROGRESS_EVERY_NS;
    if (done) {
        fprintf(stderr, "\r\033[K");
        return;
    }
    f = pcap_file(s->p);
    pos = f != NULL && ftell(f) > 0 ? (uint64_t)ftell(f) : 0;
    fprintf(stderr, "\rmtrace: reading %s: %3u%% (%llu of %llu MB)",
            s->o->pcap_path,
            (unsigned)(s->file_size ? pos * 100 / s->file_size : 0),
            (unsigned long long)(pos >> 20),
            (unsigned long long)(s->file_size >> 20));
}

/* One packet from libpcap (pcap_next_ex or pcap_dispatch). */
static int
handle(struct sniff *s, const struct pcap_pkthdr *ph, const uint8_t *data)
{
    /* PCAP_TSTAMP_PRECISION_NANO: tv_usec holds nanoseconds. */
    uint64_t t =
        (uint64_t)ph->ts.tv_sec * 1000000000ull + (uint64_t)ph->ts.tv_usec;
    size_t cap = ph->caplen < SNAPLEN ? ph->caplen : SNAPLEN;

    if (t > s->last_ns)
        s->last_ns = t;
    return pflow_packet(s->tab, s->dlt, t, data, cap, ph->len, s->err);
}

static void
dispatch_cb(u_char *user, const struct pcap_pkthdr *ph, const u_char *data)
{
    struct sniff *s = (struct sniff *)user;
    int rc;

    if (s->rc < 0)
        return;
    /* The drain after a live stop: only packets up to the stop. */
    if (s->stop_ns != 0 &&
        (uint64_t)ph->ts.tv_sec * 1000000000ull + (uint64_t)ph->ts.tv_usec >
            s->stop_ns)
        return;
    rc = handle(s, ph, data);
    if (rc < 0) {
        s->rc = rc;
        pcap_breakloop(s->p);
    }
}

/* One packet of a file (pcap_dispatch callback); the first one starts the
 * trace (its time is the trace's start). */
static void
offline_cb(u_char *user, const struct pcap_pkthdr *ph, const u_char *data)
{
    struct sniff *s = (struct sniff *)user;
    int rc = 0;

    if (s->rc < 0)
        return;
    s->pkts++;
    if (s->w == NULL) {
        s->first_ns =
            (uint64_t)ph->ts.tv_sec * 1000000000ull + (uint64_t)ph->ts.tv_usec;
        rc = start_trace(s, TRACE_SRC_PCAP, s->first_ns, s->prec_ns);
    }
    if (rc == 0)
        rc = handle(s, ph, data);
    if (rc < 0) {
        s->rc = rc;
        pcap_breakloop(s->p);
    }
}

/*
 * Reads the file to its end in batches of OFFLINE_BATCH packets:
 * pcap_dispatch runs the callback for each without returning (~70
 * instructions per packet fewer than pcap_next_ex, which goes through a
 * one-packet dispatch); between batches, the progress bar and the stop flag.
 */
static int
run_offline(struct sniff *s)
{
    int rc;

    while (!g_stop && s->rc == 0) {
        rc = pcap_dispatch(s->p, OFFLINE_BATCH, offline_cb, (u_char *)s);
        if (rc == 0 || rc == PCAP_ERROR_BREAK) /* end of file, or stopped */
            break;
        if (rc == PCAP_ERROR) {
            mt_warn("%s: %s (after %llu packets); the trace keeps what was "
                    "read",
                    s->o->pcap_path, pcap_geterr(s->p),
                    (unsigned long long)s->pkts);
            break;
        }
        progress_update(s, false);
    }
    if (s->rc < 0)
        return s->rc;
    progress_update(s, true);
    if (s->w == NULL) /* no packet at all: an empty trace */
        return start_trace(s, TRACE_SRC_PCAP, 0, s->prec_ns);
    return 0;
}

/* The native timestamp precision of the regular file fd (its first
 * PROBE_BYTES, read with pread: the file position stays at 0). */
static uint32_t
probe_precision(int fd)
{
    uint8_t *buf = mt_malloc(PROBE_BYTES);
    ssize_t n = buf != NULL ? pread(fd, buf, PROBE_BYTES, 0) : -1;
    uint32_t prec = n > 0 ? pcap_src_precision_ns(buf, (size_t)n) : 1000;

    mt_free(buf);
    return prec;
}

/*
 * The capture file as a FILE* for libpcap, which reads it packet by packet
 * with two freads (record header, packet) into its own buffer.  A regular
 * file is opened in glibc's mmap mode (fdopen "rbm"): the stream's buffer
 * is then the file's mapping, so each fread is one memcpy from the page
 * cache into libpcap's buffer (an fmemopen stream would copy every byte
 * twice: mapping -> stdio buffer -> libpcap; read(2) copies twice too). libpcap
 * has no call that hands out packets in place from a file (pcap_next_ex is
 * zero-copy only out of its own buffer), so this is the one copy left. Anything
 * else (a FIFO, "-") is read through stdio with a large buffer; glibc falls
 * back to that by itself when it cannot map. Only this thread reads the stream:
 * stdio's per-call locking is off.
 */
static FILE *
open_input(struct sniff *s, struct stat *st)
{
    int fd = strcmp(s->o->pcap_path, "-") == 0
                 ? dup(0) /* "-": standard input, as for tcpdump -r - */
                 : open(s->o->pcap_path, O_RDONLY | O_CLOEXEC);
    bool reg;
    FILE *f;

    if (fd < 0)
        return NULL;
    if (fstat(fd, st) != 0) {
        close(fd);
        return NULL;
    }
    reg = S_ISREG(st->st_mode);
    /* A FIFO's bytes can be read once only, by libpcap: its precision is
     * then taken as microseconds. */
    s->prec_ns = reg ? probe_precision(fd) : 1000;
    f = fdopen(fd, reg ? "rbm" : "rb");
    if (f == NULL) {
        close(fd);
        return NULL;
    }
    if (!reg)
        setvbuf(f, NULL, _IOFBF, READ_BUF);
    __fsetlocking(f, FSETLOCKING_BYCALLER); /* one thread */
    return f;
}

static int
open_offline(struct sniff *s)
{
    char eb[PCAP_ERRBUF_SIZE] = "";
    struct stat st;
    FILE *f = open_input(s, &st);

    if (f == NULL)
        return mt_err_set(s->err, -errno, 0, "cannot open %s: %s",
                          s->o->pcap_path, strerror(errno));
    s->p = pcap_fopen_offline_with_tstamp_precision(
        f, PCAP_TSTAMP_PRECISION_NANO, eb);
    if (s->p == NULL) {
        static const uint8_t zstd_magic[4] = {0x28, 0xb5, 0x2f, 0xfd};
        uint8_t m[4];
        bool zst = S_ISREG(st.st_mode) && pread(fileno(f), m, 4, 0) == 4 &&
                   memcmp(m, zstd_magic, 4) == 0;
        fclose(f);
        if (zst) /* a trace handed over instead of a capture */
            return mt_err_set(s->err, MT_ECORRUPT, 0,
                              "%s is zstd data (an mtrace trace?), not a "
                              "capture: use mtrace dump, stats or replay",
                              s->o->pcap_path);
        return mt_err_set(s->err, MT_ECORRUPT, 0,
                          "%s is not a pcap or pcapng file libpcap can read: "
                          "%s",
                          s->o->pcap_path, eb);
    }
    s->file_size = (uint64_t)st.st_size;
    s->progress =
        !s->o->quiet && isatty(2) && s->file_size >= PROGRESS_MIN_BYTES;
    return check_dlt(s, s->o->pcap_path);
}

static int
open_live(struct sniff *s)
{
    char eb[PCAP_ERRBUF_SIZE] = "";
    uint32_t mb = s->o->buffer_mb ? s->o->buffer_mb : SNIFF_BUFFER_MB_DEFAULT;
    int rc;

    if (mb > SNIFF_BUFFER_MB_MAX)
        return mt_err_set(s->err, MT_EUSAGE, 0,
                          "--buffer-mb %u is over the maximum %u", mb,
                          SNIFF_BUFFER_MB_MAX);
    s->p = pcap_create(s->o->iface, eb);
    if (s->p == NULL)
        return mt_err_set(s->err, MT_EUNSUPPORTED, 0, "--iface %s: %s",
                          s->o->iface, eb);
    pcap_set_snaplen(s->p, SNAPLEN);
    pcap_set_promisc(s->p, 0);
    /* Not immediate: TPACKET_V3 (see the top of the file). */
    pcap_set_immediate_mode(s->p, 0);
    pcap_set_timeout(s->p, LIVE_BLOCK_MS);
    pcap_set_buffer_size(s->p, (int)((uint64_t)mb << 20)); /* <= 1 GiB */
    pcap_set_tstamp_precision(s->p, PCAP_TSTAMP_PRECISION_NANO);
    rc = pcap_activate(s->p);
    /* Every failure here is the interface's state or our rights, not the
     * command line (--buffer-mb was checked above): exit 1. */
    if (rc < 0)
        return mt_err_set(s->err,
                          rc == PCAP_ERROR_PERM_DENIED    ? -EPERM
                          : rc == PCAP_ERROR_IFACE_NOT_UP ? -ENETDOWN
                                                          : MT_EUNSUPPORTED,
                          0, "--iface %s: %s%s", s->o->iface,
                          pcap_statustostr(rc),
                          rc == PCAP_ERROR_PERM_DENIED
                              ? " (live capture needs root or CAP_NET_RAW)"
                              : "");
    if (rc > 0)
        mt_warn("--iface %s: %s", s->o->iface, pcap_statustostr(rc));
    return check_dlt(s, s->o->iface);
}

/* One pcap_dispatch of up to cnt packets (-1: all ready); counts them. */
static void
live_dispatch(struct sniff *s, int cnt, uint64_t *count)
{
    int rc = pcap_dispatch(s->p, cnt, dispatch_cb, (u_char *)s);

    if (rc > 0)
        *count += (uint64_t)rc;
    if (rc == PCAP_ERROR && s->rc == 0) {
        mt_err_set(s->err, MT_ECLOSED, 0, "--iface %s: %s", s->o->iface,
                   pcap_geterr(s->p));
        s->rc = MT_ECLOSED;
    }
}

/*
 * After a stop by time or signal: the kernel still holds the packets of the
 * block it has not handed over (at most LIVE_BLOCK_MS old).  Waits for it
 * and takes every packet stamped up to the stop, none after.
 */
static void
live_drain(struct sniff *s, struct pollfd *pfd, uint64_t *count)
{
    uint64_t now = mt_now_ns();
    uint64_t end =
        now + (uint64_t)(LIVE_BLOCK_MS + LIVE_DRAIN_SLACK_MS) * 1000000;

    s->stop_ns = mt_wall_ns();
    for (;;) {
        uint64_t left = s->o->count ? s->o->count - *count : 0;

        live_dispatch(s,
                      left == 0        ? -1
                      : left > INT_MAX ? INT_MAX
                                       : (int)left,
                      count);
        if (s->rc != 0 || now >= end ||
            (s->o->count != 0 && *count >= s->o->count))
            break;
        (void)poll(pfd, 1, (int)((end - now) / 1000000 + 1));
        now = mt_now_ns();
    }
}

static int
run_live(struct sniff *s)
{
    uint64_t start = mt_now_ns(), count = 0, now;
    uint64_t deadline = s->o->duration_s > 0
                            ? start + (uint64_t)(s->o->duration_s * 1e9)
                            : UINT64_MAX;
    struct pollfd pfd;
    struct pcap_stat ps;

    pfd.fd = pcap_get_selectable_fd(s->p);
    pfd.events = POLLIN;
    if (pcap_setnonblock(s->p, 1, NULL) < 0 || pfd.fd < 0)
        return mt_err_set(s->err, MT_EUNSUPPORTED, 0,
                          "--iface %s: cannot poll the capture", s->o->iface);
    g_pcap = s->p;
    while (!g_stop && s->rc == 0 && (now = mt_now_ns()) < deadline &&
           (s->o->count == 0 || count < s->o->count)) {
        uint64_t left_ms = (deadline - now) / 1000000 + 1;
        uint64_t left = s->o->count ? s->o->count - count : 0;
        int cnt = left == 0 ? -1 : left > INT_MAX ? INT_MAX : (int)left;

        if (poll(&pfd, 1,
                 left_ms < LIVE_POLL_MS ? (int)left_ms : LIVE_POLL_MS) < 0 &&
            errno != EINTR)
            break;
        live_dispatch(s, cnt, &count);
        trace_writer_tick(s->w, mt_now_ns());
    }
    g_pcap = NULL;
    if (s->rc == 0 && (s->o->count == 0 || count < s->o->count))
        live_drain(s, &pfd, &count);
    if (pcap_stats(s->p, &ps) == 0)
        s->kernel_dropped = (uint64_t)ps.ps_drop + ps.ps_ifdrop;
    s->last_ns = mt_wall_ns();
    return s->rc;
}

static void
print_summary(const struct sniff *s, const struct pflow_stats *st)
{
    fprintf(
        stderr,
        "mtrace capture: %s: %llu packets (%llu bytes), %llu flows "
        "(%llu mid-stream), %llu messages -> %s\n"
        "mtrace capture: gaps %llu (%llu bytes), resyncs %llu "
        "(%llu bytes skipped), truncated %llu, out-of-order %llu, "
        "retransmitted %llu, non-tcp %llu, malformed %llu%s",
        s->o->pcap_path ? s->o->pcap_path : s->o->iface,
        (unsigned long long)st->packets, (unsigned long long)st->bytes,
        (unsigned long long)st->flows, (unsigned long long)st->midstream,
        (unsigned long long)st->messages, s->o->out_path,
        (unsigned long long)st->gaps, (unsigned long long)st->gap_bytes,
        (unsigned long long)st->resyncs, (unsigned long long)st->skipped_bytes,
        (unsigned long long)st->truncated, (unsigned long long)st->out_of_order,
        (unsigned long long)st->retransmitted, (unsigned long long)st->non_tcp,
        (unsigned long long)st->malformed, s->o->iface ? "" : "\n");
    if (s->o->iface)
        fprintf(stderr, ", kernel-dropped %llu\n",
                (unsigned long long)s->kernel_dropped);
}

/* Closes the flows, writes the stats record and closes the trace. */
static int
finish(struct sniff *s, uint8_t reason)
{
    struct pflow_stats st;
    struct trace_stats rec;
    int rc;

    rc = pflow_finish(s->tab, s->last_ns, reason, s->err);
    pflow_stats_get(s->tab, &st);
    pflow_stats_record(&st, s->last_ns, &rec);
    if (s->o->iface != NULL && rec.n < TRACE_STATS_MAX) {
        snprintf(rec.s[rec.n].name, sizeof(rec.s[rec.n].name),
                 "kernel_dropped");
        rec.s[rec.n++].value = s->kernel_dropped;
    }
    if (rc == 0) {
        rc = trace_writer_stats(s->w, &rec);
        if (rc < 0)
            mt_err_set(s->err, rc, 0, "writing the trace: %s", mt_strerror(rc));
    }
    if (!s->o->quiet)
        print_summary(s, &st);
    if (s->kernel_dropped > 0)
        mt_warn("--iface %s: the kernel dropped %llu packets (its %u MiB "
                "ring was full: mtrace did not keep up); the trace lacks "
                "their messages, and a connection that went on after the "
                "loss shows a gap; a larger --buffer-mb or a less loaded "
                "CPU avoids it",
                s->o->iface, (unsigned long long)s->kernel_dropped,
                s->o->buffer_mb ? s->o->buffer_mb : SNIFF_BUFFER_MB_DEFAULT);
    return rc;
}

int
sniff_run(const struct sniff_opts *o, struct mt_err *err)
{
    struct mt_err local = {0};
    struct sigaction sa, old_int, old_term;
    struct sniff s;
    char filter[1024];
    int rc, rc2;

    MT_ASSERT(o != NULL);
    memset(&s, 0, sizeof(s));
    s.o = o;
    s.err = err != NULL ? err : &local;
    if ((o->pcap_path == NULL) == (o->iface == NULL) || o->out_path == NULL)
        return mt_err_set(s.err, MT_EUSAGE, 0,
                          "give exactly one of --pcap FILE or --iface IF, "
                          "and -o TRACE");
    if (o->zstd_level != 0 && (o->zstd_level < trace_zstd_level_min() ||
                               o->zstd_level > trace_zstd_level_max()))
        return mt_err_set(s.err, MT_EUSAGE, 0, "--zstd-level %d outside %d..%d",
                          o->zstd_level, trace_zstd_level_min(),
                          trace_zstd_level_max());
    g_stop = 0;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    rc = o->pcap_path ? open_offline(&s) : open_live(&s);
    if (rc == 0 && (o->iface != NULL || o->filter != NULL)) {
        build_filter(o, s.dlt, filter, sizeof(filter));
        rc = apply_filter(&s, filter);
    }
    if (rc == 0 && o->iface != NULL)
        rc = start_trace(&s, TRACE_SRC_LIVE, mt_wall_ns(),
                         pcap_get_tstamp_precision(s.p) ==
                                 PCAP_TSTAMP_PRECISION_NANO
                             ? 1
                             : 1000);
    if (rc == 0)
        rc = o->pcap_path ? run_offline(&s) : run_live(&s);
    if (s.tab != NULL) {
        rc2 = finish(&s, o->iface ? TRACE_CLOSE_SHUTDOWN : TRACE_CLOSE_IDLE);
        if (rc == 0)
            rc = rc2;
    }
    rc2 = trace_writer_close(s.w);
    if (rc == 0 && rc2 < 0)
        rc = mt_err_set(s.err, rc2, 0, "closing the trace: %s",
                        mt_strerror(rc2));
    pflow_free(s.tab);
    if (s.p != NULL)
        pcap_close(s.p); /* closes the FILE */
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    return rc;
}
