/* yquant over MPI (issue 20): `mpirun -np N yquant eval|sweep ...` runs one job over N ranks.
 * Without MPI in the build, or when the program was not started by an MPI launcher, there
 * is one rank and every call here is a no-op (the binary runs as it always did).
 *
 * Messages are bytes: the ranks are one build of yquant on one kind of machine (a cluster
 * of equal nodes), so structs travel as they lie in memory. */
#ifndef YQ_CLI_PAR_H
#define YQ_CLI_PAR_H

#include <stddef.h>

/* Called once, first thing in main: MPI_Init when an MPI launcher started this process. */
void cli_par_init(int *argc, char ***argv);
/* Called once at exit (MPI_Finalize). */
void cli_par_finalize(void);
int cli_par_rank(void);         /* 0 .. cli_par_size() - 1 */
int cli_par_size(void);         /* 1 without MPI */
int cli_par_available(void);    /* 1 when this build has MPI */
/* Every rank waits for every other. */
void cli_par_barrier(void);
/* Ends the whole job with status code (MPI_Abort): a rank that failed, after its one line. */
void cli_par_abort(int code);
/* n bytes from rank 0 to every rank (the same n everywhere); 0, or -1 on an MPI error. */
int cli_par_bcast(void *buf, size_t n);
/* Rank 0 gets every rank's bytes, in rank order: *all (malloc'd) and counts[size] (malloc'd);
 * the other ranks get NULLs.  0, or -1 (out of memory, an MPI error). */
int cli_par_gather(const void *mine, size_t n, char **all, size_t **counts);
/* rows: n rows of row_bytes on every rank, of which rank r computed rows r, r + size, ...:
 * afterwards every rank holds each row k from rank k % size.  0, or -1 (out of memory, an
 * MPI error).  One rank: nothing to do. */
int cli_par_merge_strided(void *rows, size_t row_bytes, int n);
/* The same with the library's exchange signature (yq_sens_opt, yq_max_drop_opt; ctx unused). */
int cli_par_exchange(void *ctx, void *rows, size_t row_bytes, int n);
/* A message of n bytes to rank dest with tag (>= 0). */
int cli_par_send(int dest, int tag, const void *buf, size_t n);
/* The next message from any rank: *src, *tag and *buf (malloc'd, *n bytes; NUL-terminated
 * one byte past n).  block 0: returns 0 at once when none is waiting.  1 when one was
 * received, 0 none, -1 on an error. */
int cli_par_recv(int block, int *src, int *tag, char **buf, size_t *n);
/* A device for this rank: "cuda:<rank modulo the visible GPUs>" into buf when spec is NULL
 * or "cuda" and this job has several ranks; else spec.  ngpu: the visible GPUs. */
const char *cli_par_device(const char *spec, int ngpu, char *buf, size_t cap);

#endif
