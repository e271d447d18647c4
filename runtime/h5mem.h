/* HDF5 files made in memory and written out by yquant (the package and the calibration
 * cache): HDF5 never writes to disk, so a full disk is an ordinary write error of ours,
 * never a half-closed HDF5 file that HDF5's exit handler then trips over.
 *
 *     yq_h5mem m = { 0 };
 *     hid_t fa = yq_h5mem_fapl(&m);                       // + the caller's own settings
 *     hid_t f = H5Fcreate(YQ_H5MEM_NAME, H5F_ACC_TRUNC, H5P_DEFAULT, fa);
 *     ... write ...; H5Fclose(f); H5Pclose(fa);
 *     size_t n = yq_h5mem_image(&m);                      // the file is m.kept[0..n)
 *     ... write m.kept ...; yq_h5mem_free(&m);
 */
#ifndef YQ_RUNTIME_H5MEM_H
#define YQ_RUNTIME_H5MEM_H

#include <stddef.h>
#include <hdf5.h>

/* A name that cannot exist on disk (a path through /dev/null): given a real one, HDF5
 * would first open and read whatever file is there. */
#define YQ_H5MEM_NAME "/dev/null/yquant-in-memory"

typedef struct yq_h5mem { void *kept; size_t size; } yq_h5mem;

/* A file-access property list: the core driver without a backing store, whose buffer m
 * keeps when HDF5 lets go of it at close.  -1 on failure. */
hid_t yq_h5mem_fapl(yq_h5mem *m);
/* After H5Fclose: the file's length (from its superblock; the buffer grows in steps, so
 * it is longer); 0 when there is no image or it is unreadable. */
size_t yq_h5mem_image(const yq_h5mem *m);
void yq_h5mem_free(yq_h5mem *m);

#endif
