/* A progress bar on a terminal (stderr); nothing when stderr is not a tty or -q is given;
 * with -v each step's start and end as timed lines (terminal or not). */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include "cli/cli.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int cli_verbosity = 1;

void cli_note(const char *fmt, ...)
{
    if (cli_verbosity < 1) return;
    va_list ap;
    va_start(ap, fmt);
    fputs("yquant: note: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

void cli_progress_start(cli_bar *p, const char *label)
{
    p->label = label;
    p->t0 = now();
    p->tty = isatty(2) && cli_verbosity >= 1;
    p->last = -1;
    if (cli_verbosity >= 2 && !p->tty) fprintf(stderr, "yquant: %s ...\n", label);
}

void cli_progress(void *ctx, int done, int total)
{
    cli_bar *p = ctx;
    if (cli_verbosity >= 2 && !p->tty && total > 0 && done == total && p->last != 100) {
        p->last = 100;
        fprintf(stderr, "yquant: %s: %d/%d done in %.1f s\n", p->label, done, total, now() - p->t0);
    }
    if (!p->tty || total <= 0) return;
    int pct = (int)(100.0 * done / total);
    if (pct == p->last && done != total) return;
    p->last = pct;
    double el = now() - p->t0, eta = done ? el * (total - done) / done : 0;
    char bar[31];
    int fill = 30 * done / total;
    for (int i = 0; i < 30; i++) bar[i] = i < fill ? '#' : '.';
    bar[30] = 0;
    fprintf(stderr, "\r%-12s [%s] %3d%% %d/%d  %.1fs elapsed, %.1fs left ", p->label, bar, pct, done, total, el, eta);
    if (done == total) fputc('\n', stderr);
    fflush(stderr);
}

void cli_warn(void *ctx, const char *msg)
{
    cli_bar *p = ctx;
    if (p && p->tty && p->last >= 0 && p->last < 100) {
        fputs("\r\033[K", stderr);    /* the bar's line cleared; the next update redraws it */
        p->last = -1;
    }
    fprintf(stderr, "warning: %s\n", msg);
}
