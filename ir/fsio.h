/* Files written safely: every output of yquant (packages, caches, JSON, CSV, PNG, HTML)
 * goes through one of these, so that
 *   - a regular file is replaced atomically: the bytes go to a temporary beside it, with a
 *     unique name (PATH.XXXXXX.tmp), which is renamed onto it only once every byte is
 *     written and synced; on any error the temporary is removed and the old file stays;
 *   - a symbolic link is followed: its target is replaced, the link stays a link;
 *   - a device, FIFO or socket (--json /dev/stdout, a pipe) is written in place, never
 *     replaced by a regular file; "-" is standard output;
 *   - a folder, or a missing or unwritable parent folder, is an error before any byte.
 *
 *   yq_outfile o;
 *   if (yq_out_begin(&o, path, YQ_OUT_STREAM, err) != YQ_OK) return err->code;
 *   fputs(text, o.f);
 *   return yq_out_commit(&o, err);          (or yq_out_abort(&o) on an error of the caller's)
 *
 * YQ_OUT_NAMED gives no stream but a temporary file's name (o.tmp) for libraries that open
 * files by name (HDF5); such targets must be regular files.
 *
 * A temporary left behind by a killed process (SIGKILL, power loss) is never read by yquant
 * and can be deleted: its name ends in .tmp and starts with the target's name.  SIGINT and
 * SIGTERM leave none (yq_out_remove_pending). */
#ifndef YQ_IR_FSIO_H
#define YQ_IR_FSIO_H

#include <stdio.h>
#include "ir/ir.h"

#define YQ_PATH_MAX 4096

typedef enum { YQ_OUT_STREAM = 0, YQ_OUT_NAMED = 1 } yq_out_kind;

typedef struct {
    FILE *f;                    /* YQ_OUT_STREAM: write here */
    char path[YQ_PATH_MAX];     /* the file that will be replaced (symlinks resolved) */
    char tmp[YQ_PATH_MAX];      /* the temporary; "" when writing in place */
    int in_place;               /* stdout, a device, FIFO or socket */
    int mode;                   /* permissions the new file gets */
} yq_outfile;

yq_status yq_out_begin(yq_outfile *o, const char *path, yq_out_kind kind, yq_error *err);
/* Flushes, syncs and renames; on failure removes the temporary.  Always closes. */
yq_status yq_out_commit(yq_outfile *o, yq_error *err);
/* Drops what was written (removes the temporary); safe on a yq_outfile never begun
 * (zeroed) or already committed. */
void yq_out_abort(yq_outfile *o);

/* Removes the temporaries of writes in progress; async-signal-safe (unlink only), for a
 * program's SIGINT/SIGTERM handler (cli/yquant.c): an interrupted run leaves none. */
void yq_out_remove_pending(void);

/* Whole text to a file, through the above. */
yq_status yq_out_write_text(const char *path, const char *text, yq_error *err);

/* Checks, before any work, that path can be written: its folder exists and is writable, and
 * it is not a folder itself.  "-" and existing devices/FIFOs pass. */
yq_status yq_out_check(const char *path, yq_error *err);

/* 1 when a and b name the same existing file (after symlinks, hard links too); 0 when not
 * or when either does not exist. */
int yq_same_file(const char *a, const char *b);

/* path with symlinks of its last component (and their targets') followed, into out[cap]:
 * the file a write to path would change.  A path that does not exist is copied as is. */
yq_status yq_resolve_target(const char *path, char *out, size_t cap, yq_error *err);

#endif
