/*
 * capture_setup.c -- signals, descriptor limit, PM QoS and device check
 * of `mtrace capture` (see capture_setup.h).
 */
#include "capture_setup.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include <pcap/pcap.h>

#include "core/err.h"
#include "core/log.h"
#include "proxy.h"
#include "recdir.h"
#include "sniff.h"

static void
capture_setup_on_signal(int sig)
{
    (void)sig;
    proxy_stop();
    sniff_stop();
    recdir_stop();
}

void
capture_setup_signals(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = capture_setup_on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

void
capture_setup_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max > (1u << 20) ? (1u << 20) : rl.rlim_max;
        (void)setrlimit(RLIMIT_NOFILE, &rl);
    }
}

int
capture_setup_iface_known(const char *name)
{
    char eb[PCAP_ERRBUF_SIZE] = "";
    pcap_if_t *devs = NULL;
    int found = 0;

    if (pcap_findalldevs(&devs, eb) != 0)
        return -1;
    for (pcap_if_t *d = devs; d != NULL && !found; d = d->next)
        found = strcmp(d->name, name) == 0;
    pcap_freealldevs(devs);
    return found;
}

int
capture_setup_hold_latency(struct pmqos *q, int us)
{
    struct mt_err err = {0};

    if (us < 0)
        return 0;
    if (pmqos_hold(q, us, &err) < 0) {
        fprintf(stderr, "mtrace capture: --cpu-dma-latency %d: %s; %s\n", us,
                err.msg,
                err.code == -ENOENT ? "this kernel has no PM QoS device, "
                                      "leave the option out"
                                    : "run as root or leave the option out");
        return 1;
    }
    mt_info("capture: holding CPU wake-up latency <= %d us (%s) until exit", us,
            PMQOS_DEV);
    return 0;
}

void
capture_setup_release_latency(struct pmqos *q, bool quiet)
{
    int now = -1;

    if (q->fd < 0)
        return;
    if (!quiet) {
        if (pmqos_current(&now) < 0)
            now = -1;
        fprintf(stderr,
                "  cpu wake-up latency: held <= %d us on %s from start to "
                "exit (host bound at exit: %d us)\n",
                q->us, PMQOS_DEV, now);
    }
    pmqos_release(q);
}
