/* Safe output files (fsio.h): temporary + fsync + rename for regular files, in place for
 * devices and pipes, symlinks followed. */
#define _DEFAULT_SOURCE           /* mkstemps */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ir/fsio.h"

/* The temporaries being written now, for yq_out_remove_pending (a signal handler's call):
 * a fixed table of names, set before a temporary exists and cleared after it is renamed
 * or removed, read with nothing but unlink(2). */
#define PENDING 16
static char pending[PENDING][YQ_PATH_MAX];
static volatile sig_atomic_t pending_used[PENDING];

static void pending_add(const char *tmp)
{
    for (int i = 0; i < PENDING; i++)
        if (!pending_used[i]) {
            memcpy(pending[i], tmp, strlen(tmp) + 1);
            pending_used[i] = 1;
            return;
        }
}

static void pending_drop(const char *tmp)
{
    for (int i = 0; i < PENDING; i++)
        if (pending_used[i] && !strcmp(pending[i], tmp)) pending_used[i] = 0;
}

void yq_out_remove_pending(void)
{
    for (int i = 0; i < PENDING; i++)
        if (pending_used[i]) unlink(pending[i]);
}

/* The process's umask without changing it (umask(2) sets it, which would race with other
 * threads creating files): Linux shows it in /proc/self/status. */
static mode_t current_umask(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    unsigned m = 022;
    char line[128];
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "Umask: %o", &m) == 1) break;
    if (f) fclose(f);
    return (mode_t)(m & 0777);
}

yq_status yq_resolve_target(const char *path, char *out, size_t cap, yq_error *err)
{
    if (!path || !*path) return yq_fail(err, YQ_ERR_INVALID_ARG, "empty output path");
    if (strlen(path) >= cap) return yq_fail(err, YQ_ERR_INVALID_ARG, "%.200s...: path too long", path);
    strcpy(out, path);
    for (int hops = 0;; hops++) {
        struct stat sb;
        if (lstat(out, &sb) != 0 || !S_ISLNK(sb.st_mode)) return YQ_OK;   /* missing or not a link */
        if (hops == 40) return yq_fail(err, YQ_ERR_IO, "%s: too many levels of symbolic links", path);
        char link[YQ_PATH_MAX];
        ssize_t n = readlink(out, link, sizeof link - 1);
        if (n < 0) return yq_fail(err, YQ_ERR_IO, "%s: %s", out, strerror(errno));
        link[n] = 0;
        if (link[0] == '/') {
            if ((size_t)n >= cap) return yq_fail(err, YQ_ERR_INVALID_ARG, "%s: link target too long", path);
            strcpy(out, link);
        } else {
            /* relative to the link's own folder */
            char dir[YQ_PATH_MAX];
            strcpy(dir, out);
            char *slash = strrchr(dir, '/');
            if (slash) slash[1] = 0;
            else dir[0] = 0;
            if (strlen(dir) + (size_t)n >= cap)
                return yq_fail(err, YQ_ERR_INVALID_ARG, "%s: link target too long", path);
            snprintf(out, cap, "%s%s", dir, link);
        }
    }
}

yq_status yq_out_begin(yq_outfile *o, const char *path, yq_out_kind kind, yq_error *err)
{
    memset(o, 0, sizeof *o);
    if (path && !strcmp(path, "-")) {
        if (kind == YQ_OUT_NAMED) return yq_fail(err, YQ_ERR_INVALID_ARG, "-: this output cannot go to standard output");
        o->f = stdout;
        o->in_place = 1;
        strcpy(o->path, "-");
        return YQ_OK;
    }
    yq_status st = yq_resolve_target(path, o->path, sizeof o->path, err);
    if (st != YQ_OK) return st;
    struct stat sb;
    if (stat(o->path, &sb) == 0) {
        if (S_ISDIR(sb.st_mode)) return yq_fail(err, YQ_ERR_IO, "%s: is a folder", path);
        if (S_ISCHR(sb.st_mode) || S_ISFIFO(sb.st_mode) || S_ISSOCK(sb.st_mode)) {
            if (kind == YQ_OUT_NAMED) return yq_fail(err, YQ_ERR_IO, "%s: not a regular file", path);
            o->f = fopen(o->path, "w");
            if (!o->f) return yq_fail(err, YQ_ERR_IO, "%s: %s", path, strerror(errno));
            o->in_place = 1;
            return YQ_OK;
        }
        if (!S_ISREG(sb.st_mode)) return yq_fail(err, YQ_ERR_IO, "%s: not a regular file", path);
        o->mode = (int)(sb.st_mode & 07777);
    } else if (errno == ENOENT) {
        o->mode = (int)(0666 & ~current_umask());
    } else {
        return yq_fail(err, YQ_ERR_IO, "%s: %s", path, strerror(errno));
    }
    if ((size_t)snprintf(o->tmp, sizeof o->tmp, "%s.XXXXXX.tmp", o->path) >= sizeof o->tmp)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "%.200s...: path too long", path);
    int fd = mkstemps(o->tmp, 4);
    if (fd < 0) {
        int e = errno;
        o->tmp[0] = 0;
        if (e == ENOENT) return yq_fail(err, YQ_ERR_IO, "%s: its folder does not exist", path);
        return yq_fail(err, YQ_ERR_IO, "%s: cannot create a file beside it: %s", path, strerror(e));
    }
    pending_add(o->tmp);
    (void)fchmod(fd, (mode_t)o->mode);     /* on failure 0600 stays: stricter, still correct */
    if (kind == YQ_OUT_NAMED) {
        close(fd);
        return YQ_OK;
    }
    o->f = fdopen(fd, "w");
    if (!o->f) {
        int e = errno;
        close(fd);
        unlink(o->tmp);
        pending_drop(o->tmp);
        o->tmp[0] = 0;
        return yq_fail(err, YQ_ERR_IO, "%s: %s", path, strerror(e));
    }
    return YQ_OK;
}

yq_status yq_out_commit(yq_outfile *o, yq_error *err)
{
    yq_status st = YQ_OK;
    if (o->f) {
        int bad = fflush(o->f) != 0 || ferror(o->f);
        int e = errno;
        if (!bad && o->tmp[0] && fsync(fileno(o->f)) != 0) bad = 1, e = errno;
        if (o->f != stdout && fclose(o->f) != 0 && !bad) bad = 1, e = errno;
        o->f = NULL;
        if (bad) st = yq_fail(err, YQ_ERR_IO, "%s: write failed: %s", o->path, e ? strerror(e) : "I/O error");
    } else if (o->tmp[0]) {
        /* YQ_OUT_NAMED: the caller wrote and closed it by name */
        int fd = open(o->tmp, O_RDONLY);
        if (fd < 0 || fsync(fd) != 0) st = yq_fail(err, YQ_ERR_IO, "%s: write failed: %s", o->path, strerror(errno));
        if (fd >= 0) close(fd);
    }
    if (st == YQ_OK && o->tmp[0] && rename(o->tmp, o->path) != 0)
        st = yq_fail(err, YQ_ERR_IO, "%s: cannot replace it: %s", o->path, strerror(errno));
    if (st != YQ_OK && o->tmp[0]) unlink(o->tmp);
    if (o->tmp[0]) pending_drop(o->tmp);
    o->tmp[0] = 0;
    return st;
}

void yq_out_abort(yq_outfile *o)
{
    if (o->f && o->f != stdout) fclose(o->f);
    o->f = NULL;
    if (o->tmp[0]) {
        unlink(o->tmp);
        pending_drop(o->tmp);
    }
    o->tmp[0] = 0;
}

yq_status yq_out_write_text(const char *path, const char *text, yq_error *err)
{
    yq_outfile o;
    yq_status st = yq_out_begin(&o, path, YQ_OUT_STREAM, err);
    if (st != YQ_OK) return st;
    fputs(text, o.f);
    return yq_out_commit(&o, err);
}

yq_status yq_out_check(const char *path, yq_error *err)
{
    if (path && !strcmp(path, "-")) return YQ_OK;
    char t[YQ_PATH_MAX];
    yq_status st = yq_resolve_target(path, t, sizeof t, err);
    if (st != YQ_OK) return st;
    struct stat sb;
    if (stat(t, &sb) == 0) {
        if (S_ISDIR(sb.st_mode)) return yq_fail(err, YQ_ERR_IO, "%s: is a folder", path);
        if (S_ISCHR(sb.st_mode) || S_ISFIFO(sb.st_mode) || S_ISSOCK(sb.st_mode)) return YQ_OK;
    }
    char d[YQ_PATH_MAX];
    strcpy(d, t);
    const char *dir = dirname(d);
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return yq_fail(err, YQ_ERR_IO, "%s: folder %s does not exist", path, dir);
    /* A probe file, not access(2): root passes access() on a read-only file system. */
    char probe[YQ_PATH_MAX];
    if ((size_t)snprintf(probe, sizeof probe, "%s.XXXXXX.tmp", t) >= sizeof probe)
        return yq_fail(err, YQ_ERR_INVALID_ARG, "%.200s...: path too long", path);
    int fd = mkstemps(probe, 4);
    if (fd < 0) return yq_fail(err, YQ_ERR_IO, "%s: folder %s is not writable: %s", path, dir, strerror(errno));
    close(fd);
    unlink(probe);
    return YQ_OK;
}

int yq_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (!a || !b || stat(a, &sa) != 0 || stat(b, &sb) != 0) return 0;
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}
