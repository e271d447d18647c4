# yquant: plain Makefile.  `make` builds the library and the programs,
# `make test` runs every test, `make bench` the benchmarks, `make fuzz` the fuzzers.
#
# Sources are found by folder: a new .c in ir/ joins libyq without editing this file.

CC       ?= cc
CXX      ?= c++
NVCC     ?= $(shell command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
B        := build

WARN     := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
            -Wpointer-arith -Wdouble-promotion -Wno-format-truncation
ifeq ($(CI),true)
WARN     += -Werror
endif
OPT      ?= -O2
CPPFLAGS += -Iinclude -I. $(shell pkg-config --cflags libcjson hdf5-serial openblas cairo 2>/dev/null)
# SAN: sanitizer flags, set by `make test-asan` (compile and link)
SAN      ?=
CFLAGS   += -std=c11 -D_POSIX_C_SOURCE=200809L $(OPT) -g $(WARN) -fPIC -pthread -ffp-contract=off $(SAN)
CXXFLAGS += -std=c++17 $(OPT) -g -Wall -Wextra -fPIC $(SAN) $(shell pkg-config --cflags opencv4)
# sm_61 (dp4a) and newer; sm_90 for the H200.  CUDA 13 dropped sm_61/70 codegen, so
# the list is whatever this nvcc accepts among those we target.  A cubin runs on every
# device of its major version at or above its minor one, so sm_80's code serves sm_86 and
# sm_89 (each of those cost CI a full pass over every kernel); the newest architecture's
# PTX is embedded as well, for devices newer than any listed (the driver compiles it).
NVCC_ARCHS ?= $(shell l=; for a in 61 70 75 80 90; do \
                $(NVCC) --list-gpu-arch 2>/dev/null | grep -qx compute_$$a && { printf -- '-gencode arch=compute_%s,code=sm_%s ' $$a $$a; l=$$a; }; done; \
                [ -n "$$l" ] && printf -- '-gencode arch=compute_%s,code=compute_%s' $$l $$l)
NVCCFLAGS ?= -std=c++17 -O2 -g -Xcompiler -fPIC,-Wall,-ffp-contract=off $(NVCC_ARCHS) -Iinclude -I.

# CUTLASS's headers (PyPI nvidia-cutlass, pinned in scripts/requirements-build.txt; found
# without importing the package), for kernels/cuda_cutlass.cu, which is compiled for sm_80
# and sm_90 (and newer) of NVCC_ARCHS only: its kernels are mma.sync m16n8k32 and cp.async,
# and sm_80's code runs on sm_86 and sm_89.
CUTLASS_INC ?= $(shell python3 -c 'import importlib.util as u, os; s = u.find_spec("cutlass_library"); \
                 print(os.path.join(list(s.submodule_search_locations)[0], "source", "include"))' 2>/dev/null)
CUT_ARCHS := $(foreach g,$(filter arch=compute_80% arch=compute_90% arch=compute_1%,$(NVCC_ARCHS)),-gencode $(g))

LIBS     := $(shell pkg-config --libs openblas libcjson hdf5-serial cairo 2>/dev/null) \
            -lprotobuf-c -ljpeg -lpng -lcrypto -lm -lpthread -lstdc++ \
            -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt -fopenmp

LIB_DIRS := ir quant calib kernels runtime datasets pipeline
C_SRCS   := $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.c))
CXX_SRCS := $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.cpp))
CU_SRCS  := $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.cu))
# CU_B: where the CUDA objects are; the sanitizer build reuses the plain build's (nvcc's
# host code is not instrumented, which ASan allows).
CU_B     ?= $(B)
# ONNX: Debian's onnx.proto (libonnx-dev) turned into C by protoc-c (protobuf-c-compiler) at
# build time; ir/onnx.c parses models with it (libprotobuf-c).
ONNX_PROTO ?= $(firstword $(wildcard /usr/include/onnx/onnx.proto /usr/local/include/onnx/onnx.proto))
PROTOC_C   ?= protoc-c
ONNX_GEN   := $(B)/gen/onnx.pb-c.c
CPPFLAGS   += -I$(B)/gen
OBJS     := $(C_SRCS:%.c=$(B)/%.o) $(CXX_SRCS:%.cpp=$(B)/%.o) $(CU_SRCS:%.cu=$(CU_B)/%.cu.o) $(B)/gen/onnx.pb-c.o
LIB      := $(B)/libyq.a

CLI_SRCS := $(wildcard cli/*.c)
PROGS    := $(B)/yquant
BENCH_SRCS := $(wildcard bench/*.c)
BENCHES  := $(BENCH_SRCS:bench/%.c=$(B)/bench/%)
TEST_SRCS := $(wildcard tests/test_*.c)
TESTS    := $(TEST_SRCS:tests/%.c=$(B)/tests/%)
EXAMPLE_SRCS := $(wildcard examples/*.c)
EXAMPLES := $(EXAMPLE_SRCS:examples/%.c=$(B)/examples/%)
# The peer (Debian's darknet) is optional: its dumper is built only where it exists.
DARKNET_SO := $(wildcard /usr/lib/darknet/libdarknet.so)
PEER     := $(if $(DARKNET_SO),$(B)/tests/dn_dump) $(B)/tests/onnx_dump $(B)/tests/heads_dump

.PHONY: all test test-asan bench fuzz clean install-deps examples install uninstall
all: $(LIB) $(PROGS) $(TESTS) $(PEER) $(BENCHES) $(EXAMPLES)

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

# The CPU kernels (the fast int8 engine, kernels/cpu_int8*.c, and the exact FP32 convs of
# kernels/cpu_fp32.c) spread their loops over the cores with OpenMP (GCC's libgomp; linked
# through LIBS, statically into the GPU programs).
$(B)/kernels/cpu_int8.o $(B)/kernels/cpu_int8_%.o $(B)/kernels/cpu_fp32.o: CFLAGS += -fopenmp

$(B)/gen/onnx.pb-c.c: $(ONNX_PROTO)
	@test -n "$(ONNX_PROTO)" || { echo "error: onnx.proto not found (Debian: libonnx-dev): run scripts/install-deps.sh" >&2; exit 1; }
	@command -v $(PROTOC_C) >/dev/null || { echo "error: $(PROTOC_C) not found (Debian: protobuf-c-compiler): run scripts/install-deps.sh" >&2; exit 1; }
	@mkdir -p $(dir $@)
	$(PROTOC_C) --c_out=$(dir $@) -I$(dir $(ONNX_PROTO)) $(ONNX_PROTO)
$(B)/gen/onnx.pb-c.h: $(B)/gen/onnx.pb-c.c
# generated code: the compiler's defaults, not our warnings
$(B)/gen/onnx.pb-c.o: $(B)/gen/onnx.pb-c.c
	$(CC) $(CPPFLAGS) -std=c11 -D_POSIX_C_SOURCE=200809L $(OPT) -g -fPIC $(SAN) -c $< -o $@
$(B)/ir/onnx.o $(B)/runtime/onnx_export.o $(B)/runtime/onnx_build.o $(B)/runtime/onnx_darknet.o: $(B)/gen/onnx.pb-c.h

# the halo family (kernels/cuda_halo.cu) is mma.sync and cp.async too: the same architectures
$(CU_B)/kernels/cuda_halo.cu.o: NVCC_ARCHS := $(or $(CUT_ARCHS),$(NVCC_ARCHS))
# and the image family (kernels/cuda_img.cu): mma.sync on the uint8 image
$(CU_B)/kernels/cuda_img.cu.o: NVCC_ARCHS := $(or $(CUT_ARCHS),$(NVCC_ARCHS))
# the wgmma family (kernels/cuda_wgmma.cu) is sm_90a code (wgmma is not in sm_90's base
# set), built when NVCC_ARCHS has sm_90; elsewhere its kernels compile to traps and
# yq_wg_built() says no
comma := ,
# (its own recipe: NVCC_ARCHS given on the command line would override a target-specific one)
WG_ARCHS = $(if $(filter arch=compute_90%,$(NVCC_ARCHS)),-gencode arch=compute_90a$(comma)code=sm_90a -DYQ_WG_SM90A,$(NVCC_ARCHS))
# ptxas's reports that it serialized wgmmas (C7515) or injected a wait for them (C7517)
# fail the build: each has cost these kernels 5-15% (bench/results/int8_gpu_*_2026-12-0[56].md)
$(CU_B)/kernels/cuda_wgmma.cu.o: kernels/cuda_wgmma.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(filter-out $(NVCC_ARCHS),$(NVCCFLAGS)) $(WG_ARCHS) -Xptxas -v -MMD -MP -c $< -o $@ 2> $@.ptxas || { cat $@.ptxas >&2; exit 1; }
	@if grep -E 'C751[57]' $@.ptxas >&2; then echo "error: ptxas serialized or waited for wgmmas in $< (above)" >&2; rm -f $@; exit 1; fi
	@grep -v '^ptxas info' $@.ptxas >&2 || true
$(CU_B)/kernels/cuda_cutlass.cu.o: NVCC_ARCHS := $(or $(CUT_ARCHS),$(NVCC_ARCHS))
$(CU_B)/kernels/cuda_cutlass.cu.o: NVCCFLAGS += -isystem $(CUTLASS_INC) --expt-relaxed-constexpr
$(CU_B)/kernels/cuda_cutlass.cu.o: kernels/cuda_cutlass.cu
	@test -f "$(CUTLASS_INC)/cutlass/cutlass.h" || { echo "error: CUTLASS headers not found (PyPI nvidia-cutlass): run scripts/install-deps.sh" >&2; exit 1; }
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -MMD -MP -c $< -o $@

$(B)/%.o: %.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) -MMD -MP -c $< -o $@
$(CU_B)/%.cu.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -MMD -MP -c $< -o $@

# The int8 reference is integer code: -O3 only vectorises it, it cannot change a result.
$(B)/kernels/cpu_ref.o: OPT = -O3

$(LIB): $(OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# MPI (issue 20), optional: with Open MPI's development files (pkg-config ompi-c) the yquant
# program is linked with MPI (cli/par.c built again as par_mpi.o, with YQ_HAVE_MPI); the
# library, the tests and the GPU tools never are.  MPI=0 builds without it.
MPI ?= $(if $(shell pkg-config --exists ompi-c 2>/dev/null && echo y),1,0)
ifeq ($(MPI),1)
MPI_CFLAGS := $(patsubst -I%,-isystem %,$(shell pkg-config --cflags ompi-c))
MPI_LIBS   := $(shell pkg-config --libs ompi-c)
YQ_PAR_O   := $(B)/cli/par_mpi.o
else
YQ_PAR_O   := $(B)/cli/par.o
endif
$(B)/cli/par_mpi.o: cli/par.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(MPI_CFLAGS) $(CFLAGS) -DYQ_HAVE_MPI -MMD -MP -c $< -o $@

$(B)/yquant: $(filter-out $(B)/cli/par.o,$(CLI_SRCS:%.c=$(B)/%.o)) $(YQ_PAR_O) $(LIB)
	$(CC) $(CFLAGS) -o $@ $(filter %.o,$^) $(LIB) $(LIBS) $(MPI_LIBS)

$(B)/tests/%: $(B)/tests/%.o $(LIB)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LIBS)

# The test peer of the image decoders: OpenCV (tests/peer/opencv_decode.cpp), linked into
# tests/test_harden.c alone; yquant itself decodes with libjpeg and libpng.
PEER_CV_LIBS := $(shell pkg-config --libs opencv4 2>/dev/null) -lstdc++ -lz
$(B)/tests/test_harden: $(B)/tests/test_harden.o $(B)/tests/peer/opencv_decode.o $(LIB)
	$(CC) $(CFLAGS) -o $@ $(filter %.o,$^) $(LIB) $(LIBS) $(PEER_CV_LIBS)

$(B)/bench/%: $(B)/bench/%.o $(LIB)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LIBS)

# examples/*.c: small programs on the public API (the headers under include/) alone.
examples: $(EXAMPLES)
$(B)/examples/%: $(B)/examples/%.o $(LIB)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LIBS)

# tests/onnx_test.py's side of the ONNX comparison (onnxruntime is the other).
$(B)/tests/onnx_dump: $(B)/tests/peer/onnx_dump.o $(LIB)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LIBS)
$(B)/tests/heads_dump: $(B)/tests/peer/heads_dump.o $(LIB)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LIBS)

# The darknet peer: darknet's own library, headers shipped under /usr/lib/darknet/include.
$(B)/tests/dn_dump: tests/peer/dn_dump.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g -I/usr/lib/darknet/include -o $@ $< -L/usr/lib/darknet -ldarknet \
	    -Wl,-rpath,/usr/lib/darknet -lm -lpthread

test: all
	tests/run.sh

# The library, the CLI and every CPU test built with AddressSanitizer and UBSan (any report
# fails the run: -fno-sanitize-recover, LeakSanitizer on) into build/asan, then the C tests
# and a few CLI cases run from there (tests/run.sh with YQ_BUILD=build/asan).  The CUDA
# objects are the plain build's.  tests/lsan.supp lists leaks inside third-party libraries.
ASAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
test-asan: $(CU_SRCS:%.cu=$(B)/%.cu.o)
	$(MAKE) B=build/asan CU_B=$(B) OPT=-O1 SAN="$(ASAN_FLAGS)" MPI=0 build/asan/yquant \
	    $(TEST_SRCS:tests/%.c=build/asan/tests/%)
	YQ_BUILD=build/asan YQ_FUZZ_TIME=0 YQ_ASAN=1 tests/run.sh

bench: all
	bench/run.sh

FUZZ_TIME ?= 60
fuzz:
	$(MAKE) -f fuzz/Makefile FUZZ_TIME=$(FUZZ_TIME)

install-deps:
	scripts/install-deps.sh

# ---- install: libyq (static, and shared with a soname), the public header, pkg-config's
# yquant.pc, the yquant CLI.  `make install PREFIX=/opt/yquant` (DESTDIR for staging); a
# program then builds with `cc prog.c $$(pkg-config --cflags --libs yquant)`
# (tests/install_test.py does that against a fresh prefix).
PREFIX  ?= /usr/local
LIBDIR  ?= $(PREFIX)/lib
INCDIR  ?= $(PREFIX)/include
BINDIR  ?= $(PREFIX)/bin
VERSION := $(shell sed -n 's/^\#define YQ_VERSION "\(.*\)"/\1/p' include/yq.h)
SOMAJOR := $(firstword $(subst ., ,$(VERSION)))
SOLIB   := $(B)/libyq.so.$(VERSION)
# the public headers: every header under include/, installed flat into INCDIR
PUBLIC_HEADERS := $(wildcard include/*.h)

$(SOLIB): $(OBJS)
	$(CC) $(CFLAGS) -shared -Wl,-soname,libyq.so.$(SOMAJOR) -o $@ $(OBJS) $(LIBS)

# (the prefix is written in at install time: the .pc must name the installed paths)
$(B)/yquant.pc.in: include/yq.h Makefile
	@mkdir -p $(dir $@)
	printf '%s\n' 'prefix=@PREFIX@' 'libdir=@LIBDIR@' 'includedir=@INCDIR@' '' 'Name: yquant' \
	    'Description: INT8 quantization and calibration for YOLO-family detectors' 'Version: $(VERSION)' \
	    'Cflags: -I$${includedir}' 'Libs: -L$${libdir} -lyq' 'Libs.private: $(strip $(LIBS))' > $@

install: $(LIB) $(SOLIB) $(B)/yquant $(B)/yquant.pc.in
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCDIR) $(DESTDIR)$(BINDIR)
	install -m 644 $(PUBLIC_HEADERS) $(DESTDIR)$(INCDIR)/
	install -m 644 $(LIB) $(DESTDIR)$(LIBDIR)/libyq.a
	install -m 755 $(SOLIB) $(DESTDIR)$(LIBDIR)/libyq.so.$(VERSION)
	ln -sf libyq.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libyq.so.$(SOMAJOR)
	ln -sf libyq.so.$(SOMAJOR) $(DESTDIR)$(LIBDIR)/libyq.so
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCDIR@|$(INCDIR)|' $(B)/yquant.pc.in \
	    > $(DESTDIR)$(LIBDIR)/pkgconfig/yquant.pc
	install -m 755 $(B)/yquant $(DESTDIR)$(BINDIR)/yquant

uninstall:
	rm -f $(addprefix $(DESTDIR)$(INCDIR)/,$(notdir $(PUBLIC_HEADERS))) $(DESTDIR)$(LIBDIR)/libyq.a $(DESTDIR)$(LIBDIR)/libyq.so \
	    $(DESTDIR)$(LIBDIR)/libyq.so.$(SOMAJOR) $(DESTDIR)$(LIBDIR)/libyq.so.$(VERSION) \
	    $(DESTDIR)$(LIBDIR)/pkgconfig/yquant.pc $(DESTDIR)$(BINDIR)/yquant

clean:
	rm -rf $(B)

-include $(OBJS:.o=.d) $(CLI_SRCS:%.c=$(B)/%.d) $(TEST_SRCS:tests/%.c=$(B)/tests/%.d) $(EXAMPLE_SRCS:%.c=$(B)/%.d)

# ---- gpu-test: the GPU test alone, for a machine with a GPU but without the
# OpenCV/HDF5/cJSON development packages (the lent device machines).  It links only
# what tests/test_cuda.c needs, with OpenBLAS, OpenSSL's libcrypto and the C++/Fortran
# runtimes static, so a binary built here also runs there.  `make gpu-test`, then
# `YQ_DATA=... build/gpu/test_cuda`.  NVCC_ARCHS="-gencode arch=compute_90,code=sm_90"
# builds for one chip only (faster).
GPU_TEST_OBJS := $(patsubst %.c,$(B)/%.o,$(wildcard ir/*.c quant/*.c kernels/*.c) \
                   calib/hist.c calib/methods.c calib/compare.c $(wildcard calib/simulate.c) runtime/plan.c runtime/exec_int8.c \
                   runtime/exec_cuda.c) \
                 $(patsubst %.cu,$(B)/%.cu.o,$(wildcard kernels/*.cu)) $(B)/gen/onnx.pb-c.o
GPU_TEST_LIBS := -Wl,-Bstatic -lprotobuf-c -lopenblas -ljpeg -lpng16 -lz -lcrypto -lgfortran -lquadmath -lstdc++ -lgomp -Wl,-Bdynamic \
                 -L$(CUDA_HOME)/lib64 -lcudart_static -lm -lpthread -ldl -lrt

.PHONY: gpu-test
gpu-test: $(B)/gpu/test_cuda

$(B)/gpu/test_cuda: $(B)/tests/test_cuda.o $(GPU_TEST_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -static-libgcc -o $@ $^ $(GPU_TEST_LIBS)

# ---- cuDNN (optional): the GPU float engine, kernels/cudnn_fp.cu --------------------
# Compiled with YQ_HAVE_CUDNN when cudnn.h is found, and programs then link -lcudnn
# (--as-needed: only those that use the engine record it).  Without cuDNN the engine's
# functions return YQ_ERR_UNSUPPORTED and everything else builds as before.
CUDNN_H  := $(firstword $(wildcard $(CUDA_HOME)/include/cudnn.h /usr/include/cudnn.h /usr/include/*-linux-gnu/cudnn.h))
ifneq ($(CUDNN_H),)
$(B)/kernels/cudnn_fp.cu.o: NVCCFLAGS += -DYQ_HAVE_CUDNN
CUDNN_LIBS := -Wl,--as-needed -lcudnn -Wl,--no-as-needed
LIBS          += $(CUDNN_LIBS)
GPU_TEST_LIBS += $(CUDNN_LIBS)
endif

# ---- gpu-bench: the GPU benchmark programs for the device machine, built here -------
# One multi-call program, build/gpu/yqgpu, because each static OpenBLAS link weighs ~30 MB
# and what travels to the device is capped at 64 MiB:
#   yqgpu bench ARGS        `yquant bench` (cli/cmd_bench.c)
#   yqgpu test_cuda         tests/test_cuda.c, as build/gpu/test_cuda (make gpu-test)
#   yqgpu test_cudnn        tests/test_cudnn.c
#   yqgpu cudnn_int8 ARGS   bench/gpu/cudnn_int8.c: cuDNN's own int8 convs over a model
#   yqgpu tune ARGS         `yquant tune` (cli/cmd_tune.c): per-layer kernel tuning
#   yqgpu test_tune         tests/test_tune.c (the tuner, and runtime/latency.c's GPU latency;
#                           their GPU parts run there)
#   yqgpu test_api          tests/test_api.c (the public headers; yq_bench's cuda rows run there)
#   yqgpu ceilings          bench/gpu/ceilings.c: the card's copy bandwidth and int8 mma.sync rate
#   yqgpu yquant ARGS       the whole `yquant` CLI (cli/yquant.c: sweep, quantize, eval, detect,
#                           ...), images decoded by yquant's own decoders (libjpeg and libpng,
#                           linked statically), so that `yquant sweep` measures GPU latency
#                           there (bench/gpu/sweep_gpu.sh)
# Linked like gpu-test (static OpenBLAS, libcrypto, C++ runtime; cuDNN dynamic: the device
# has it), with HDF5, libpng and zlib static (.yqp packages; the sweep's PNG chart) and
# cJSON's shared library copied beside it (rpath $ORIGIN); cairo static (the pictures).  Everything but the mains comes
# from one archive, the library without OpenCV, so only what a command reaches is linked.
# bench/gpu/run_gpu.sh and bench/gpu/sweep_gpu.sh run it there; bench/gpu/verify_gpu.sh runs
# every GPU test (this, build/gpu/test_cuda's and build/gpu/test_session's) under one time budget.
#   make gpu-bench NVCC_ARCHS="-gencode arch=compute_90,code=sm_90"   (H200 only: faster)
GPU_BENCH_OBJS := $(GPU_TEST_OBJS) $(B)/cli/cmd_bench.o $(B)/cli/cmd_tune.o $(B)/cli/common.o \
                  $(B)/runtime/package.o $(B)/runtime/h5mem.o $(B)/runtime/h5util.o $(B)/runtime/tune.o $(B)/runtime/tune_log.o $(B)/runtime/tune_gpu.o $(B)/runtime/tune_apply.o $(B)/runtime/latency.o
GPU_BENCH_LIBS := -Wl,-Bstatic -L/usr/lib/x86_64-linux-gnu/hdf5/serial -lhdf5 -lsz -laec -lz -Wl,-Bdynamic \
                  $(GPU_TEST_LIBS)
YQGPU_MAINS    := $(B)/gpu/mc/test_cuda.o $(B)/gpu/mc/test_cudnn.o $(B)/gpu/mc/cudnn_int8.o $(B)/gpu/mc/test_tune.o \
                  $(B)/gpu/mc/test_api.o $(B)/gpu/mc/yquant.o $(B)/gpu/mc/ceilings.o
# libyq and the CLI's commands
GPU_CLI_OBJS   := $(OBJS) $(filter-out $(B)/cli/yquant.o,$(CLI_SRCS:%.c=$(B)/%.o))
# cairo (the pictures: datasets/paint.c) and what it needs, static as well: the device has
# no cairo (its labels are in whatever font fontconfig finds there)
CAIRO_STATIC   := $(filter-out -lm -lpthread -pthread,$(shell pkg-config --static --libs cairo 2>/dev/null))
GPU_CLI_LIBS   := -Wl,-Bstatic $(CAIRO_STATIC) -lpng16 -ljpeg -Wl,-Bdynamic $(GPU_BENCH_LIBS)
CJSON_SO       := $(firstword $(wildcard /usr/lib/*-linux-gnu/libcjson.so.1 /usr/lib/libcjson.so.1 /usr/lib64/libcjson.so.1))

.PHONY: gpu-bench
gpu-bench: $(B)/gpu/yqgpu

# ---- gpu-anchors: CUTLASS's own kernels timed beside yquant's (diagnostics, not in CI) ------
#   cutlass_ab    yquant's CUTLASS family against CUTLASS's stock epilogue, same tiles (sm_80+)
#   cutlass_sm90  CUTLASS 3.x's sm90 wgmma/TMA int8 conv (sm_90a code)
CUTLASS_UTIL := $(CUTLASS_INC)/../tools/util/include
.PHONY: gpu-anchors
gpu-anchors: $(B)/gpu/cutlass_ab $(B)/gpu/cutlass_sm90
$(B)/gpu/cutlass_ab: bench/gpu/cutlass_ab.cu kernels/cuda_cutlass.cu $(LIB)
	@mkdir -p $(dir $@)
	$(NVCC) -std=c++17 -O3 $(or $(CUT_ARCHS),$(NVCC_ARCHS)) -Iinclude -I. -isystem $(CUTLASS_INC) --expt-relaxed-constexpr \
	    $< -o $@ $(LIB) $(shell pkg-config --libs openblas libcjson hdf5-serial 2>/dev/null) -ljpeg -lpng -lcrypto -lm \
	    -lpthread -lcudart_static -ldl -lrt
$(B)/gpu/cutlass_sm90: bench/gpu/cutlass_sm90.cu
	@mkdir -p $(dir $@)
	$(NVCC) -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -isystem $(CUTLASS_INC) -isystem $(CUTLASS_UTIL) \
	    --expt-relaxed-constexpr $< -o $@

$(B)/gpu/mc/%.o: tests/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -Wno-missing-prototypes -Dmain=yqgpu_$* -MMD -MP -c $< -o $@
$(B)/gpu/mc/%.o: bench/gpu/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -I$(CUDA_HOME)/include $(CFLAGS) -Wno-missing-prototypes -Dmain=yqgpu_$* -MMD -MP -c $< -o $@
$(B)/gpu/mc/%.o: cli/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -Wno-missing-prototypes -Dmain=yqgpu_$* -MMD -MP -c $< -o $@

-include $(wildcard $(B)/gpu/mc/*.d $(B)/bench/gpu/*.d $(B)/tests/peer/*.d)

$(B)/gpu/libyq_cli.a: $(GPU_CLI_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# (the mains and the bench objects as before; the rest, test_tune's sessions and the
# CLI's commands, from the archive)
$(B)/gpu/yqgpu: $(B)/bench/gpu/gpu_main.o $(YQGPU_MAINS) $(GPU_BENCH_OBJS) $(B)/gpu/libyq_cli.a
	@mkdir -p $(dir $@)
	$(if $(CJSON_SO),cp -L $(CJSON_SO) $(dir $@)libcjson.so.1)
	$(CC) $(CFLAGS) -static-libgcc -o $@ $^ -L$(dir $@) -l:libcjson.so.1 -Wl,-rpath,'$$ORIGIN' \
	    $(GPU_CLI_LIBS)

# ---- gpu-test, the session: build/gpu/test_session (tests/test_session.c) for the device
# machine: the session API with the package loader (HDF5 linked statically) and yquant's
# image decoders (libjpeg and libpng, static).  Objects go through an archive so that only
# what the test reaches is linked.
#   make gpu-test, then `YQ_DATA=... build/gpu/test_session`
GPU_SESSION_OBJS := $(patsubst %.c,$(B)/%.o,$(wildcard ir/*.c quant/*.c kernels/*.c) calib/hist.c calib/methods.c \
                      calib/compare.c $(wildcard calib/simulate.c) \
                      calib/observe.c runtime/plan.c runtime/exec_int8.c runtime/exec_cuda.c runtime/package.c runtime/h5mem.c runtime/h5util.c runtime/session.c \
                      runtime/engine.c runtime/tune_apply.c runtime/gpu_post.c runtime/postproc.c runtime/detector.c datasets/image.c datasets/image_jpeg.c \
                      datasets/image_png.c datasets/fileio.c) \
                    $(patsubst %.cu,$(B)/%.cu.o,kernels/cuda_util.cu kernels/cuda_conv.cu kernels/cuda_conv_names.cu kernels/cuda_cutlass.cu kernels/cuda_mma.cu \
                      kernels/cuda_halo.cu kernels/cuda_img.cu kernels/cuda_wgmma.cu \
                      kernels/cuda_f16.cu kernels/cuda_ops.cu kernels/cuda_post.cu kernels/cuda_post_rt.cu kernels/cudnn_fp.cu) \
                    $(B)/gen/onnx.pb-c.o
GPU_SESSION_LIBS := -Wl,-Bstatic -L/usr/lib/x86_64-linux-gnu/hdf5/serial -lhdf5 -lsz -laec -lpng16 -lz -ljpeg -Wl,-Bdynamic \
                    $(GPU_TEST_LIBS)

gpu-test: $(B)/gpu/test_session

$(B)/gpu/libyq_session.a: $(GPU_SESSION_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# datasets/fileio.c reads JSON: cJSON's shared library travels beside the binary.
$(B)/gpu/test_session: $(B)/tests/test_session.o $(B)/gpu/libyq_session.a
	@mkdir -p $(dir $@)
	$(if $(CJSON_SO),cp -L $(CJSON_SO) $(dir $@)libcjson.so.1)
	$(CC) $(CFLAGS) -static-libgcc -o $@ $^ -L$(dir $@) -l:libcjson.so.1 -Wl,-rpath,'$$ORIGIN' $(GPU_SESSION_LIBS)

# ---- gpu-calib: calibration on the GPU, test and benchmark, for the device machine ----
# build/gpu/yqcal, one static multi-call program linked as gpu-test is (static OpenBLAS,
# libcrypto, C++ runtime; cuDNN dynamic), without HDF5, cJSON's shared library copied
# beside it as gpu-bench does (datasets/fileio.c reads JSON), images decoded by yquant's
# own decoders (libjpeg and libpng, static):
#   yqcal test          tests/test_calib_cuda.c (GPU statistics against the CPU's)
#   yqcal bench ARGS    bench/calib_gpu.c (calibration time, CPU engine against the GPU)
#   make gpu-calib NVCC_ARCHS="-gencode arch=compute_90,code=sm_90"
GPU_CALIB_OBJS := $(patsubst %.c,$(B)/%.o,$(wildcard ir/*.c kernels/*.c) calib/hist.c calib/methods.c \
                    calib/observe.c calib/observe_cuda.c runtime/plan.c runtime/exec_int8.c runtime/detector.c \
                    runtime/engine.c runtime/exec_cuda.c runtime/postproc.c datasets/image.c datasets/image_jpeg.c datasets/image_png.c datasets/fileio.c \
                    quant/equalize.c quant/qconfig.c quant/rewrite.c quant/table.c) \
                  $(patsubst %.cu,$(B)/%.cu.o,$(wildcard kernels/*.cu))

.PHONY: gpu-calib
gpu-calib: $(B)/gpu/yqcal

$(B)/gpu/libyq_calib.a: $(GPU_CALIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(B)/gpu/mc/calib_gpu.o: bench/calib_gpu.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -Wno-missing-prototypes -Dmain=yqgpu_calib_gpu -MMD -MP -c $< -o $@

$(B)/gpu/yqcal: $(B)/bench/gpu/calib_main.o $(B)/gpu/mc/test_calib_cuda.o $(B)/gpu/mc/calib_gpu.o $(B)/gpu/libyq_calib.a
	@mkdir -p $(dir $@)
	$(if $(CJSON_SO),cp -L $(CJSON_SO) $(dir $@)libcjson.so.1)
	$(CC) $(CFLAGS) -static-libgcc -o $@ $^ -L$(dir $@) -l:libcjson.so.1 -Wl,-rpath,'$$ORIGIN' $(GPU_TEST_LIBS)
