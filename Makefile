#Makefile-- builds every c4 part into $(BUILD)(default build /).
#
#make libraries and programs
#make test ASan + UBSan build, then unit, conformance and fuzz - smoke suites
#make bench c4perf against iperf3 and a plain TCP ping - pong(needs root for the netns half)
#make demo the README's first command
#make drill(root) the demo over the namespace fabric with real faults, detection checked
#make multinode - check MNC_ARGS = "--hosts H1,H2" c4 across a real cluster's nodes
#make install PREFIX = / usr / local
#make deps installs the Debian packages the build and the tests need
#SAN = 1 builds with - fsanitize = address, undefined into build / san

VERSION   := 0.1.0
PREFIX    ?= /usr/local
SAN       ?= 0
ifeq ($(SAN),1)
BUILD     ?= build/san
SANFLAGS  := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else
BUILD     ?= build
SANFLAGS  :=
endif

CC        ?= cc
PKGS      := jansson libcrypto
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
#c4mon's exporters only: the plugin never links them.
MON_PKGS  := libmicrohttpd cairo
MON_CFLAGS := $(shell pkg-config --cflags $(MON_PKGS) 2>/dev/null)
MON_LIBS  := $(shell pkg-config --libs $(MON_PKGS) 2>/dev/null)
#The CPU kernels' BLAS: only c4train and its tests link it.
BLAS_CFLAGS := $(shell pkg-config --cflags openblas 2>/dev/null)
BLAS_LIBS   := $(shell pkg-config --libs openblas 2>/dev/null)
#c4cap's capture library: c4cap, its unit test and nothing else link it.
CAP_CFLAGS := $(shell pkg-config --cflags libpcap 2>/dev/null)
CAP_LIBS   := $(shell pkg-config --libs libpcap 2>/dev/null)
#The verbs transport compiles against rdma - core's headers; it dlopens libibverbs at run time.
IB_CFLAGS  := $(shell pkg-config --cflags libibverbs 2>/dev/null)
CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS   := $(shell pkg-config --libs check 2>/dev/null)

OPT       ?= -O2 -g
CFLAGS    += -std=c11 -D_GNU_SOURCE $(OPT) -Wall -Wextra -Werror -fPIC -pthread \
             -fvisibility=hidden -MMD -MP $(INC) $(PKG_CFLAGS) $(MON_CFLAGS) $(SANFLAGS) \
             -DC4_VERSION=\"$(VERSION)\"
LDFLAGS   += -pthread $(SANFLAGS)

#Include paths per folder : each part sees the folders it may use and no others, so an include
#that points up the tree(docs / architecture.md) fails to compile.The longest matching pattern
#wins.include / c4 / holds NCCL's ABI headers, which every part may use.
INC_BASE  := -Icommon -Iinclude/c4
PLUGIN_DIRS := api core sock ib wrap prof
INC_PLUGIN := $(addprefix -Inccl_net_plugin/,$(PLUGIN_DIRS))
INC_ALL   := $(INC_BASE) $(INC_PLUGIN) -Inccl_net_plugin/preload -Imonitor -Itrainer -Ikernels \
             -Itraffic_planner
INC       := $(INC_ALL)
$(BUILD)/obj/common/%.o: INC := $(INC_BASE)
#Inside the plugin : a transport sees the core and itself; the API layer sees the core only(it
#reaches a transport through the backend table, core / backend.h).
$(BUILD)/obj/nccl_net_plugin/%.o: INC := $(INC_BASE) -Inccl_net_plugin/core
$(BUILD)/obj/nccl_net_plugin/sock/%.o: INC := $(INC_BASE) -Inccl_net_plugin/core -Inccl_net_plugin/sock
$(BUILD)/obj/nccl_net_plugin/ib/%.o: INC := $(INC_BASE) -Inccl_net_plugin/core -Inccl_net_plugin/ib
$(BUILD)/obj/nccl_net_plugin/wrap/%.o: INC := $(INC_BASE) -Inccl_net_plugin/core -Inccl_net_plugin/wrap
$(BUILD)/obj/nccl_net_plugin/prof/%.o: INC := $(INC_BASE) -Inccl_net_plugin/prof
$(BUILD)/obj/nccl_net_plugin/preload/%.o: INC := $(INC_BASE) -Inccl_net_plugin/preload
$(BUILD)/obj/monitor/%.o: INC := $(INC_BASE) -Imonitor
$(BUILD)/obj/trainer/%.o: INC := $(INC_BASE) -Itrainer -Ikernels
$(BUILD)/obj/kernels/%.o: INC := -Ikernels
$(BUILD)/obj/traffic_planner/%.o: INC := $(INC_BASE) -Itraffic_planner
$(BUILD)/obj/tools/%.o: INC := $(INC_BASE)
$(BUILD)/obj/tools/bench/%.o: INC := $(INC_BASE) -Itraffic_planner
#The listener flood drives the socket transport's listeners directly.
$(BUILD)/obj/tools/bench/listen_flood.o: INC := $(INC_BASE) $(INC_PLUGIN)
$(BUILD)/obj/tools/bench/mon_flood.o: INC := $(INC_BASE) -Imonitor
$(BUILD)/obj/tools/gpu_check/%.o: INC := $(INC_BASE) -Ikernels
LDLIBS    += $(PKG_LIBS) -ldl -lm

COMMON_SRC := $(wildcard common/*.c)
NET_SRC    := $(wildcard $(addsuffix /*.c,$(addprefix nccl_net_plugin/,$(PLUGIN_DIRS))))
PRELOAD_SRC := $(wildcard nccl_net_plugin/preload/*.c)
PERF_SRC   := $(wildcard tools/c4perf/*.c)
CAP_SRC    := $(wildcard tools/c4cap/*.c)
PLAN_SRC   := $(wildcard traffic_planner/*.c)
MON_SRC    := $(wildcard monitor/*.c)
SCEN_SRC   := $(wildcard tools/scenario/*.c)
TRAIN_SRC  := $(wildcard trainer/*.c)
KERN_SRC   := $(wildcard kernels/cpu_*.c)
CUDA_SRC   := $(wildcard kernels/cuda_*.cu)
UNIT_SRC   := $(wildcard tests/unit/test_*.c)
CONF_SRC   := $(wildcard tests/conformance/*.c)
FUZZ_SRC   := $(wildcard tests/fuzz/fuzz_*.c)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))

LIBCOMMON  := $(BUILD)/lib/libc4common.a
LIBNETCORE := $(BUILD)/lib/libc4netcore.a
PLUGIN     := $(BUILD)/lib/libnccl-net-c4.so
PROFLINK   := $(BUILD)/lib/libnccl-profiler-c4.so
PRELOAD    := $(BUILD)/lib/libc4-preload.so
C4PERF     := $(BUILD)/bin/c4perf
C4MON      := $(BUILD)/bin/c4mon
LIBMON     := $(BUILD)/lib/libc4mon.a
PLANBENCH  := $(BUILD)/bin/c4-plan-bench
LIBTRAIN   := $(BUILD)/lib/libc4train.a
LIBKERN    := $(BUILD)/lib/libc4k.a
LIBCAP     := $(BUILD)/lib/libc4cap.a
C4CAP      := $(BUILD)/bin/c4cap
LIBPLAN    := $(BUILD)/lib/libc4plan.a
C4PLAN     := $(BUILD)/bin/c4plan
# The CUDA kernels: built whenever nvcc is there (CI has it); they never run on a machine
# without a GPU.
NVCC       ?= $(firstword $(wildcard /usr/local/cuda/bin/nvcc) $(shell command -v nvcc 2>/dev/null))
CUDA_HOME  ?= /usr/local/cuda
LIBKCUDA   := $(if $(NVCC),$(if $(CUDA_SRC),$(BUILD)/lib/libc4k-cuda.so $(BUILD)/bin/c4k-gpu-check))
C4SCEN     := $(BUILD)/bin/c4scen
C4TRAIN    := $(BUILD)/bin/c4train
TCPPINGPONG := $(BUILD)/bin/c4-tcp-pingpong
RINGBENCH  := $(BUILD)/bin/c4-ring-bench
MONLOAD    := $(BUILD)/bin/c4-mon-load
LISTENFLOOD := $(BUILD)/bin/c4-listen-flood
MONFLOOD   := $(BUILD)/bin/c4-mon-flood
SGEMMRATE  := $(BUILD)/bin/c4-sgemm-rate
UNIT_BINS  := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
CONF_BIN   := $(BUILD)/tests/conformance
FUZZ_SMOKE := $(patsubst tests/fuzz/%.c,$(BUILD)/tests/%_smoke,$(FUZZ_SRC))

.PHONY: all test unit-bins fuzz bench demo install deps clean format format-check
all: $(PLUGIN) $(PROFLINK) $(PRELOAD) $(C4PERF) $(C4MON) $(C4SCEN) $(C4TRAIN) $(SGEMMRATE) $(LIBTRAIN) $(LIBKERN) $(LIBKCUDA) $(TCPPINGPONG) $(RINGBENCH) $(MONLOAD) $(LISTENFLOOD) $(MONFLOOD) $(C4PLAN) $(LIBPLAN) $(PLANBENCH) $(C4CAP)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(LIBCOMMON): $(call obj,$(COMMON_SRC))
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^

# Every plugin object except the exported ABI tables, for the unit tests to link directly.
API_SRC    := $(wildcard nccl_net_plugin/*/*_plugin_api.c)
$(LIBNETCORE): $(call obj,$(filter-out $(API_SRC),$(NET_SRC)))
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^

$(BUILD)/obj/nccl_net_plugin/ib/%.o $(BUILD)/obj/tests/unit/test_ib.o \
$(BUILD)/obj/tests/doubles/fake_ibverbs.o: CFLAGS += $(IB_CFLAGS)
$(PLUGIN): $(call obj,$(API_SRC)) $(LIBNETCORE) $(LIBCOMMON)
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,--no-undefined -Wl,-soname,libnccl-net-c4.so $(LDFLAGS) -o $@ $^ $(LDLIBS)

#The LD_PRELOAD shim : its own library, so that loading the net plugin never interposes on NCCL.
$(PRELOAD): $(call obj,$(PRELOAD_SRC)) $(LIBCOMMON)
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,--no-undefined -Wl,-soname,libc4-preload.so $(LDFLAGS) -o $@ $^ $(LDLIBS)

#One.so is both plugins : NCCL_PROFILER_PLUGIN = c4 finds this name.
$(PROFLINK): $(PLUGIN)
	ln -sf libnccl-net-c4.so $@

$(C4PERF): $(call obj,$(PERF_SRC)) $(LIBCOMMON)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

#Everything of c4mon but its command line, for the unit tests to link directly.
MON_CLI_SRC := monitor/mon_main.c $(wildcard monitor/mon_cmd_*.c)
$(LIBMON): $(call obj,$(filter-out $(MON_CLI_SRC),$(MON_SRC)))
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^

$(C4MON): $(call obj,$(MON_CLI_SRC)) $(LIBMON) $(LIBCOMMON)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(MON_LIBS) $(LDLIBS)

#The planner's benchmark: 1,024 hosts x 8 ports, planned against the lower bound.
$(PLANBENCH): $(call obj,tools/bench/plan_bench.c) $(LIBPLAN) $(LIBCOMMON)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

#The trainer's library (everything of c4train but its main), for c4train and the unit tests.
$(LIBTRAIN): $(call obj,$(filter-out trainer/train_main.c,$(TRAIN_SRC)))
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^

#The CPU kernels(OpenBLAS for every matmul).
$(BUILD)/obj/kernels/%.o: CFLAGS += $(BLAS_CFLAGS)
$(LIBKERN): $(call obj,$(KERN_SRC))
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^

#The CUDA kernels, one shared object that c4train dlopens for --device cuda.Host code is
#compiled without the sanitizers(nvcc's host compiler is not given them).
#Machine code for Turing(sm_75, the oldest CUDA 13 supports) through Blackwell, plus
#compute_75 PTX that the driver compiles for any newer GPU.
NVCC_ARCH ?= 75 80 86 89 90 100 120
NVCCFLAGS ?= -O2 -g -std=c++20 -Xcompiler -fPIC,-fvisibility=hidden,-Wall,-Wextra -Ikernels \
             $(foreach a,$(NVCC_ARCH),-gencode arch=compute_$(a),code=sm_$(a)) \
             -gencode arch=compute_75,code=compute_75
$(BUILD)/obj/kernels/%.cu.o: kernels/%.cu kernels/c4k.h kernels/cuda_common.cuh
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -c $< -o $@
$(BUILD)/lib/libc4k-cuda.so: $(patsubst kernels/%.cu,$(BUILD)/obj/kernels/%.cu.o,$(CUDA_SRC))
	@mkdir -p $(dir $@)
	$(NVCC) -shared -o $@ $^ -L$(CUDA_HOME)/lib64 -lcublas -lcudart -Xlinker -rpath,$(CUDA_HOME)/lib64

#c4k - gpu - check compares every CUDA op with the CPU op on the same inputs;                      \
    gpu - check then trains
#on the GPUs through NCCL with c4's plugins (tools/gpu_check/gpu_check.sh). It builds anywhere
#but needs a GPU to run; without one it says so and exits 2.
.PHONY: gpu-check
$(BUILD)/bin/c4k-gpu-check: $(call obj,tools/gpu_check/c4k_gpu_check.c) $(LIBKERN)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(BLAS_LIBS) $(LDLIBS)
gpu-check: all
	bash tools/gpu_check/gpu_check.sh $(BUILD)

#The traffic planner and the multipath weights on a namespace leaf - spine fabric : plain ECMP
#against a static plan against dynamic weights, healthy and with a spine link degraded(root).
.PHONY: bench-fabric
bench-fabric: all
	bash tools/bench/fabric_bench.sh $(BUILD)

#ib - check compares c4 's verbs transport with ib_write_bw (perftest) and NCCL' s own IB transport
#between two RDMA hosts(tools / ib_check / ib_check.sh).Without an RDMA device it says so, exit 2.
.PHONY: ib-check
ib-check: all
	bash tools/ib_check/ib_check.sh $(BUILD)

$(C4TRAIN): $(call obj,trainer/train_main.c) $(LIBTRAIN) $(LIBKERN) $(LIBCOMMON)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(BLAS_LIBS) $(LDLIBS)

$(C4SCEN): $(call obj,$(SCEN_SRC)) $(LIBCOMMON)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(TCPPINGPONG): $(call obj,tools/bench/tcp_pingpong.c) $(LIBCOMMON)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(MONLOAD): $(call obj,tools/bench/mon_load.c) $(LIBCOMMON)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

#The listener flood : strangers ' connections against the socket transport' s listeners.
$(LISTENFLOOD): $(call obj,tools/bench/listen_flood.c) $(LIBNETCORE) $(LIBCOMMON)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

#Unauthenticated connections against c4mon while a rank streams(its memory, its status).
$(MONFLOOD): $(call obj,tools/bench/mon_flood.c) $(LIBMON) $(LIBCOMMON)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(MON_LIBS) $(LDLIBS)

$(BUILD)/obj/tools/bench/sgemm_rate.o: CFLAGS += $(BLAS_CFLAGS)
$(SGEMMRATE): $(call obj,tools/bench/sgemm_rate.c)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(BLAS_LIBS) $(LDLIBS)

$(RINGBENCH): $(call obj,tools/bench/ring_bench.c) $(LIBCOMMON)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

#Everything of c4cap but its main : the unit tests and the fuzz smoke drivers link its parser.
$(BUILD)/obj/tools/c4cap/%.o: CFLAGS += $(CAP_CFLAGS)
$(LIBCAP): $(call obj,$(filter-out tools/c4cap/main.c,$(CAP_SRC)))
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^

$(C4CAP): $(call obj,tools/c4cap/main.c) $(LIBCAP) $(LIBCOMMON)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(CAP_LIBS) $(LDLIBS)

#The traffic planner : everything of c4plan but its main, for c4plan, the tools and the unit tests.
$(LIBPLAN): $(call obj,$(filter-out traffic_planner/main.c,$(PLAN_SRC)))
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^

$(C4PLAN): $(call obj,traffic_planner/main.c) $(LIBPLAN) $(LIBCOMMON)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/test_%: $(BUILD)/obj/tests/unit/test_%.o $(LIBTRAIN) $(LIBKERN) $(LIBMON) $(LIBPLAN) $(LIBNETCORE) $(LIBCAP) $(LIBCOMMON)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(MON_LIBS) $(BLAS_LIBS) $(CAP_LIBS) $(LDLIBS)

$(BUILD)/obj/tests/unit/%.o: tests/unit/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(CHECK_CFLAGS) -c $< -o $@

$(CONF_BIN): $(call obj,$(CONF_SRC)) $(LIBCOMMON)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS)

$(BUILD)/obj/tests/conformance/%.o: tests/conformance/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(CHECK_CFLAGS) -c $< -o $@

#Fuzz targets run two ways : a smoke driver(random and mutated inputs, in every `make test`)
#and, with clang, libFuzzer(`make fuzz`).
$(BUILD)/tests/%_smoke: $(BUILD)/obj/tests/fuzz/%.o $(BUILD)/obj/tests/fuzz/smoke_driver.o $(LIBTRAIN) $(LIBNETCORE) $(LIBCAP) $(LIBPLAN) $(LIBMON) $(LIBCOMMON)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(MON_LIBS) $(LDLIBS)

#The pkg - config file names the prefix it is installed under, so it is written at install time.
#libc4common.a is static : its dependencies are in Requires and Libs, not the.private fields, so
#that `pkg - config-- libs c4` alone links a program(no-- static needed).
define C4_PC
prefix=$(PREFIX)
libdir=$${prefix}/lib
includedir=$${prefix}/include/c4

Name: c4
Description: c4 NCCL net plugin, telemetry ring and host collectives
Version: $(VERSION)
Requires: jansson libcrypto
Libs: -L$${libdir} -lc4common -ldl -lm -pthread
Cflags: -I$${includedir}
endef
export C4_PC

#The shim's tests: test doubles for what needs a GPU, and a driver against the real libnccl.so.
REAL_NCCL_DIR ?= /usr/local/cuda/lib64
SHIM_TESTS := $(BUILD)/tests/libc4-test-double-nccl.so $(BUILD)/tests/libc4-test-double-cudart.so \
              $(BUILD)/tests/fake_nccl_driver $(BUILD)/tests/fake_nccl_threads \
              $(if $(wildcard $(REAL_NCCL_DIR)/libnccl.so),$(BUILD)/tests/real_nccl_driver)

$(BUILD)/obj/tests/doubles/%.o: CFLAGS += -fvisibility=default
$(BUILD)/tests/libc4-test-double-%.so: $(BUILD)/obj/tests/doubles/fake_%.o $(LIBCOMMON)
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/fake_nccl_%: $(BUILD)/obj/tests/preload/fake_nccl_%.o $(BUILD)/tests/libc4-test-double-nccl.so
	$(CC) $(LDFLAGS) -o $@ $< -L$(BUILD)/tests -lc4-test-double-nccl -Wl,-rpath,'$$ORIGIN' $(LDLIBS)

$(BUILD)/tests/real_nccl_driver: $(BUILD)/obj/tests/preload/real_nccl_driver.o
	$(CC) $(LDFLAGS) -o $@ $< -L$(REAL_NCCL_DIR) -lnccl -Wl,-rpath,$(REAL_NCCL_DIR) $(LDLIBS)

test: 
	$(MAKE) SAN=1 all unit-bins
	bash tests/run.sh build/san

#Wrap mode's tests: vendor plugins that export only ncclNetPlugin_v8 or _v10 (test doubles).
WRAP_TESTS := $(BUILD)/tests/libc4-test-double-netv8.so $(BUILD)/tests/libc4-test-double-netv10.so

unit-bins: $(UNIT_BINS) $(if $(CONF_SRC),$(CONF_BIN)) $(FUZZ_SMOKE) $(SHIM_TESTS) $(BUILD)/tests/libc4-test-double-ibverbs.so $(WRAP_TESTS)

fuzz:
	bash tests/fuzz/run_libfuzzer.sh

bench: all
	bash tools/bench/run.sh $(BUILD)

demo: all
	bash tools/demo.sh $(BUILD)

#make drill(root) : the demo's job over the namespace fabric with real faults, a table at the end
#(tools / drill / drill.sh).Not root : it says so and exits 2.
.PHONY: drill
drill: all
	bash tools/drill/drill.sh $(BUILD)

#make multinode - check : c4 across the nodes of a real cluster(mpirun or srun) against iperf3 and
#NCCL's socket transport, c4mon on the side (tools/multinode_check/multinode_check.sh; options
#in MNC_ARGS).Without a cluster it says what is missing and exits 2.
.PHONY: multinode-check
multinode-check: all
	bash tools/multinode_check/multinode_check.sh $(MNC_ARGS) $(BUILD)

#make install : the plugin(and its profiler link), the preload shim, the CUDA kernels when built,
#the programs, libc4common.a with its headers and c4.pc, man pages written from the programs'
#-- help(help2man), and a systemd unit for `c4mon serve` (enable it yourself).
MANDIR    ?= $(PREFIX)/share/man
UNITDIR   ?= $(PREFIX)/lib/systemd/system
install: all
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig \
	  $(DESTDIR)$(PREFIX)/include/c4 $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(UNITDIR)
	install -m 755 $(PLUGIN) $(DESTDIR)$(PREFIX)/lib/
	ln -sf libnccl-net-c4.so $(DESTDIR)$(PREFIX)/lib/libnccl-profiler-c4.so
	install -m 755 $(PRELOAD) $(filter %.so,$(LIBKCUDA)) $(DESTDIR)$(PREFIX)/lib/
	install -m 644 $(LIBCOMMON) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(C4PERF) $(C4MON) $(C4SCEN) $(C4TRAIN) $(C4PLAN) $(C4CAP) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 common/*.h include/c4/*.h $(DESTDIR)$(PREFIX)/include/c4/
	printf '%s\n' "$$C4_PC" > $(DESTDIR)$(PREFIX)/lib/pkgconfig/c4.pc
	bash tools/install/man.sh $(BUILD)/bin $(BUILD)/man
	install -m 644 $(BUILD)/man/man1/*.1 $(DESTDIR)$(MANDIR)/man1/
	sed 's|@PREFIX@|$(PREFIX)|g' tools/install/c4mon.service.in > $(DESTDIR)$(UNITDIR)/c4mon.service

deps:
	bash .ci/deps.sh

format-check:
	clang-format --dry-run --Werror $$(git ls-files --cached --others --exclude-standard '*.c' '*.h')

format:
	clang-format -i $$(git ls-files --cached --others --exclude-standard '*.c' '*.h')

clean:
	rm -rf build

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
.SECONDARY:
