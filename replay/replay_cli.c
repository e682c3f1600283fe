/*
 * replay_cli.c -- `mtrace replay`: options and help; replay_run.c serves
 * what they say, replay_summary.c prints the exit summary.
 *
 *     mtrace replay [--listen HOST:PORT] [--delay-ms X] [--jitter-ms J]
 *                   [--delay-dist fixed|uniform|normal|lognormal] [--seed N]
 *                   [--timing none|recorded] [--speed F]
 *                   [--delay-mode deadline|serial] [--strict] [--threads N]
 *                   [--max-conns N] [--ignore-field F]... [--keep-field F]...
 *                   [--spin-us auto|N] [--spin-max-us N] [--rt-prio N]
 *                   [--pin-loops] [--batch-loops]
 *                   [--cpu-dma-latency US] [--compressors C]
 *                   [--credentials USER:PASSWORD]... [--auth-source DB]
 *                   [--scram-iterations N]
 *                   [--tls-cert FILE [--tls-key FILE] [--tls-ca FILE]]
 *                   [--summary-json FILE] TRACE.zst|-
 *
 * Exit status: 0; 1 runtime failure (or --strict with misses); 2 bad usage.
 * docs/replay.md describes the behaviour.
 */
#include "replay_cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/addr.h"
#include "core/cli.h"
#include "core/pmqos.h"
#include "core/sched.h"
#include "core/wire.h"
#include "auth.h"
#include "handshake.h"
#include "replay_run.h"
#include "server.h"

/* A sleeping CPU wakes tens of us late (measured on the 2-core test VM:
 * p50 30-60 us, p99 100-150 us after a 1 ms sleep, quiet): by default each
 * loop spins the last stretch before a release, as long as its own
 * measured wake-up p99 (bench/timer_wake.c), at most this long. */
#define CLI_SPIN_MAX_DEFAULT_US (LOOP_SPIN_AUTO_MAX_NS / 1000)

static void
usage(FILE *out)
{
    fprintf(
        out,
        "usage: mtrace replay [options] TRACE.zst\n"
        "Answers MongoDB drivers from a trace, each reply released at\n"
        "request-read time + delay.  TRACE may be '-' for standard input.\n\n"
        "  --listen HOST:PORT     address (default 127.0.0.1:27017; port 0: "
        "any)\n"
        "  --tls-cert FILE        clients must connect with TLS (tls=true):\n"
        "                         the server certificate chain (PEM), with\n"
        "                         its private key unless --tls-key is given\n"
        "                         (as mongod's tlsCertificateKeyFile)\n"
        "  --tls-key FILE         the private key (PEM, not encrypted)\n"
        "  --tls-ca FILE          also require a client certificate signed\n"
        "                         by a CA of FILE\n"
        "  --delay-ms X           added delay per reply, fractions allowed "
        "(0)\n"
        "  --jitter-ms J          spread of the delay (0)\n"
        "  --delay-dist D         fixed|uniform|normal|lognormal (fixed)\n"
        "  --seed N               seed of the delay draws and cursor ids (1)\n"
        "  --timing T             none|recorded: add each reply's recorded\n"
        "                         server latency (none)\n"
        "  --speed F              recorded latencies are divided by F (1)\n"
        "  --delay-mode M         deadline|serial: serial queues replies per\n"
        "                         connection like seed 000's Go proxy "
        "(deadline)\n"
        "  --strict               match requests exactly (no cross-driver\n"
        "                         equivalences of cursor shapes and defaults)\n"
        "                         and exit 1 if any request had no recorded\n"
        "                         reply\n"
        "  --threads N            event loops (default: one per core)\n"
        "  --max-conns N          open connections limit (16384)\n"
        "  --ignore-field F       leave field F out of request keys: a top-\n"
        "                         level field, or TOP.SUB (a key of a top-\n"
        "                         level document)\n"
        "  --keep-field F         keep F in keys even if ignored by default\n"
        "  --idle-timeout-s S     close a connection with no traffic and no\n"
        "                         pending reply for S seconds (0: never; 0)\n"
        "  --msg-timeout-s S      close a client whose request stays\n"
        "                         incomplete S seconds (slow-loris; 30; 0: "
        "never)\n"
        "  --max-msg-bytes N      refuse requests over N bytes (48000000)\n"
        "  --compressors C        recorded|none|list of snappy,zlib,zstd:\n"
        "                         wire compression replay agrees to\n"
        "                         (recorded: the recorded server's)\n"
        "  --spin-us auto|N       busy-poll (I/O still served) the last\n"
        "                         stretch before a release: auto = the\n"
        "                         loop's measured wake-up lateness p99;\n"
        "                         N us fixed; 0: trust the timer wake-up\n"
        "                         and use no CPU (auto)\n"
        "  --spin-max-us N        bound of the auto window (200)\n"
        "  --rt-prio N            run the event loops under SCHED_FIFO at\n"
        "                         priority N (1..99; 0: off, the default):\n"
        "                         releases are not late behind other\n"
        "                         processes; needs root or CAP_SYS_NICE\n"
        "  --pin-loops            pin event loop i to the i-th CPU the\n"
        "                         process may use (as HAProxy's cpu-map)\n"
        "  --batch-loops          run the event loops under SCHED_BATCH:\n"
        "                         their wake-ups do not preempt the client;\n"
        "                         ms of added delay behind any other busy\n"
        "                         task (not with --rt-prio)\n"
        "  --cpu-dma-latency US   hold a PM QoS CPU wake-up latency request\n"
        "                         of US microseconds (0..2000000000) through\n"
        "                         /dev/cpu_dma_latency from start to exit,\n"
        "                         as cyclictest does: 0 keeps idle CPUs\n"
        "                         polling, so timer and packet wake-ups are\n"
        "                         not late by a deep idle exit. Off by\n"
        "                         default: it is machine-wide, and polling\n"
        "                         CPUs burn power (host CPU in a VM); needs\n"
        "                         root\n"
        "  --credentials USER:PASSWORD\n"
        "                         authenticate like mongod --auth: this user\n"
        "                         (repeatable; split at the first ':') may\n"
        "                         log in with SCRAM-SHA-1 or SCRAM-SHA-256;\n"
        "                         other commands need a logged-in connection\n"
        "  --auth-source DB       the database of the --credentials users\n"
        "                         (admin), as a URI's authSource\n"
        "  --scram-iterations N   SCRAM iteration count of both mechanisms\n"
        "                         (mongod's defaults: SCRAM-SHA-1 10000,\n"
        "                         SCRAM-SHA-256 15000)\n"
        "  --summary-json FILE    also write the exit summary as JSON\n"
        "                         (FILE is created at start)\n"
        "  -h, --help             this help\n\n"
        "SIGINT or SIGTERM stops the server and prints the summary.  Exit\n"
        "status: 0 success, 1 runtime failure (unreadable trace or one with\n"
        "no exchange, port in use, --strict with misses), 2 bad usage.\n"
        "See docs/replay.md.\n");
}

/* Prints a usage error (core/cli.h's one line); returns exit status 2. */
#define bad(...) cli_usage_error("replay", __VA_ARGS__)

/* HOST:PORT or [V6]:PORT (core/addr.h): a numeric address or a name
 * such as localhost.  0, or the exit status 2. */
static int
parse_listen(const char *s, struct server_opts *o)
{
    char host[256];
    uint16_t port;

    if (mt_addr_split(s, host, sizeof(host), &port) < 0)
        return bad("bad --listen '%s' (HOST:PORT or [IPV6]:PORT, port "
                   "0..65535)",
                   s);
    o->listen_len = sizeof(o->listen);
    if (mt_addr_resolve(s, &o->listen, &o->listen_len) < 0)
        return bad("bad --listen '%s': host '%s' is not a numeric IPv4 or "
                   "IPv6 address, nor a name that resolves",
                   s, host);
    return 0;
}

enum {
    OPT_LISTEN = 256,
    OPT_DELAY,
    OPT_JITTER,
    OPT_DIST,
    OPT_SEED,
    OPT_TIMING,
    OPT_SPEED,
    OPT_MODE,
    OPT_STRICT,
    OPT_THREADS,
    OPT_CONNS,
    OPT_IGNORE,
    OPT_KEEP,
    OPT_SPIN,
    OPT_SPINMAX,
    OPT_JSON,
    OPT_IDLE,
    OPT_MSGTO,
    OPT_MSGMAX,
    OPT_RTPRIO,
    OPT_PIN,
    OPT_BATCH,
    OPT_DMALAT,
    OPT_COMPRESS,
    OPT_CREDS,
    OPT_AUTHDB,
    OPT_SCRAMITER,
};

/* The TLS options: their own block (parse_tls_opt). */
enum { OPT_TLS_CERT = 400, OPT_TLS_KEY, OPT_TLS_CA };

static const struct option longopts[] = {
    {"listen", required_argument, NULL, OPT_LISTEN},
    {"tls-cert", required_argument, NULL, OPT_TLS_CERT},
    {"tls-key", required_argument, NULL, OPT_TLS_KEY},
    {"tls-ca", required_argument, NULL, OPT_TLS_CA},
    {"delay-ms", required_argument, NULL, OPT_DELAY},
    {"jitter-ms", required_argument, NULL, OPT_JITTER},
    {"delay-dist", required_argument, NULL, OPT_DIST},
    {"seed", required_argument, NULL, OPT_SEED},
    {"timing", required_argument, NULL, OPT_TIMING},
    {"speed", required_argument, NULL, OPT_SPEED},
    {"delay-mode", required_argument, NULL, OPT_MODE},
    {"strict", no_argument, NULL, OPT_STRICT},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"max-conns", required_argument, NULL, OPT_CONNS},
    {"ignore-field", required_argument, NULL, OPT_IGNORE},
    {"keep-field", required_argument, NULL, OPT_KEEP},
    {"spin-us", required_argument, NULL, OPT_SPIN},
    {"spin-max-us", required_argument, NULL, OPT_SPINMAX},
    {"summary-json", required_argument, NULL, OPT_JSON},
    {"idle-timeout-s", required_argument, NULL, OPT_IDLE},
    {"msg-timeout-s", required_argument, NULL, OPT_MSGTO},
    {"max-msg-bytes", required_argument, NULL, OPT_MSGMAX},
    {"rt-prio", required_argument, NULL, OPT_RTPRIO},
    {"pin-loops", no_argument, NULL, OPT_PIN},
    {"batch-loops", no_argument, NULL, OPT_BATCH},
    {"cpu-dma-latency", required_argument, NULL, OPT_DMALAT},
    {"compressors", required_argument, NULL, OPT_COMPRESS},
    {"credentials", required_argument, NULL, OPT_CREDS},
    {"auth-source", required_argument, NULL, OPT_AUTHDB},
    {"scram-iterations", required_argument, NULL, OPT_SCRAMITER},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* A TLS option (checked together in tls_setup). */
static void
parse_tls_opt(struct replay_opts *c, int opt, const char *a)
{
    if (opt == OPT_TLS_CERT)
        c->tls_cert = a;
    else if (opt == OPT_TLS_KEY)
        c->tls_key = a;
    else
        c->tls_ca = a;
}

/* One option; 0, or the exit status for bad usage. */
static int
parse_opt(struct replay_opts *c, int opt, const char *a)
{
    struct delay_cfg *d = &c->so.delay;
    uint64_t u;

    switch (opt) {
    case OPT_LISTEN:
        return parse_listen(a, &c->so);
    case OPT_DELAY:
    case OPT_JITTER:
        if (!cli_parse_duration_ns(a, 0, 3600e3, 1e6,
                                   opt == OPT_DELAY ? &d->delay_ns
                                                    : &d->jitter_ns))
            return bad("bad %s '%s' (milliseconds, 0..3600000)",
                       opt == OPT_DELAY ? "--delay-ms" : "--jitter-ms", a);
        return 0;
    case OPT_DIST:
        return delay_dist_parse(a, &d->dist) < 0
                   ? bad("bad --delay-dist '%s'", a)
                   : 0;
    case OPT_SEED:
        return !cli_parse_u64_hex(a, 0, UINT64_MAX, &d->seed)
                   ? bad("bad --seed '%s'", a)
                   : 0;
    case OPT_TIMING:
        if (strcmp(a, "none") != 0 && strcmp(a, "recorded") != 0)
            return bad("bad --timing '%s' (none|recorded)", a);
        d->timing = a[0] == 'r' ? DELAY_TIMING_RECORDED : DELAY_TIMING_NONE;
        return 0;
    case OPT_SPEED:
        if (!cli_parse_double(a, 1e-6, 1e6, &d->speed))
            return bad("bad --speed '%s' (> 0)", a);
        return 0;
    case OPT_MODE:
        if (strcmp(a, "deadline") != 0 && strcmp(a, "serial") != 0)
            return bad("bad --delay-mode '%s' (deadline|serial)", a);
        d->mode = a[0] == 's' ? DELAY_MODE_SERIAL : DELAY_MODE_DEADLINE;
        return 0;
    case OPT_STRICT:
        c->strict = true;
        c->rules.strict = true;
        return 0;
    case OPT_THREADS:
        if (!cli_parse_u64(a, 1, SERVER_THREADS_MAX, &u))
            return bad("bad --threads '%s' (1..256)", a);
        c->so.threads = (int)u;
        return 0;
    case OPT_CONNS:
        if (!cli_parse_u64(a, 1, 1000000, &u))
            return bad("bad --max-conns '%s'", a);
        c->so.conns_max = (size_t)u;
        return 0;
    case OPT_IGNORE:
        return match_rules_ignore(&c->rules, a) < 0
                   ? bad("cannot ignore field '%s' (TOP or TOP.SUB, under "
                         "64 bytes, at most 64 rules)",
                         a)
                   : 0;
    case OPT_KEEP:
        (void)match_rules_keep(&c->rules, a);
        return 0;
    case OPT_SPIN:
        if (strcmp(a, "auto") == 0) {
            c->so.spin_auto = true;
            c->so.spin_ns = c->spin_max_ns;
            return 0;
        }
        if (!cli_parse_u64(a, 0, 1000000, &u))
            return bad("bad --spin-us '%s' (auto, or 0..1000000 us)", a);
        c->so.spin_auto = false;
        c->so.spin_ns = u * 1000;
        return 0;
    case OPT_SPINMAX:
        if (!cli_parse_u64(a, 1, 1000000, &u))
            return bad("bad --spin-max-us '%s' (1..1000000 us)", a);
        c->spin_max_ns = u * 1000;
        if (c->so.spin_auto)
            c->so.spin_ns = c->spin_max_ns;
        return 0;
    case OPT_JSON:
        c->summary_json = a;
        return 0;
    case OPT_IDLE:
    case OPT_MSGTO:
        if (!cli_parse_duration_ns(a, 0, 31536000.0, 1e9,
                                   opt == OPT_IDLE ? &c->so.idle_ns
                                                   : &c->so.msg_timeout_ns))
            return bad("bad %s '%s' (seconds, >= 0, fractions allowed)",
                       opt == OPT_IDLE ? "--idle-timeout-s" : "--msg-timeout-s",
                       a);
        return 0;
    case OPT_MSGMAX:
        if (!cli_parse_u64(a, WIRE_HEADER_LEN, WIRE_MSG_LEN_MAX, &u))
            return bad("bad --max-msg-bytes '%s' (16..48000000)", a);
        c->so.msg_max = (size_t)u;
        return 0;
    case OPT_RTPRIO:
        if (!cli_parse_u64(a, 0, SCHED_RT_PRIO_MAX, &u))
            return bad("bad --rt-prio '%s' (0..%d; 0: normal scheduling)", a,
                       SCHED_RT_PRIO_MAX);
        c->so.rt_prio = (int)u;
        return 0;
    case OPT_PIN:
        c->so.pin_loops = true;
        return 0;
    case OPT_BATCH:
        c->so.batch_loops = true;
        return 0;
    case OPT_DMALAT:
        if (!cli_parse_u64(a, 0, PMQOS_US_MAX, &u))
            return bad("bad --cpu-dma-latency '%s' (0..%d microseconds)", a,
                       PMQOS_US_MAX);
        c->dma_lat_us = (int)u;
        return 0;
    case OPT_COMPRESS: {
        bool rec;
        if (handshake_parse_compressors(a, &c->so.compress_mask, &rec) < 0)
            return bad("bad --compressors '%s' (recorded, none, or a list "
                       "of snappy,zlib,zstd)",
                       a);
        c->so.compress_set = !rec;
        return 0;
    }
    case OPT_CREDS:
        if (c->ncreds >= SCRAM_USERS_MAX)
            return bad("more than %d --credentials", SCRAM_USERS_MAX);
        if (strchr(a, ':') == NULL || a[0] == ':')
            return bad("bad --credentials (USER:PASSWORD, split at the "
                       "first ':')");
        c->creds[c->ncreds++] = (char *)(uintptr_t)a; /* argv's */
        return 0;
    case OPT_AUTHDB:
        if (a[0] == '\0' || strlen(a) >= SCRAM_DB_MAX ||
            strpbrk(a, "/\\. \"$") != NULL)
            return bad("bad --auth-source '%s' (a database name)", a);
        c->auth_source = a;
        return 0;
    case OPT_SCRAMITER:
        if (!cli_parse_u64(a, SCRAM_ITER_MIN, SCRAM_ITER_MAX, &u))
            return bad("bad --scram-iterations '%s' (%u..%u: drivers refuse "
                       "fewer than %u)",
                       a, SCRAM_ITER_MIN, SCRAM_ITER_MAX, SCRAM_ITER_MIN);
        c->iterations = (uint32_t)u;
        return 0;
    default:
        return 2;
    }
}

/* --credentials: the users, their keys derived now (mongod stores them
 * so), and each password overwritten in argv (as mysql does) so that ps
 * shows it less.  0, or the exit status 2. */
static int
setup_auth(struct replay_opts *c)
{
    uint32_t it[SCRAM_MECHS] = {SCRAM_ITER_SHA1_DEFAULT,
                                SCRAM_ITER_SHA256_DEFAULT};
    const char *db = c->auth_source ? c->auth_source : "admin";
    struct mt_err err = {0};

    if (c->ncreds == 0) {
        if (c->auth_source != NULL || c->iterations != 0)
            return bad("--auth-source and --scram-iterations need "
                       "--credentials");
        return 0;
    }
    if (c->iterations != 0)
        it[SCRAM_SHA1] = it[SCRAM_SHA256] = c->iterations;
    for (size_t i = 0; i < c->ncreds; i++) {
        char *colon = strchr(c->creds[i], ':');
        *colon = '\0';
        int rc = scram_creds_add(&c->auth.creds, db, c->creds[i], colon + 1, it,
                                 &err);
        if (rc < 0) {
            scram_creds_free(&c->auth.creds);
            return bad("--credentials for user '%s': %s", c->creds[i], err.msg);
        }
        *colon = ':';
        memset(colon + 1, 'x', strlen(colon + 1));
    }
    c->auth.enabled = true;
    c->so.auth = &c->auth;
    return 0;
}

static int
parse_args(struct replay_opts *c, int argc, char **argv)
{
    int opt, rc;

    memset(c, 0, sizeof(*c));
    c->so.listen_len = sizeof(c->so.listen);
    (void)mt_addr_resolve("127.0.0.1:27017", &c->so.listen,
                          &c->so.listen_len); /* numeric: never fails */
    c->spin_max_ns = CLI_SPIN_MAX_DEFAULT_US * 1000;
    c->so.spin_auto = true;
    c->so.spin_ns = c->spin_max_ns;
    c->so.msg_timeout_ns = SERVER_MSG_TIMEOUT_DEFAULT_NS;
    c->dma_lat_us = -1;
    delay_cfg_init(&c->so.delay);
    match_rules_default(&c->rules);
    optind = 1;
    opterr = 0; /* one line of our own instead of getopt's */
    while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (opt == 'h') {
            usage(stdout);
            return -1;
        }
        if (opt == ':')
            return bad("option '%s' needs a value", argv[optind - 1]);
        if (opt == '?' && optopt > 0 && optopt < 256)
            return bad("unknown option '-%c'", optopt);
        if (opt == '?')
            return bad("%s option '%s'",
                       optopt != 0 ? "no value allowed for" : "unknown",
                       argv[optind - 1]);
        if (opt >= OPT_TLS_CERT && opt <= OPT_TLS_CA) {
            parse_tls_opt(c, opt, optarg);
            continue;
        }
        rc = parse_opt(c, opt, optarg);
        if (rc != 0)
            return rc;
    }
    if (optind != argc - 1) {
        fprintf(stderr, "mtrace replay: expected one TRACE.zst argument; run "
                        "'mtrace replay --help'\n");
        return 2;
    }
    c->trace = argv[optind];
    if (c->so.batch_loops && c->so.rt_prio > 0)
        return bad("--batch-loops and --rt-prio exclude each other");
    return setup_auth(c);
}

int
replay_cli_main(int argc, char **argv)
{
    struct replay_opts c;
    int rc = parse_args(&c, argc, argv);

    if (rc != 0)
        return rc < 0 ? 0 : rc;
    rc = replay_run(&c);
    auth_cfg_free(&c.auth);
    return rc;
}
