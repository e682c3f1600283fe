/*
 * play_cli.c -- `mtrace play TRACE --target HOST:PORT [options]`: option
 * parsing and help (the run is play.c).
 *
 * Exit status: 0 every request sent and answered; 1 the trace is damaged
 * or holds no request, the target failed, refused the handshake or the
 * credentials, or replies were missing; 2 bad usage.
 */
#include "play_cli.h"

#include <ctype.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/addr.h"
#include "core/cli.h"
#include "core/pmqos.h"
#include "core/sched.h"
#include "play.h"

static void
usage(FILE *f)
{
    fprintf(
        f,
        "usage: mtrace play TRACE.zst --target HOST:PORT [options]\n"
        "\n"
        "Send the client requests of a trace to a live MongoDB server: one\n"
        "connection per recorded client connection, each connection's\n"
        "requests in order, keeping the recorded think time between a reply\n"
        "and the next request and the recorded start offsets between\n"
        "connections.  Each connection makes its own handshake; cursor ids,\n"
        "sessions (lsid, txnNumber) and $clusterTime come from the live\n"
        "server; recorded handshakes and authentication are never re-sent.\n"
        "Prints, per command, recorded vs played: requests, replies, mean,\n"
        "p50, p99 latency, errors by code, replies that differ in shape, and\n"
        "the send lateness against the schedule (docs/play.md).\n"
        "\n"
        "  --target HOST:PORT   the server to send to (required); or\n"
        "                       mongodb://[USER[:PASSWORD]@]HOST:PORT[/DB]\n"
        "                       [?authSource=DB&authMechanism=M&tls=true\n"
        "                       &tlsCAFile=FILE&tlsInsecure=true]\n"
        "  --speed X            time scale: 2 plays twice as fast (default 1;\n"
        "                       0.001 to 1000)\n"
        "  --max-speed          send each request as soon as its predecessor\n"
        "                       on the connection is answered\n"
        "  --repeat N           play the trace N times, one after the other\n"
        "                       (default 1)\n"
        "  --connections-per-recorded K\n"
        "                       K live connections per recorded one, each "
        "with\n"
        "                       its own cursors and sessions (default 1)\n"
        "  --only-commands A,B  send only these commands (getMore and\n"
        "                       killCursors follow their cursors)\n"
        "  --skip-writes        send no write (insert, update, delete,\n"
        "                       findAndModify, DDL, aggregate with "
        "$out/$merge,\n"
        "                       ...): reads only, for a production server\n"
        "  --db OLD=NEW         send OLD's commands to database NEW\n"
        "                       (repeatable, %d at most)\n"
        "  --username U         authenticate as U (SCRAM) on every connection\n"
        "  --password P         U's password (default: $MTRACE_PASSWORD)\n"
        "  --auth-db DB         the database of U (default admin)\n"
        "  --auth-mechanism M   SCRAM-SHA-256 (default) or SCRAM-SHA-1\n"
        "  -o OUT.zst           write what was sent and answered as a trace\n"
        "                       (source \"play\"); --force overwrites\n"
        "  --tls                TLS to the target, its certificate verified\n"
        "                       against the system's CAs and --target's host\n"
        "  --tls-ca FILE        ... against the CAs of FILE (PEM) instead\n"
        "  --tls-insecure       TLS without verification\n"
        "  --tls-cert FILE      present this client certificate (PEM, key\n"
        "                       included)\n"
        "  --timeout-ms MS      fail when a connect or a reply takes longer\n"
        "                       (default 30000)\n"
        "  --json               the summary as one JSON object\n"
        "  --rt-prio N          run the event loop and the trace reader\n"
        "                       under SCHED_FIFO at priority N (1..99; 0:\n"
        "                       off, the default): sends are not late\n"
        "                       behind other processes; needs root or\n"
        "                       CAP_SYS_NICE\n"
        "  --cpu-dma-latency US hold a PM QoS CPU wake-up latency request\n"
        "                       of US microseconds (0..2000000000) through\n"
        "                       /dev/cpu_dma_latency from start to exit: 0\n"
        "                       keeps idle CPUs polling, so timer wake-ups\n"
        "                       are not late by a deep idle exit. Off by\n"
        "                       default: it is machine-wide, and polling\n"
        "                       CPUs burn power (host CPU in a VM); needs\n"
        "                       root\n"
        "  -h, --help           this text\n"
        "\n"
        "Exit status: 0 every request sent and every expected reply\n"
        "received; 1 a damaged or empty trace, a target that failed, is not\n"
        "MongoDB or refused the credentials, or missing replies (the summary\n"
        "says what was sent and answered); 2 bad usage.\n",
        REMAP_DB_MAX);
}

static int
bad(const char *what)
{
    fprintf(stderr, "mtrace play: %s; run 'mtrace play --help'\n", what);
    return 2;
}

static bool
parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
    char *end;
    long long v;

    if (s == NULL || *s == '\0')
        return false;
    v = strtoll(s, &end, 10);
    if (*end != '\0' || v < (long long)lo || v > (long long)hi)
        return false;
    *out = (uint32_t)v;
    return true;
}

/* Splits "a,b,c" in place into o->only. */
static bool
parse_only(char *s, struct play_opts *o)
{
    for (char *tok = strtok(s, ","); tok != NULL; tok = strtok(NULL, ",")) {
        if (o->nonly == PLAY_CMDS_MAX)
            return false;
        o->only[o->nonly++] = tok;
    }
    return o->nonly > 0;
}

/* %XX escapes of a URI part decoded in place; false on a bad escape. */
static bool
pct_decode(char *s)
{
    char *w = s;

    for (; *s; s++) {
        if (*s != '%') {
            *w++ = *s;
            continue;
        }
        if (!isxdigit((unsigned char)s[1]) || !isxdigit((unsigned char)s[2]))
            return false;
        char hex[3] = {s[1], s[2], '\0'};
        *w++ = (char)strtol(hex, NULL, 16);
        s += 2;
    }
    *w = '\0';
    return true;
}

/*
 * --target mongodb://[USER[:PASSWORD]@]HOST:PORT[/DB][?authSource=DB&
 * authMechanism=M]: one host; the credentials and options go into o (they
 * point into uri, which is modified).  0 or the exit status of bad usage.
 */
static int
parse_uri(char *uri, struct play_opts *o)
{
    char *p = uri + strlen("mongodb://"), *at, *slash, *q, *opt;
    const char *auth_db = NULL;

    q = strchr(p, '?');
    if (q != NULL)
        *q++ = '\0';
    slash = strchr(p, '/');
    if (slash != NULL) {
        *slash++ = '\0';
        if (*slash != '\0')
            auth_db = slash;
    }
    at = strrchr(p, '@');
    if (at != NULL) {
        char *colon;
        *at = '\0';
        colon = strchr(p, ':');
        if (colon != NULL) {
            *colon = '\0';
            if (!pct_decode(colon + 1))
                return bad("--target: bad %-escape in the URI's password");
            o->password = colon + 1;
        }
        if (!pct_decode(p) || *p == '\0')
            return bad("--target: bad user in the URI");
        o->username = p;
        p = at + 1;
    }
    if (strchr(p, ',') != NULL)
        return bad("--target: one host, not a list (play sends to one server)");
    o->target = p;
    for (opt = q != NULL ? strtok(q, "&") : NULL; opt != NULL;
         opt = strtok(NULL, "&")) {
        if (strncmp(opt, "authSource=", 11) == 0 && opt[11] != '\0')
            auth_db = opt + 11;
        else if (strncmp(opt, "authMechanism=", 14) == 0) {
            if (strcmp(opt + 14, "SCRAM-SHA-256") != 0 &&
                strcmp(opt + 14, "SCRAM-SHA-1") != 0)
                return bad("--target: authMechanism SCRAM-SHA-256 or "
                           "SCRAM-SHA-1");
            o->mechanism = opt + 14;
        } else if (strcmp(opt, "tls=true") == 0 ||
                   strcmp(opt, "ssl=true") == 0) {
            o->tls = true;
        } else if (strncmp(opt, "tlsCAFile=", 10) == 0 && opt[10] != '\0') {
            o->tls = true;
            o->tls_ca = opt + 10;
        } else if (strcmp(opt, "tlsInsecure=true") == 0) {
            o->tls = o->tls_insecure = true;
        } else if (strncmp(opt, "directConnection=", 17) != 0 &&
                   strcmp(opt, "tls=false") != 0) {
            return bad("--target: URI options: authSource, authMechanism, "
                       "tls, tlsCAFile, tlsInsecure");
        }
    }
    if (auth_db != NULL)
        o->auth_db = auth_db;
    return 0;
}

enum {
    OPT_TARGET = 256,
    OPT_SPEED,
    OPT_MAX_SPEED,
    OPT_REPEAT,
    OPT_COPIES,
    OPT_ONLY,
    OPT_SKIP_WRITES,
    OPT_DB,
    OPT_USER,
    OPT_PASS,
    OPT_AUTH_DB,
    OPT_MECH,
    OPT_FORCE,
    OPT_TIMEOUT,
    OPT_JSON,
    OPT_TLS,
    OPT_TLS_CA,
    OPT_TLS_INSECURE,
    OPT_TLS_CERT,
    OPT_RTPRIO,
    OPT_DMALAT,
};

static const struct option longopts[] = {
    {"target", required_argument, NULL, OPT_TARGET},
    {"speed", required_argument, NULL, OPT_SPEED},
    {"max-speed", no_argument, NULL, OPT_MAX_SPEED},
    {"repeat", required_argument, NULL, OPT_REPEAT},
    {"connections-per-recorded", required_argument, NULL, OPT_COPIES},
    {"only-commands", required_argument, NULL, OPT_ONLY},
    {"skip-writes", no_argument, NULL, OPT_SKIP_WRITES},
    {"db", required_argument, NULL, OPT_DB},
    {"username", required_argument, NULL, OPT_USER},
    {"password", required_argument, NULL, OPT_PASS},
    {"auth-db", required_argument, NULL, OPT_AUTH_DB},
    {"auth-mechanism", required_argument, NULL, OPT_MECH},
    {"force", no_argument, NULL, OPT_FORCE},
    {"timeout-ms", required_argument, NULL, OPT_TIMEOUT},
    {"json", no_argument, NULL, OPT_JSON},
    {"tls", no_argument, NULL, OPT_TLS},
    {"tls-ca", required_argument, NULL, OPT_TLS_CA},
    {"tls-insecure", no_argument, NULL, OPT_TLS_INSECURE},
    {"tls-cert", required_argument, NULL, OPT_TLS_CERT},
    {"rt-prio", required_argument, NULL, OPT_RTPRIO},
    {"cpu-dma-latency", required_argument, NULL, OPT_DMALAT},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* One option into o; 0, or the exit status of a bad one. */
static int
parse_opt(int ch, char *arg, struct play_opts *o, bool *speed_set)
{
    char buf[96];
    char *end, *eq;
    uint32_t ms;
    uint64_t u;

    switch (ch) {
    case OPT_TARGET:
        if (strncmp(arg, "mongodb://", 10) == 0)
            return parse_uri(arg, o);
        o->target = arg;
        return 0;
    case OPT_SPEED:
        o->speed = strtod(arg, &end);
        if (*arg == '\0' || *end != '\0' || !(o->speed >= 0.001) ||
            !(o->speed <= 1000))
            return bad("--speed takes a factor from 0.001 to 1000");
        *speed_set = true;
        return 0;
    case OPT_MAX_SPEED:
        o->max_speed = true;
        return 0;
    case OPT_REPEAT:
        return parse_u32(arg, 1, 1000000, &o->repeat)
                   ? 0
                   : bad("--repeat takes a count from 1 to 1000000");
    case OPT_COPIES:
        return parse_u32(arg, 1, 1000, &o->copies)
                   ? 0
                   : bad("--connections-per-recorded takes 1 to 1000");
    case OPT_ONLY:
        return parse_only(arg, o) ? 0
                                  : bad("--only-commands takes a comma "
                                        "separated list of command names");
    case OPT_SKIP_WRITES:
        o->skip_writes = true;
        return 0;
    case OPT_DB:
        eq = strchr(arg, '=');
        if (eq == NULL || eq == arg || eq[1] == '\0' || o->ndb == REMAP_DB_MAX)
            return bad("--db takes OLD=NEW (8 renames at most)");
        *eq = '\0';
        o->db_from[o->ndb] = arg;
        o->db_to[o->ndb++] = eq + 1;
        return 0;
    case OPT_USER:
        o->username = arg;
        return 0;
    case OPT_PASS:
        o->password = arg;
        return 0;
    case OPT_AUTH_DB:
        o->auth_db = arg;
        return 0;
    case OPT_MECH:
        if (strcmp(arg, "SCRAM-SHA-256") != 0 && strcmp(arg, "SCRAM-SHA-1"))
            return bad("--auth-mechanism takes SCRAM-SHA-256 or SCRAM-SHA-1");
        o->mechanism = arg;
        return 0;
    case OPT_FORCE:
        o->force = true;
        return 0;
    case OPT_TIMEOUT:
        if (!parse_u32(arg, 1, 86400000, &ms))
            return bad("--timeout-ms takes 1 to 86400000");
        o->timeout_ns = (uint64_t)ms * 1000000u;
        return 0;
    case OPT_JSON:
        o->json = true;
        return 0;
    case OPT_TLS:
        o->tls = true;
        return 0;
    case OPT_TLS_CA:
        o->tls = true;
        o->tls_ca = arg;
        return 0;
    case OPT_TLS_INSECURE:
        o->tls = o->tls_insecure = true;
        return 0;
    case OPT_TLS_CERT:
        o->tls = true;
        o->tls_cert = arg;
        return 0;
    case OPT_RTPRIO:
        if (!cli_parse_u64(arg, 0, SCHED_RT_PRIO_MAX, &u)) {
            snprintf(buf, sizeof(buf),
                     "bad --rt-prio '%s' (0..%d; 0: normal scheduling)", arg,
                     SCHED_RT_PRIO_MAX);
            return bad(buf);
        }
        o->rt_prio = (int)u;
        return 0;
    case OPT_DMALAT:
        if (!cli_parse_u64(arg, 0, PMQOS_US_MAX, &u)) {
            snprintf(buf, sizeof(buf),
                     "bad --cpu-dma-latency '%s' (0..%d microseconds)", arg,
                     PMQOS_US_MAX);
            return bad(buf);
        }
        o->dma_lat_us = (int)u;
        return 0;
    default:
        return bad("unknown option");
    }
}

int
play_cli_main(int argc, char **argv)
{
    struct play_opts o = {.speed = 1.0,
                          .repeat = 1,
                          .copies = 1,
                          .auth_db = "admin",
                          .timeout_ns = 30000ull * 1000000u,
                          .dma_lat_us = -1};
    bool speed_set = false;
    char host[256];
    uint16_t port;
    int ch, rc;

    opterr = 0;
    optind = 1;
    /* GNU getopt_long permutes: the trace may come before or after the
     * options */
    while ((ch = getopt_long(argc, argv, "ho:", longopts, NULL)) != -1) {
        if (ch == 'h') {
            usage(stdout);
            return 0;
        }
        if (ch == 'o') {
            o.out = optarg;
            continue;
        }
        if (ch == '?' || ch == ':') {
            fprintf(stderr,
                    "mtrace play: unknown option or missing value '%s'; run "
                    "'mtrace play --help'\n",
                    argv[optind - 1]);
            return 2;
        }
        if ((rc = parse_opt(ch, optarg, &o, &speed_set)) != 0)
            return rc;
    }
    if (optind + 1 < argc)
        return bad("one trace at a time");
    if (optind < argc)
        o.trace = argv[optind];
    if (o.trace == NULL)
        return bad("no trace given");
    if (o.target == NULL)
        return bad("--target HOST:PORT is required");
    if (mt_addr_split(o.target, host, sizeof(host), &port) < 0 || port == 0)
        return bad("--target takes HOST:PORT");
    if (o.tls_ca != NULL && o.tls_insecure)
        return bad("--tls-ca and --tls-insecure exclude each other");
    if (speed_set && o.max_speed)
        return bad("--speed and --max-speed exclude each other");
    if (o.password == NULL)
        o.password = getenv("MTRACE_PASSWORD");
    if (o.username != NULL && (o.password == NULL || o.password[0] == '\0'))
        return bad("--username needs --password (or $MTRACE_PASSWORD)");
    if (o.username == NULL && o.password != NULL &&
        getenv("MTRACE_PASSWORD") != o.password)
        return bad("--password needs --username");
    return play_run(&o);
}
