/* bench_darknet: FP32 CPU throughput of Debian's darknet (pjreddie darknet 2018, the peer) on
 * one model, for the ratio bench/run.sh prints.
 *
 *   bench_darknet CFG WEIGHTS [--runs N] [--warmup N] [--json FILE]
 *
 * Built by bench/run.sh against /usr/lib/darknet/libdarknet.so (not by the Makefile, whose
 * bench rule links libyq; this folder is outside the Makefile's bench wildcard):
 *   cc -O2 -I/usr/lib/darknet/include bench/darknet_peer/bench_darknet.c -L/usr/lib/darknet \
 *      -ldarknet -Wl,-rpath,/usr/lib/darknet -lm -lpthread -o build/bench/bench_darknet
 *
 * The network is loaded at the cfg's input size with batch 1, fed the same deterministic
 * input as bench/bench_cpu.c (a smooth pattern in [0,1]), run --warmup times (default 2) and
 * then --runs times (default 20) through network_predict under a monotonic clock.  Debian's
 * darknet has its own gemm (no BLAS) and no OpenMP, so it runs on one thread; the process's
 * CPU time over wall time is printed so that this can be checked (about 1.0 means one core).
 * The last line is machine-readable:
 *   RESULT engine=darknet batch=1 median_ms=... img_s=... cpu_util=...
 * Exit status 1 on failure, 2 on a usage error.  darknet itself exits on some bad cfgs.
 */
#include <darknet.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Identical to fill_input in bench/bench_cpu.c. */
static void fill_input(float *x, int c, int h, int w)
{
    for (int k = 0; k < c; k++)
        for (int y = 0; y < h; y++)
            for (int i = 0; i < w; i++)
                x[((long)k * h + y) * w + i] = (float)((i * 7 + y * 13 + k * 29) % 256) / 255.f;
}

static void usage(void)
{
    fprintf(stderr, "usage: bench_darknet CFG WEIGHTS [--runs N] [--warmup N] [--json FILE]\n");
    exit(2);
}

static int int_arg(const char *v, int lo)
{
    char *end;
    errno = 0;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || errno || *end || end == v || x < lo || x > 1000000) usage();
    return (int)x;
}

int main(int argc, char **argv)
{
    const char *pos[2], *json = NULL;
    int npos = 0, runs = 20, warmup = 2;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--runs")) runs = int_arg(i + 1 < argc ? argv[++i] : NULL, 1);
        else if (!strcmp(argv[i], "--warmup")) warmup = int_arg(i + 1 < argc ? argv[++i] : NULL, 0);
        else if (!strcmp(argv[i], "--json")) { if (++i >= argc) usage(); json = argv[i]; }
        else if (argv[i][0] == '-' || npos == 2) usage();
        else pos[npos++] = argv[i];
    }
    if (npos != 2) usage();
    /* darknet reports a missing file by exit(0), so check first. */
    for (int i = 0; i < 2; i++)
        if (access(pos[i], R_OK) != 0) {
            fprintf(stderr, "bench_darknet: %s: %s\n", pos[i], strerror(errno));
            return 1;
        }

    network *net = load_network((char *)pos[0], (char *)pos[1], 0);
    if (!net) { fprintf(stderr, "bench_darknet: %s: load_network failed\n", pos[0]); return 1; }
    set_batch_network(net, 1);
    int c = net->c, h = net->h, w = net->w;
    float *x = malloc(sizeof(float) * (size_t)c * h * w);
    double *t = malloc(sizeof(double) * (size_t)runs);
    if (!x || !t) { fprintf(stderr, "bench_darknet: out of memory\n"); return 1; }
    fill_input(x, c, h, w);

    for (int r = 0; r < warmup; r++) network_predict(net, x);
    double sum = 0, c0 = cpu_ms(), w0 = now_ms();
    for (int r = 0; r < runs; r++) {
        double t0 = now_ms();
        network_predict(net, x);
        t[r] = now_ms() - t0;
        sum += t[r];
    }
    double cpu_total = cpu_ms() - c0, cpu_util = cpu_total / (now_ms() - w0);
    qsort(t, (size_t)runs, sizeof *t, cmp_double);
    double med = runs % 2 ? t[runs / 2] : 0.5 * (t[runs / 2 - 1] + t[runs / 2]), mean = sum / runs;
    printf("darknet: %s, input %dx%dx%d, batch 1\n", pos[0], c, h, w);
    printf("timed:   %d runs after %d warm-up: median %.3f ms/image, mean %.3f, min %.3f, max %.3f\n", runs,
           warmup, med, mean, t[0], t[runs - 1]);
    printf("         %.2f images/s, CPU/wall %.2f (threads: %s), CPU %.3f ms/image\n", 1e3 / med, cpu_util,
           cpu_util < 1.2 ? "1, as built" : "more than one", cpu_total / runs);
    printf("RESULT engine=darknet batch=1 median_ms=%.3f mean_ms=%.3f min_ms=%.3f ms_per_img=%.3f min_ms_per_img=%.3f "
           "cpu_ms_per_img=%.3f img_s=%.2f cpu_util=%.2f\n", med, mean, t[0], med, t[0], cpu_total / runs, 1e3 / med,
           cpu_util);
    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) { fprintf(stderr, "bench_darknet: %s: %s\n", json, strerror(errno)); return 1; }
        fprintf(f, "{\"engine\":\"darknet\",\"cfg\":\"%s\",\"batch\":1,\"runs\":%d,\"warmup\":%d,\"median_ms\":%.4f,"
                   "\"mean_ms\":%.4f,\"min_ms\":%.4f,\"max_ms\":%.4f,\"img_s\":%.3f,\"cpu_util\":%.3f}\n",
                pos[0], runs, warmup, med, mean, t[0], t[runs - 1], 1e3 / med, cpu_util);
        if (fclose(f) != 0) { fprintf(stderr, "bench_darknet: %s: write failed\n", json); return 1; }
    }
    free(t);
    free(x);
    free_network(net);
    return 0;
}
