/* Files written safely: the yq_outfile API is public (include/yq_data.h, "output files");
 * these helpers are the library's own. */
#ifndef YQ_IR_FSIO_H
#define YQ_IR_FSIO_H

#include "include/yq_data.h"
#include "ir/ir.h"

/* 1 when a and b name the same existing file (after symlinks, hard links too); 0 when not
 * or when either does not exist. */
int yq_same_file(const char *a, const char *b);

/* path with symlinks of its last component (and their targets') followed, into out[cap]:
 * the file a write to path would change.  A path that does not exist is copied as is. */
yq_status yq_resolve_target(const char *path, char *out, size_t cap, yq_error *err);

#endif
