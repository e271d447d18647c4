/* The package entry points cmd_bench uses, for build/gpu/yquant (make gpu-bench),
 * which is linked without HDF5: no file is a package, and loading one says why. */
#include "runtime/package.h"

int yq_package_is(const char *path)
{
    (void)path;
    return 0;
}

yq_status yq_package_load(const char *path, yq_graph **out, yq_package_info **info, yq_error *err)
{
    (void)out;
    (void)info;
    return yq_fail(err, YQ_ERR_UNSUPPORTED, "%s: this build of yquant bench has no HDF5 (no .yqp packages); "
                   "quantize the plain model instead", path);
}
