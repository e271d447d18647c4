/* Shared by the harnesses whose loader takes a path, not bytes: each input is
 * written to a file in one temporary folder per process (on /dev/shm when there
 * is one: yq_out_commit syncs, and a sync on tmpfs costs nothing), rewritten for
 * every input and removed at exit.  A crashing process leaves its folder behind
 * (/dev/shm/yq-fuzz-NAME-XXXXXX): the reproducer is in build/fuzz/artifacts/.
 *
 *     fuzz_dir_init("qconfig");                       // LLVMFuzzerInitialize
 *     const char *p = fuzz_path("in.qc");
 *     fuzz_write(p, data, size);                      // LLVMFuzzerTestOneInput
 *     yq_status st = yq_qconfig_load(&qc, p, &err);
 *     fuzz_check_error(st, &err);                     // abort() unless one line
 */
#ifndef YQ_FUZZ_H
#define YQ_FUZZ_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "include/yq.h"

#define FUZZ_MAX_PATHS 16

static char fuzz_dir[128];
static char fuzz_paths[FUZZ_MAX_PATHS][192];   /* removed at exit, last first */
static int fuzz_n_paths;

static inline void fuzz_cleanup(void)
{
    for (int i = fuzz_n_paths - 1; i >= 0; i--) remove(fuzz_paths[i]);
    if (fuzz_dir[0]) rmdir(fuzz_dir);
}

/* A bug in the harness or its surroundings, not in the code under test. */
static inline void fuzz_die(const char *what, const char *path)
{
    fprintf(stderr, "fuzz harness: %s: %s\n", what, path);
    abort();
}

static inline void fuzz_dir_init(const char *name)
{
    const char *base = getenv("TMPDIR");
    struct stat sb;
    if (!base || !*base) base = stat("/dev/shm", &sb) == 0 && S_ISDIR(sb.st_mode) ? "/dev/shm" : "/tmp";
    snprintf(fuzz_dir, sizeof fuzz_dir, "%s/yq-fuzz-%s-XXXXXX", base, name);
    if (!mkdtemp(fuzz_dir)) fuzz_die("cannot make a temporary folder", fuzz_dir);
    atexit(fuzz_cleanup);
}

/* "dir/name", recorded for removal at exit; the same name gives the same path. */
static inline const char *fuzz_path(const char *name)
{
    char p[sizeof fuzz_paths[0]];
    snprintf(p, sizeof p, "%s/%s", fuzz_dir, name);
    for (int i = 0; i < fuzz_n_paths; i++)
        if (!strcmp(fuzz_paths[i], p)) return fuzz_paths[i];
    if (fuzz_n_paths == FUZZ_MAX_PATHS) fuzz_die("too many temporary paths", p);
    memcpy(fuzz_paths[fuzz_n_paths], p, sizeof p);
    return fuzz_paths[fuzz_n_paths++];
}

static inline const char *fuzz_mkdir(const char *name)
{
    const char *p = fuzz_path(name);
    if (mkdir(p, 0700) != 0) fuzz_die("cannot make a folder", p);
    return p;
}

static inline void fuzz_write(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) fuzz_die("cannot write", path);
}

/* The contract of every loader: YQ_OK, or a status with err->code equal to it and
 * a message of one non-empty, terminated line. */
static inline void fuzz_check_error(yq_status st, const yq_error *err)
{
    if (st == YQ_OK) return;
    int terminated = memchr(err->msg, 0, sizeof err->msg) != NULL;
    if (err->code == st && terminated && err->msg[0] && !strchr(err->msg, '\n')) return;
    fprintf(stderr, "fuzz: status %d, err.code %d, message '%.*s'\n", (int)st, (int)err->code,
            (int)sizeof err->msg, err->msg);
    abort();
}

#endif
