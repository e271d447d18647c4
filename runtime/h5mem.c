/* In-memory HDF5 files (h5mem.h): the core driver with file-image callbacks that keep
 * the buffer at close. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/h5mem.h"

/* The file's length from its superblock (the core driver's buffer grows in steps, so it is
 * longer than the file): the end-of-file address, versions 0-3; 0 when unreadable. */
static size_t image_eof(const unsigned char *b, size_t size)
{
    static const unsigned char sig[8] = { 0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n' };
    if (size < 48 || memcmp(b, sig, 8)) return 0;
    int v = b[8];
    size_t base_at, eof_at, so;
    if (v == 0 || v == 1) so = b[13], base_at = v == 0 ? 24 : 28, eof_at = base_at + 16;
    else if (v == 2 || v == 3) so = b[9], base_at = 12, eof_at = 28;
    else return 0;
    if (so != 8) return 0;
    uint64_t base = 0, eof = 0;
    for (int k = 7; k >= 0; k--) {
        base = base << 8 | b[base_at + (size_t)k];
        eof = eof << 8 | b[eof_at + (size_t)k];
    }
    return base == 0 && eof >= 48 && eof <= size ? (size_t)eof : 0;
}

/* The in-memory file's buffer, kept when HDF5 lets go of it at close. */
static void *im_malloc(size_t size, H5FD_file_image_op_t op, void *u)
{
    (void)op;
    void *p = malloc(size);
    if (p) ((yq_h5mem *)u)->size = size;
    return p;
}
static void *im_memcpy(void *dst, const void *src, size_t size, H5FD_file_image_op_t op, void *u)
{
    (void)op, (void)u;
    return memcpy(dst, src, size);
}
static void *im_realloc(void *ptr, size_t size, H5FD_file_image_op_t op, void *u)
{
    (void)op;
    void *p = realloc(ptr, size);
    if (p) ((yq_h5mem *)u)->size = size;
    return p;
}
static herr_t im_free(void *ptr, H5FD_file_image_op_t op, void *u)
{
    yq_h5mem *m = u;
    if (op == H5FD_FILE_IMAGE_OP_FILE_CLOSE && ptr && ptr != m->kept) {
        free(m->kept);        /* an earlier close's buffer: only the last is the file */
        m->kept = ptr;
    } else if (ptr != m->kept) {
        free(ptr);
    }
    return 0;
}
static void *im_udata_copy(void *u) { return u; }
static herr_t im_udata_free(void *u) { (void)u; return 0; }

hid_t yq_h5mem_fapl(yq_h5mem *m)
{
    memset(m, 0, sizeof *m);
    H5FD_file_image_callbacks_t cb = { im_malloc, im_memcpy, im_realloc, im_free, im_udata_copy, im_udata_free, m };
    hid_t fa = H5Pcreate(H5P_FILE_ACCESS);
    if (fa < 0) return -1;
    if (H5Pset_fapl_core(fa, 64 << 10, 0) < 0 || H5Pset_file_image_callbacks(fa, &cb) < 0) {
        H5Pclose(fa);
        return -1;
    }
    return fa;
}

size_t yq_h5mem_image(const yq_h5mem *m)
{
    return m->kept ? image_eof(m->kept, m->size) : 0;
}

void yq_h5mem_free(yq_h5mem *m)
{
    free(m->kept);
    memset(m, 0, sizeof *m);
}
