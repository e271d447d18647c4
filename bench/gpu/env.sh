# Sourced by bench/gpu/run_gpu.sh (and by hand before build/gpu/yqgpu test_cuda|test_cudnn on
# the device machine): makes cuDNN's shared libraries findable.  A system-wide cuDNN is used
# as is; otherwise the one PyTorch's wheels carry (site-packages/nvidia/*/lib).
if ! ldconfig -p 2>/dev/null | grep -q 'libcudnn.so.9 '; then
    yq_extra=$(python3 -c 'import glob, os, nvidia; print(":".join(d for p in nvidia.__path__ for d in sorted(glob.glob(os.path.join(p, "*", "lib")))))' 2>/dev/null)
    [ -n "$yq_extra" ] && export LD_LIBRARY_PATH="$yq_extra${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    unset yq_extra
fi
