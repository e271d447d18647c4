/* cli/par.h: MPI when the build has it (YQ_HAVE_MPI) and a launcher started us; else one rank. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/par.h"
#ifdef YQ_HAVE_MPI
#include <mpi.h>
#endif

static int g_rank, g_size = 1;
#ifdef YQ_HAVE_MPI
static int g_on;   /* MPI_Init was called */
#endif

int cli_par_available(void)
{
#ifdef YQ_HAVE_MPI
    return 1;
#else
    return 0;
#endif
}

void cli_par_init(int *argc, char ***argv)
{
#ifdef YQ_HAVE_MPI
    /* Open MPI's, PMIx's and Slurm's launchers leave these; a plain run stays a single
     * process without MPI's start-up (Open MPI's singleton mode starts a daemon). */
    static const char *const launched[] = { "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", NULL };
    int by_launcher = 0;
    for (int i = 0; launched[i] && !by_launcher; i++) by_launcher = getenv(launched[i]) != NULL;
    if (!by_launcher) return;
    if (MPI_Init(argc, argv) != MPI_SUCCESS) {
        fprintf(stderr, "yquant: MPI_Init failed; running as one process\n");
        return;
    }
    g_on = 1;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
#else
    (void)argc;
    (void)argv;
#endif
}

void cli_par_finalize(void)
{
#ifdef YQ_HAVE_MPI
    if (g_on) MPI_Finalize();
    g_on = 0;
#endif
}

int cli_par_rank(void) { return g_rank; }
int cli_par_size(void) { return g_size; }

void cli_par_barrier(void)
{
#ifdef YQ_HAVE_MPI
    if (g_on) MPI_Barrier(MPI_COMM_WORLD);
#endif
}

void cli_par_abort(int code)
{
#ifdef YQ_HAVE_MPI
    if (g_on) {
        fflush(stdout);
        fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, code);
    }
#endif
    (void)code;
}

#ifdef YQ_HAVE_MPI
/* MPI counts are ints: larger messages travel in 1 GiB pieces */
#define PIECE ((size_t)1 << 30)
#endif

int cli_par_bcast(void *buf, size_t n)
{
#ifdef YQ_HAVE_MPI
    if (!g_on) return 0;
    for (size_t o = 0; o < n; o += PIECE) {
        size_t k = n - o < PIECE ? n - o : PIECE;
        if (MPI_Bcast((char *)buf + o, (int)k, MPI_BYTE, 0, MPI_COMM_WORLD) != MPI_SUCCESS) return -1;
    }
#else
    (void)buf;
    (void)n;
#endif
    return 0;
}

int cli_par_send(int dest, int tag, const void *buf, size_t n)
{
#ifdef YQ_HAVE_MPI
    if (!g_on) return -1;
    if (n > (size_t)0x7fffffff) return -1;
    return MPI_Send(buf, (int)n, MPI_BYTE, dest, tag, MPI_COMM_WORLD) == MPI_SUCCESS ? 0 : -1;
#else
    (void)dest;
    (void)tag;
    (void)buf;
    (void)n;
    return -1;
#endif
}

int cli_par_recv(int block, int *src, int *tag, char **buf, size_t *n)
{
    *buf = NULL;
    *n = 0;
#ifdef YQ_HAVE_MPI
    if (!g_on) return -1;
    MPI_Status s;
    int have = 1, cnt;
    if (block ? MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &s)
              : MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &have, &s))
        return -1;
    if (!have) return 0;
    if (MPI_Get_count(&s, MPI_BYTE, &cnt) != MPI_SUCCESS || cnt < 0) return -1;
    char *b = malloc((size_t)cnt + 1);
    if (!b) return -1;
    if (MPI_Recv(b, cnt, MPI_BYTE, s.MPI_SOURCE, s.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
        free(b);
        return -1;
    }
    b[cnt] = 0;
    *buf = b;
    *n = (size_t)cnt;
    *src = s.MPI_SOURCE;
    *tag = s.MPI_TAG;
    return 1;
#else
    (void)block;
    (void)src;
    (void)tag;
    return -1;
#endif
}

int cli_par_gather(const void *mine, size_t n, char **all, size_t **counts)
{
    *all = NULL;
    *counts = NULL;
    if (g_size == 1) {   /* one rank: a copy */
        size_t *c = malloc(sizeof *c);
        char *a = malloc(n ? n : 1);
        if (!c || !a) {
            free(c);
            free(a);
            return -1;
        }
        if (n) memcpy(a, mine, n);
        c[0] = n;
        *all = a;
        *counts = c;
        return 0;
    }
#ifdef YQ_HAVE_MPI
    /* every rank sends its size, then its bytes, to rank 0 (point to point: no int limit on
     * the total, none on a part beyond cli_par_send's) */
    enum { TAG_SIZE = 1 << 20, TAG_DATA = (1 << 20) + 1 };
    unsigned long long mn = n;
    if (g_rank) {
        if (MPI_Send(&mn, 1, MPI_UNSIGNED_LONG_LONG, 0, TAG_SIZE, MPI_COMM_WORLD) != MPI_SUCCESS) return -1;
        return n > (size_t)0x7fffffff || MPI_Send(mine, (int)n, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD) != MPI_SUCCESS ? -1 : 0;
    }
    size_t *c = malloc(sizeof *c * (size_t)g_size), total = n;
    if (!c) return -1;
    c[0] = n;
    for (int r = 1; r < g_size; r++) {
        unsigned long long v;
        if (MPI_Recv(&v, 1, MPI_UNSIGNED_LONG_LONG, r, TAG_SIZE, MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
            free(c);
            return -1;
        }
        c[r] = (size_t)v;
        total += c[r];
    }
    char *a = malloc(total ? total : 1);
    if (!a) {
        free(c);
        return -1;
    }
    if (n) memcpy(a, mine, n);
    size_t o = n;
    for (int r = 1; r < g_size; r++) {
        if (c[r] > (size_t)0x7fffffff ||
            MPI_Recv(a + o, (int)c[r], MPI_BYTE, r, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
            free(a);
            free(c);
            return -1;
        }
        o += c[r];
    }
    *all = a;
    *counts = c;
    return 0;
#else
    return -1;
#endif
}

const char *cli_par_device(const char *spec, int ngpu, char *buf, size_t cap)
{
    if (g_size < 2 || ngpu < 1 || (spec && strcmp(spec, "cuda"))) return spec;
    snprintf(buf, cap, "cuda:%d", g_rank % ngpu);
    return buf;
}

int cli_par_merge_strided(void *rows, size_t row_bytes, int n)
{
    if (g_size == 1 || n <= 0) return 0;
    const size_t bytes = row_bytes * (size_t)n;
    char *all = NULL;
    size_t *counts = NULL;
    int bad = cli_par_gather(rows, bytes, &all, &counts);
    if (!bad && g_rank == 0) {
        for (int r = 1; r < g_size && !bad; r++) bad = counts[r] != bytes;
        for (int k = 0; k < n && !bad; k++) {
            const int r = k % g_size;
            if (r) memcpy((char *)rows + (size_t)k * row_bytes, all + (size_t)r * bytes + (size_t)k * row_bytes, row_bytes);
        }
    }
    free(all);
    free(counts);
    /* every rank learns whether rank 0 could merge, then gets the rows */
    int ok = !bad;
    if (cli_par_bcast(&ok, sizeof ok) || !ok) return -1;
    return cli_par_bcast(rows, bytes);
}

int cli_par_exchange(void *ctx, void *rows, size_t row_bytes, int n)
{
    (void)ctx;
    return cli_par_merge_strided(rows, row_bytes, n);
}
