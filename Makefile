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
CPPFLAGS += -Iinclude -I. $(shell pkg-config --cflags libcjson hdf5-serial openblas 2>/dev/null)
CFLAGS   += -std=c11 -D_POSIX_C_SOURCE=200809L $(OPT) -g $(WARN) -fPIC -pthread
CXXFLAGS += -std=c++17 $(OPT) -g -Wall -Wextra -fPIC $(shell pkg-config --cflags opencv4)
# sm_61 (dp4a) and newer; sm_90 for the H200.  CUDA 13 dropped sm_61/70 codegen, so
# the list is whatever this nvcc accepts among those we target.
NVCC_ARCHS ?= $(shell for a in 61 70 75 80 86 89 90; do \
                $(NVCC) --list-gpu-arch 2>/dev/null | grep -qx compute_$$a && printf -- '-gencode arch=compute_%s,code=sm_%s ' $$a $$a; done)
NVCCFLAGS ?= -std=c++17 -O2 -g -Xcompiler -fPIC,-Wall $(NVCC_ARCHS) -Iinclude -I.

LIBS     := $(shell pkg-config --libs openblas libcjson hdf5-serial opencv4 2>/dev/null) \
            -lpng -lcrypto -lm -lpthread -lstdc++ \
            -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt

LIB_DIRS := ir quant calib kernels runtime datasets
C_SRCS   := $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.c))
CXX_SRCS := $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.cpp))
CU_SRCS  := $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.cu))
OBJS     := $(C_SRCS:%.c=$(B)/%.o) $(CXX_SRCS:%.cpp=$(B)/%.o) $(CU_SRCS:%.cu=$(B)/%.cu.o)
LIB      := $(B)/libyq.a

CLI_SRCS := $(wildcard cli/*.c)
PROGS    := $(B)/yquant
BENCH_SRCS := $(wildcard bench/*.c)
BENCHES  := $(BENCH_SRCS:bench/%.c=$(B)/bench/%)
TEST_SRCS := $(wildcard tests/test_*.c)
TESTS    := $(TEST_SRCS:tests/%.c=$(B)/tests/%)
# The peer (Debian's darknet) is optional: its dumper is built only where it exists.
DARKNET_SO := $(wildcard /usr/lib/darknet/libdarknet.so)
PEER     := $(if $(DARKNET_SO),$(B)/tests/dn_dump)

.PHONY: all test bench fuzz clean install-deps
all: $(LIB) $(PROGS) $(TESTS) $(PEER) $(BENCHES)

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@
$(B)/%.o: %.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) -MMD -MP -c $< -o $@
$(B)/%.cu.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -MMD -MP -c $< -o $@

# The int8 reference is integer code: -O3 only vectorises it, it cannot change a result.
$(B)/kernels/cpu_ref.o: OPT = -O3

$(LIB): $(OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(B)/yquant: $(CLI_SRCS:%.c=$(B)/%.o) $(LIB)
	$(CC) $(CFLAGS) -o $@ $(filter %.o,$^) $(LIB) $(LIBS)

$(B)/tests/%: $(B)/tests/%.o $(LIB)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LIBS)

$(B)/bench/%: $(B)/bench/%.o $(LIB)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LIBS)

# The darknet peer: darknet's own library, headers shipped under /usr/lib/darknet/include.
$(B)/tests/dn_dump: tests/peer/dn_dump.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g -I/usr/lib/darknet/include -o $@ $< -L/usr/lib/darknet -ldarknet \
	    -Wl,-rpath,/usr/lib/darknet -lm -lpthread

test: all
	tests/run.sh

bench: all
	bench/run.sh

FUZZ_TIME ?= 60
fuzz:
	$(MAKE) -f fuzz/Makefile FUZZ_TIME=$(FUZZ_TIME)

install-deps:
	scripts/install-deps.sh

clean:
	rm -rf $(B)

-include $(OBJS:.o=.d) $(CLI_SRCS:%.c=$(B)/%.d) $(TEST_SRCS:tests/%.c=$(B)/tests/%.d)

# ---- gpu-test: the GPU test alone, for a machine with a GPU but without the
# OpenCV/HDF5/cJSON development packages (the lent device machines).  It links only
# what tests/test_cuda.c needs, with OpenBLAS, OpenSSL's libcrypto and the C++/Fortran
# runtimes static, so a binary built here also runs there.  `make gpu-test`, then
# `YQ_DATA=... build/gpu/test_cuda`.  NVCC_ARCHS="-gencode arch=compute_90,code=sm_90"
# builds for one chip only (faster).
GPU_TEST_OBJS := $(patsubst %.c,$(B)/%.o,$(wildcard ir/*.c quant/*.c kernels/*.c) \
                   calib/hist.c calib/methods.c runtime/plan.c runtime/exec_int8.c runtime/exec_cuda.c) \
                 $(patsubst %.cu,$(B)/%.cu.o,$(wildcard kernels/*.cu))
GPU_TEST_LIBS := -Wl,-Bstatic -lopenblas -lcrypto -lgfortran -lquadmath -lstdc++ -Wl,-Bdynamic \
                 -L$(CUDA_HOME)/lib64 -lcudart_static -lm -lpthread -ldl -lrt

.PHONY: gpu-test
gpu-test: $(B)/gpu/test_cuda

$(B)/gpu/test_cuda: $(B)/tests/test_cuda.o $(GPU_TEST_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -static-libgcc -o $@ $^ $(GPU_TEST_LIBS)
