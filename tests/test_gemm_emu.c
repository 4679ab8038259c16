/*
 * tests/test_gemm_emu.c — kiln's wgmma GEMM kernel (src/cuda/gemm_wgmma_kernel.cuh) on a host
 * emulator of its PTX (tests/gemm_emu.h), so that the kernel's logic is checked on every
 * machine, GPU or not: the generated source of each structure is compiled as C++ (with
 * $CXX, else c++) into a shared object, and launches described by
 * kiln__cuda_gemm_wgmma_prepare (the library's own host code: tile rule, split count,
 * tensor maps, argument words) run on it against an f64 reference of the same rounded
 * inputs, with a poisoned C. Cases: the four transposes, ragged M / N / K, 128- and
 * 256-wide tiles, more work items than "SMs" (the persistent loop, the stage ring wrapping
 * across items), batches with a broadcast operand, alpha / bias / ReLU / beta, stochastic
 * rounding, split-K with a short last split, the TMA-store epilogue (KILN_WGMMA_STORE=
 * tma) on the same shapes, forced tile widths and split counts, and f32 inputs read as
 * tf32 (K-major A and B); then random cases (KILN_EMU_FUZZ of them, 40 unless set), every
 * plan choice the tile rule's on the H100's rule and the H200's (fast_dram), in the regions
 * of shapes where the rule has choices. The FFMA kernel (src/cuda/gemm_ffma.c) and the
 * mma.sync kernel (src/cuda/gemm_mma.c, its ldmatrix / mma.sync / cp.async emulated in
 * tests/mma_emu_ptx.h) run on the same emulator and cases of their own. KILN_EMU_PART=i/n runs
 * a part of the cases (see part_count), for visits that run the parts at once.
 * The generators and launch descriptions are built into every libkiln (CUDA or not), so this
 * runs on machines without the toolkit too (CI). Skipped (exit 77) where no C++ compiler
 * answers and under the sanitizers (the coroutines switch stacks).
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "core/numeric.h"
#include "cuda/gemm_plan.h"

#include "gemm_generators.h"

#pragma weak kiln__cuda_gemm_wgmma_auto
#pragma weak kiln__cuda_gemm_wgmma_unsplit

#ifndef KILN_SOURCE_DIR
#define KILN_SOURCE_DIR "."
#endif

static uint64_t rng;
static char tmpdir[64];
static const char *cxx;

typedef int (*emu_launch_fn)(const unsigned long long *, int, const unsigned long long *, unsigned, unsigned,
                             unsigned, unsigned, unsigned, char *, size_t);

/* ---- the emulated kernel of one structure -------------------------------------------------- */

/* s with the first occurrence of `from`..`to` (both included) replaced by `with` (malloc'd). */
static char *cut(char *s, const char *from, const char *to, const char *with)
{
    char *a = strstr(s, from);
    char *b = a ? strstr(a, to) : NULL;
    if (!a || !b) {
        fprintf(stderr, "  source has no '%s' ... '%s'\n", from, to);
        free(s);
        return NULL;
    }
    b += strlen(to);
    size_t n = (size_t)(a - s) + strlen(with) + strlen(b) + 1;
    char *r = malloc(n);
    snprintf(r, n, "%.*s%s%s", (int)(a - s), s, with, b);
    free(s);
    return r;
}

static struct {
    char key[64];
    unsigned long long src_hash; /* of the generated source: the key need not name every structure bit */
    void *so;
    emu_launch_fn fn;
} built[512];
static int nbuilt;

/* Transforms (wgmma: the PTX blocks become their emulations, the dynamic shared memory the
 * emulator's), compiles and loads the emulated kernel of a generated source (malloc'd,
 * freed here), under key and the source's hash (a kernel is built again wherever its source
 * differs: the key names only some of the structure, not EDGE or STAGES). The CUDA prelude
 * goes: gemm_emu.h has the host spellings. */
enum { K_WGMMA, K_FFMA, K_MMA };
static const char *kernel_name[3] = {"kiln_gemm_wgmma", "kiln_gemm_ffma", "kiln_gemm_mma"};

static emu_launch_fn kernel_for(const char *key, char *src, int kind)
{
    unsigned long long h = 1469598103934665603ull;
    for (const char *q = src ? src : ""; *q; q++) h = (h ^ (unsigned char)*q) * 1099511628211ull;
    for (int i = 0; i < nbuilt; i++)
        if (strcmp(built[i].key, key) == 0 && built[i].src_hash == h) {
            free(src);
            return built[i].fn;
        }
    if (nbuilt == (int)(sizeof built / sizeof built[0]) || !src) {
        if (src) fprintf(stderr, "  more than %d distinct emulated kernels: raise built[]\n", nbuilt);
        free(src);
        return NULL;
    }
    char marker[64];
    snprintf(marker, sizeof marker, "/* ---- %s", kernel_name[kind]);
    char *body = strstr(src, marker);
    if (!body) {
        free(src);
        return NULL;
    }
    char *s = strdup(body);
    free(src);
    if (kind == K_WGMMA) {
        s = s ? cut(s, "/* kg: generated wgmma */", "/* kg: end of generated wgmma */", "") : NULL;
        s = s ? cut(s, "/* kg: PTX wrappers */", "/* kg: end of PTX wrappers */", "#include \"wgmma_emu_ptx.h\"\n") : NULL;
        s = s ? cut(s, "extern __shared__ unsigned char kg_dyn[];", "kg_dyn[];", "unsigned char *kg_dyn = emu.smem;") : NULL;
    } else if (kind == K_MMA) {
        s = s ? cut(s, "/* kg: PTX wrappers */", "/* kg: end of PTX wrappers */", "#include \"mma_emu_ptx.h\"\n") : NULL;
    }
    if (!s) return NULL;
    char cc[160], so[160], cmd[1024];
    snprintf(cc, sizeof cc, "%s/k%d.cc", tmpdir, nbuilt);
    snprintf(so, sizeof so, "%s/k%d.so", tmpdir, nbuilt);
    FILE *f = fopen(cc, "w");
    if (!f) {
        free(s);
        return NULL;
    }
    fprintf(f, "#include \"gemm_emu.h\"\n%s\n#define EMU_KERNEL %s\n%s#include \"gemm_emu_launch.h\"\n", s,
            kernel_name[kind], kind == K_WGMMA ? "#define EMU_TMAPS 1\n" : "");
    fclose(f);
    free(s);
    snprintf(cmd, sizeof cmd, "%s -std=c++17 -O1 -w -fPIC -shared -I%s/tests -I%s/src -o %s %s 2>%s/k%d.log", cxx,
             KILN_SOURCE_DIR, KILN_SOURCE_DIR, so, cc, tmpdir, nbuilt);
    if (system(cmd) != 0) {
        fprintf(stderr, "  compiling the emulated kernel failed: %s (see %s/k%d.log)\n", cmd, tmpdir, nbuilt);
        return NULL;
    }
    void *so_handle = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    emu_launch_fn fn = so_handle ? (emu_launch_fn)dlsym(so_handle, "emu_launch") : NULL;
    if (!fn) {
        fprintf(stderr, "  loading %s failed: %s\n", so, dlerror());
        return NULL;
    }
    snprintf(built[nbuilt].key, sizeof built[nbuilt].key, "%s", key);
    built[nbuilt].src_hash = h;
    built[nbuilt].so = so_handle;
    built[nbuilt].fn = fn;
    nbuilt++;
    return fn;
}

/* ---- cases ------------------------------------------------------------------------------ */

typedef struct ecase {
    int dt;             /* 0 f16, 1 bf16, 2 f32 (tf32 in the tensor cores) */
    int64_t M, N, K, nb;
    int ta, tb;         /* A stored (K, M), B stored (N, K) */
    int a_bcast, b_bcast; /* the operand is shared by every batch (batch stride 0) */
    int64_t pad;        /* elements past the 8-multiple every row of A, B and C is rounded up to */
    double alpha, beta;
    int bias, relu, sr;
    int sms;            /* the "device": SMs for the tile rule and the persistent grid */
    int tma_store;
    int bn, splits;     /* overrides of the tile rule (0 = the rule's) */
    int kernel;         /* K_WGMMA, K_FFMA (f32) or K_MMA (f16 / bf16, any strides) */
    int pp;             /* wgmma: ping-pong (KILN_WGMMA_SCHED=pingpong; 0 = =coop), or with
                         * sched_rule the schedule the rule must pick */
    int sched_rule;     /* wgmma: the rule's schedule (KILN_WGMMA_SCHED unset), checked to be pp */
    int cbufs;          /* wgmma: C staging buffers per consumer (KILN_WGMMA_CBUFS; 0 = the rule's) */
    int split_sum;      /* wgmma split-K: 0 the rule's, 1 a cluster, 2 the workspace (the last block
                         * sums), 3 slices (1 and 3 checked they apply) */
    int same_bits;      /* the inputs of the case before, and C bit for bit as it came out there */
    int ffma;           /* FFMA structure (0 = the default): bit 0 BK 16 (else 8), bit 1 one block
                         * per SM (else 2), bit 2 warps of 4 x 8 threads (else 2 x 16); plus 8:
                         * the bits say all three; plus 16: 128 x 256 tiles (checked: one block
                         * per SM, BK 8 whatever the bits say); plus 32: the FFMA block row by
                         * row (KILN_FFMA_ORDER=rows, else the default's columns); plus 64: the
                         * barrier after the last k step (KILN_FFMA_EARLY=0); plus 128: no
                         * pointer walk (KILN_FFMA_WALK=0); plus 256: no slice sums
                         * (KILN_FFMA_SLICES=0: the last block sums); plus 512: checked that the
                         * rule sums in slices; plus 1024: checked that edge tiles walk */
    int exact;          /* inputs whose f32 sums are exact (A in eighths up to 1, B in 1024ths with
                         * f16's or bf16's 11 or 8 significant bits, the bias in 1024ths; beta 0,
                         * alpha a power of two): every output's bits are the rounding of the f64
                         * value, stochastic rounding with kiln_gemm_sr_bits of its place */
    int mcast;          /* wgmma: clusters of two sharing B by TMA multicast: 0 the rule's, 1 off,
                         * 2 on where it applies (checked it does) */
    int mc_pairs;       /* wgmma multicast: clusters the "device" runs at once (0 = sms / 2) */
    int want_bn;        /* wgmma: the tile width the rule must pick (0 = not checked) */
    int kpair;          /* wgmma 64-row tiles: 0 the rule's, 1 off, 2 k pairs (alternate k slices
                         * per consumer), 3 one consumer (checked it is) */
    int group_m;        /* wgmma: tile rows per group of the tile order (0 = the rule's) */
    int want_group;     /* wgmma: the rule's group where group_m is 0 (0 = 8; at most the tile rows) */
    int want_grid;      /* wgmma: the persistent blocks the rule must launch (0 = not checked) */
    int stages;         /* wgmma: the ring's most stages (0 = the rule's; KILN_WGMMA_STAGES) */
    int zero_rows;      /* rows m % 5 == 1 of A all zeros (-0 where m % 10 == 6): C's rows there are
                         * the bias or zeros, as a dead unit's row of a weight gradient */
    int bhint;          /* wgmma: B's loads with an evict_first L2 policy: 0 the rule's, 1 off, 2 on
                         * (checked it is, unless multicast) */
    int early_sr;       /* wgmma: stochastic rounding's words at the item's start: 0 the rule's, 1 off,
                         * 2 on (checked it is: the case must be one where it applies) */
    int bias_odd;       /* the bias holds +inf at column 5, NaN at column 70 and -inf at column N - 3:
                         * their columns of C inf or NaN (or +0: -inf under ReLU), the others as usual */
    int fast_dram;      /* wgmma: the rule for a device whose DRAM peaks at 4 TB/s or more (the H200) */
    int want_splits;    /* wgmma: the k splits the rule must pick (0 = not checked) */
    int fuzz;           /* a random case (fuzz_cases): the schedule the rule's too, not checked */
    int stats;          /* the output statistics in the epilogue (kiln_gemm_desc.stats): the largest
                         * finite magnitude and the non-finite count of C from the kernel's words, checked
                         * against C as it came out */
} ecase;

/* the last wgmma launch's plan (the random cases' tally of what the rule picked) */
static kiln_gemm_wgmma_launch last_wgmma;

/* the context seed of every launch (both halves of Philox's key nonzero) */
#define EMU_SEED 0x9E3779B97F4A7C15ull

/* the case before: its input stream and its C (same_bits) */
static uint64_t prev_rng;
static void *prev_c;
static size_t prev_c_bytes;

/* A at a 128-byte line or 64 bytes into one, case by case in turn (a same_bits case as the
 * case before): the rule reads A's base (kp128_rule's rows that straddle lines), so a heap
 * address that happened to fall either way made a case's plan, and the run's check count,
 * vary from run to run. Turned for every listed case, run here or in another part. */
static int a_off_line;

/* KILN_EMU_PART=i/n: this process runs part i (0 <= i < n) of the cases, so that a visit
 * runs the test as n processes at once (tools/test-gpu.sh; whole, it is the visit's longest
 * row, most of it compiling ~200 emulated kernels one after another). The listed cases go
 * by group (a case and the same_bits cases after it), group g to part g % n; the random
 * cases by their index (fuzz_cases); the rule and word checks (no kernel, a second) run in every part. */
static int part_index, part_count = 1;
static int in_part(int64_t group) { return group % part_count == part_index; }

/* element i of a buffer of dtype dt: write v rounded to the dtype, read as f64 */
static void put(int dt, void *buf, int64_t i, double v)
{
    if (dt == 2)
        ((float *)buf)[i] = (float)v;
    else
        ((unsigned short *)buf)[i] = dt ? kiln_f64_to_bf16_rn(v) : kiln_f64_to_f16_rn(v);
}
static double get(int dt, const void *buf, int64_t i)
{
    if (dt == 2) return ((const float *)buf)[i];
    unsigned short h = ((const unsigned short *)buf)[i];
    return dt ? (double)kiln_bf16_to_f32(h) : (double)kiln_f16_to_f32(h);
}
/* an f32 value as the tensor cores read it in tf32: its top 19 bits */
static double tf32_of(double v)
{
    float f = (float)v;
    uint32_t b;
    memcpy(&b, &f, 4);
    b &= 0xFFFFE000u;
    memcpy(&f, &b, 4);
    return f;
}

/* The rule alone (no kernel run): an f16 M x N x K product, A stored (K, M) as in a weight
 * update, B (K, N), packed C, on sms SMs, splits forced (0 = the rule's); the cooperative
 * kernel's tile rule (KILN_WGMMA_SCHED=coop: rule_pp checks the schedule rule's ping-pong) */
static void rule_launch(int64_t M, int64_t N, int64_t K, int sms, int bn, int splits, int split_sum,
                        kiln_gemm_wgmma_launch *l)
{
    kiln_gemm_desc d;
    memset(&d, 0, sizeof d);
    d.dtype = KILN_DTYPE_F16;
    d.M = M, d.N = N, d.K = K;
    d.a = d.b = d.c = (char *)(uintptr_t)4096; /* 16-byte aligned; prepare reads no memory */
    d.a_sm = 1, d.a_sk = M, d.b_sk = N, d.b_sn = 1, d.c_sm = N, d.c_sn = 1, d.bias_s = 1;
    d.alpha = 1.0;
    kiln_gemm_batches bt;
    kiln__cuda_gemm_merge_batches(&d, &bt);
    kiln_gemm_wgmma_opts o = {.tma_store = 1, .bn = bn, .splits = splits, .split_sum = split_sum, .pingpong = 1};
    kiln__cuda_gemm_wgmma_prepare(&d, &bt, sms, 1, &o, l);
    /* split tiles summed in a cluster or in slices store from the registers */
    CHECK_INT(l->cfg.tma_store, !l->cfg.cluster && !l->cfg.slice_sum);
}
/* the epilogue bits of rule_sched's epi (1 alone: stochastic rounding) */
enum { EPI_SR = 1, EPI_RELU = 2 };
/* the schedule rule (KILN_WGMMA_SCHED unset) on a packed f16 (bf16 with bf) M x N x K product with
 * an epilogue of a bias (bias), stochastic rounding and ReLU (epi's bits) on 132 SMs, into *l */
static void rule_sched(int64_t M, int64_t N, int64_t K, int bf, int bias, int epi, kiln_gemm_wgmma_launch *l)
{
    kiln_gemm_desc d;
    memset(&d, 0, sizeof d);
    d.dtype = bf ? KILN_DTYPE_BF16 : KILN_DTYPE_F16;
    d.M = M, d.N = N, d.K = K;
    d.a = d.b = d.c = (char *)(uintptr_t)4096;
    d.a_sm = K, d.a_sk = 1, d.b_sk = N, d.b_sn = 1, d.c_sm = N, d.c_sn = 1, d.bias_s = 1;
    d.bias = bias ? (const char *)(uintptr_t)4096 : NULL;
    if (epi & EPI_SR) d.round = KILN_ROUND_STOCHASTIC;
    d.relu = (epi & EPI_RELU) != 0;
    d.alpha = 1.0;
    kiln_gemm_batches bt;
    kiln__cuda_gemm_merge_batches(&d, &bt);
    kiln_gemm_wgmma_opts o = {.tma_store = 1};
    kiln__cuda_gemm_wgmma_prepare(&d, &bt, 132, 1, &o, l);
    if (l->cfg.pingpong) CHECK(l->cfg.bn == 128 && l->w[26] == 1 && l->cfg.tma_store);
}
/* 1 where that rule picks ping-pong */
static int rule_pp(int64_t M, int64_t N, int64_t K, int bf, int bias, int epi)
{
    kiln_gemm_wgmma_launch l;
    rule_sched(M, N, K, bf, bias, epi, &l);
    return l.cfg.pingpong;
}
/* the tile order's group (tile rows) that rule picks, on more than 8 tile rows */
static int rule_group(int64_t M, int64_t N, int64_t K, int bf, int bias, int epi)
{
    kiln_gemm_wgmma_launch l;
    rule_sched(M, N, K, bf, bias, epi, &l);
    CHECK((int64_t)l.w[19] > 8);
    return (int)l.w[41];
}
/* the L2 policy of C's stores that rule picks (1 evict_first) */
static int rule_chint(int64_t M, int64_t N, int64_t K, int bf, int bias, int epi)
{
    kiln_gemm_wgmma_launch l;
    rule_sched(M, N, K, bf, bias, epi, &l);
    return l.cfg.chint;
}
/* its staging buffers per consumer on 132 SMs */
static int rule_cbufs(int64_t M, int64_t N, int64_t K)
{
    kiln_gemm_wgmma_launch l;
    rule_launch(M, N, K, 132, 0, 0, 0, &l);
    return l.cfg.cbufs;
}
/* A packed M x N x K product for KILN_GEMM=auto's choice: A stored (M, K), B (K, N) or, with
 * b_nk, (N, K) (the tf32 kernel's K-major operands) */
static kiln_gemm_desc auto_desc(int64_t M, int64_t N, int64_t K, int b_nk)
{
    kiln_gemm_desc d;
    memset(&d, 0, sizeof d);
    d.M = M, d.N = N, d.K = K;
    d.a = d.b = d.c = (char *)(uintptr_t)4096;
    d.a_sm = K, d.a_sk = 1, d.c_sm = N, d.c_sn = 1, d.bias_s = 1;
    d.b_sk = b_nk ? 1 : N, d.b_sn = b_nk ? K : 1;
    d.alpha = 1.0;
    return d;
}
/* whether KILN_GEMM=auto takes it to the wgmma kernel on 132 SMs (f16 or bf16 alike; f32 without TF32 never) */
static int rule_auto(int64_t M, int64_t N, int64_t K)
{
    kiln_gemm_desc d = auto_desc(M, N, K, 0);
    kiln_gemm_batches bt;
    kiln__cuda_gemm_merge_batches(&d, &bt);
    d.dtype = KILN_DTYPE_F16;
    int f16 = kiln__cuda_gemm_wgmma_auto(&d, &bt, 132);
    d.dtype = KILN_DTYPE_BF16; /* alike but where f16 runs ping-pong (rule_pp: f16 only) */
    if (!rule_pp(M, N, K, 0, 0, 0)) CHECK_INT(kiln__cuda_gemm_wgmma_auto(&d, &bt, 132), f16);
    d.dtype = KILN_DTYPE_F32; /* without TF32 the wgmma kernel takes no f32 */
    CHECK_INT(kiln__cuda_gemm_wgmma_auto(&d, &bt, 132), 0);
    return f16;
}
/* the same in one dtype: bf16, or f32 read as tf32 with B stored (N, K) */
static int rule_auto_in(int64_t M, int64_t N, int64_t K, kiln_dtype dt)
{
    const int tf32 = dt == KILN_DTYPE_F32;
    kiln_gemm_desc d = auto_desc(M, N, K, tf32);
    d.dtype = dt;
    d.allow_tf32 = tf32;
    kiln_gemm_batches bt;
    kiln__cuda_gemm_merge_batches(&d, &bt);
    return kiln__cuda_gemm_wgmma_auto(&d, &bt, 132);
}
static int rule_auto_bf16(int64_t M, int64_t N, int64_t K) { return rule_auto_in(M, N, K, KILN_DTYPE_BF16); }
static int rule_auto_tf32(int64_t M, int64_t N, int64_t K) { return rule_auto_in(M, N, K, KILN_DTYPE_F32); }
/* the tile rule's plan for a packed tf32 M x N x K product (B stored (N, K)), with a bias
 * (bias), on 132 SMs, into *l */
static void rule_tf32(int64_t M, int64_t N, int64_t K, int bias, kiln_gemm_wgmma_launch *l)
{
    kiln_gemm_desc d = auto_desc(M, N, K, 1);
    d.dtype = KILN_DTYPE_F32;
    d.allow_tf32 = 1;
    d.bias = bias ? (const char *)(uintptr_t)4096 : NULL;
    kiln_gemm_batches bt;
    kiln__cuda_gemm_merge_batches(&d, &bt);
    kiln_gemm_wgmma_opts o = {.tma_store = 1};
    kiln__cuda_gemm_wgmma_prepare(&d, &bt, 132, 1, &o, l);
}
/* the FFMA kernel's width rule (f32 without TF32) on 132 SMs: 1 for 128 x 256 tiles */
static int ffma_wide(int64_t M, int64_t N, int64_t K)
{
    kiln_gemm_desc d = auto_desc(M, N, K, 0);
    d.dtype = KILN_DTYPE_F32;
    kiln_gemm_batches bt;
    kiln__cuda_gemm_merge_batches(&d, &bt);
    kiln_gemm_ffma_launch l;
    kiln__cuda_gemm_ffma_prepare(&d, &bt, 132, NULL, &l);
    if (l.cfg.wide) CHECK(l.cfg.minb == 1 && l.cfg.bk == 8);
    return l.cfg.wide;
}
/* its 64-row tiles (cfg.kpair: 0 none, 1 k pairs, 2 one consumer) on sms SMs */
static int rule_kpair(int64_t M, int64_t N, int64_t K, int sms)
{
    kiln_gemm_wgmma_launch l;
    rule_launch(M, N, K, sms, 0, 0, 0, &l);
    return l.cfg.kpair;
}
/* the rule's plan on 132 SMs, f16, A stored (M, K) (K-major) with rows lda elements apart, B
 * stored (N, K) with b_nk, else (K, N) */
static void rule_plan(int64_t M, int64_t N, int64_t K, int64_t lda, int b_nk, kiln_gemm_wgmma_launch *l)
{
    kiln_gemm_desc d = auto_desc(M, N, K, b_nk);
    d.dtype = KILN_DTYPE_F16;
    d.a_sm = lda;
    kiln_gemm_batches bt;
    kiln__cuda_gemm_merge_batches(&d, &bt);
    kiln_gemm_wgmma_opts o = {.tma_store = 1};
    kiln__cuda_gemm_wgmma_prepare(&d, &bt, 132, 1, &o, l);
}
/* the width of its 64-row tiles (0: none) */
static int rule_kp_width(int64_t M, int64_t N, int64_t K, int64_t lda)
{
    kiln_gemm_wgmma_launch l;
    rule_plan(M, N, K, lda, 0, &l);
    return l.cfg.kpair ? l.cfg.bn : 0;
}
/* the ring's stages of its kernel, as the kernel's source declares them */
static int rule_stages(int64_t M, int64_t N, int64_t K, int64_t lda)
{
    kiln_gemm_wgmma_launch l;
    rule_plan(M, N, K, lda, 0, &l);
    char *src = kiln__cuda_gemm_wgmma_source_text(&l.cfg);
    const char *at = src ? strstr(src, "STAGES = ") : NULL;
    int stages = -1;
    if (!at || sscanf(at, "STAGES = %d", &stages) != 1) stages = -1;
    free(src);
    return stages;
}
/* whether it shares B in clusters of two (TMA multicast) */
static int rule_mcast(int64_t M, int64_t N, int64_t K, int b_nk)
{
    kiln_gemm_wgmma_launch l;
    rule_plan(M, N, K, K, b_nk, &l);
    if (l.cfg.mcast) CHECK(l.cluster == 2 && l.grid % 2 == 0 && l.grid <= 132);
    return l.cfg.mcast;
}
/* whether B's loads carry the evict_first L2 policy (checked against the source's BHINT) */
static int rule_bhint(int64_t M, int64_t N, int64_t K, int b_nk)
{
    kiln_gemm_wgmma_launch l;
    rule_plan(M, N, K, K, b_nk, &l);
    char *src = kiln__cuda_gemm_wgmma_source_text(&l.cfg);
    CHECK(src && strstr(src, l.cfg.bhint ? "BHINT = 1;" : "BHINT = 0;"));
    free(src);
    return l.cfg.bhint;
}
/* a plan rule's answer on M x N x K (B stored (N, K) with b_nk) and what it must be */
struct rule_case {
    int64_t M, N, K;
    int b_nk, want;
};
static void check_rule_cases(int (*rule)(int64_t, int64_t, int64_t, int), const char *what, const struct rule_case *c,
                             size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const int got = rule(c[i].M, c[i].N, c[i].K, c[i].b_nk);
        if (got != c[i].want)
            fprintf(stderr, "  %s: %lld x %lld x %lld%s gave %d\n", what, (long long)c[i].M, (long long)c[i].N,
                    (long long)c[i].K, c[i].b_nk ? " (B stored N x K)" : "", got);
        CHECK_INT(got, c[i].want);
    }
}
/* the rows of its edge box for A (which = 0, map 3) or B (which = 1, map 4), B stored (N, K)
 * with b_nk; 0 where there is none; checks the kernel's word 21 (A's bytes in its low half, B's
 * in its high half) against the box's bytes */
static int rule_edge_rows(int64_t M, int64_t N, int64_t K, int b_nk, int which)
{
    kiln_gemm_wgmma_launch l;
    rule_plan(M, N, K, K, b_nk, &l);
    const kiln_gemm_tmap_desc *e = &l.map[3 + which], *full = &l.map[which];
    const int64_t bytes = (int64_t)(which ? l.w[21] >> 32 : l.w[21] & 0xffffffffu);
    CHECK_INT(l.cfg.edge, l.w[21] != 0); /* the kernel compiles its edge choice only then */
    if (!e->used) {
        CHECK_INT(bytes, 0);
        return 0;
    }
    CHECK_INT(bytes, (int64_t)e->box[1] * 128);
    CHECK(e->base == full->base && e->dims[1] == full->dims[1] && e->strides[0] == full->strides[0] &&
          e->box[0] == full->box[0] && e->box[1] < full->box[1]);
    return (int)e->box[1];
}
/* its k splits on sms SMs */
static int rule_splits(int64_t M, int64_t N, int64_t K, int sms)
{
    kiln_gemm_wgmma_launch l;
    rule_launch(M, N, K, sms, 0, 0, 0, &l);
    return (int)l.w[26];
}
/* its tile width on sms SMs */
static int rule_bn(int64_t M, int64_t N, int64_t K, int sms)
{
    kiln_gemm_wgmma_launch l;
    rule_launch(M, N, K, sms, 0, 0, 0, &l);
    return l.cfg.bn;
}
/* the persistent blocks of the cooperative kernel's launch on 132 SMs (grid: KILN_WGMMA_GRID,
 * 0 = the rule's) */
static int rule_grid(int64_t M, int64_t N, int64_t K, int grid)
{
    kiln_gemm_desc d;
    memset(&d, 0, sizeof d);
    d.dtype = KILN_DTYPE_F16;
    d.M = M, d.N = N, d.K = K;
    d.a = d.b = d.c = (char *)(uintptr_t)4096;
    d.a_sm = K, d.a_sk = 1, d.b_sk = N, d.b_sn = 1, d.c_sm = N, d.c_sn = 1, d.bias_s = 1;
    d.alpha = 1.0;
    kiln_gemm_batches bt;
    kiln__cuda_gemm_merge_batches(&d, &bt);
    kiln_gemm_wgmma_opts o = {.tma_store = 1, .pingpong = 1, .grid = grid};
    kiln_gemm_wgmma_launch l;
    kiln__cuda_gemm_wgmma_prepare(&d, &bt, 132, 1, &o, &l);
    return (int)l.grid;
}
/* whether its splits meet in a cluster (split_sum: KILN_WGMMA_SPLIT_SUM's choice) */
static int rule_cluster(int64_t M, int64_t N, int64_t K, int sms, int bn, int splits, int split_sum)
{
    kiln_gemm_wgmma_launch l;
    rule_launch(M, N, K, sms, bn, splits, split_sum, &l);
    if (l.cfg.cluster) { /* one work item per block: the partial takes the ring over */
        CHECK_INT((int64_t)l.grid, l.tiles * (int64_t)l.w[26]);
        CHECK_INT((int)l.cluster, (int)l.w[26]);
    }
    return l.cfg.cluster;
}
/* its split count where the splits sum in slices (every work item in the first wave), else 0 */
static int rule_slices(int64_t M, int64_t N, int64_t K, int sms, int bn, int splits, int split_sum)
{
    kiln_gemm_wgmma_launch l;
    rule_launch(M, N, K, sms, bn, splits, split_sum, &l);
    if (l.cfg.slice_sum) {
        CHECK_INT((int64_t)l.grid, l.tiles * (int64_t)l.w[26]);
        CHECK(l.grid <= (unsigned)sms && l.cooperative && l.ws_bytes > 0);
    }
    return l.cfg.slice_sum ? (int)l.w[26] : 0;
}

/* The work-item divisors' words (kiln__cuda_gemm_div_word) as the wgmma kernel's kg_div
 * uses them, (n m) >> (31 + s), against n / d: every d up to 4096, powers of two and their
 * neighbours, random d below 2^31; for each, n at 0, the multiples of d and their neighbours
 * near 0 and near 2^31, and random n below 2^31 */
static void div_words(void)
{
    int bad = 0;
    for (int i = 0; i < 12000; i++) {
        int64_t d;
        if (i < 4096)
            d = i + 1;
        else if (i < 4096 + 3 * 31)
            d = ((int64_t)1 << ((i - 4096) / 3)) + (i - 4096) % 3 - 1;
        else
            d = 1 + (int64_t)(check_rand_u64(&rng) % (((uint64_t)1 << 31) - 1));
        if (d < 1) continue;
        const uint64_t w = kiln__cuda_gemm_div_word(d);
        const int64_t top = ((int64_t)1 << 31) - 1, kt = top / d;
        for (int j = 0; j < 24; j++) {
            int64_t n;
            switch (j % 8) {
            case 0: n = j / 8; break;
            case 1: n = d - 1 + j / 8; break;
            case 2: n = d * (j / 8 + 1) - 1; break;
            case 3: n = kt * d - j / 8; break;
            case 4: n = top - j / 8; break;
            case 5: n = (kt - j / 8) * d; break;
            default: n = (int64_t)(check_rand_u64(&rng) % ((uint64_t)1 << 31)); break;
            }
            if (n < 0 || n > top) continue;
            const uint64_t q = ((uint64_t)n * (uint32_t)w) >> (31u + (uint32_t)(w >> 32));
            if ((w & 0xFFFFFFFFu) == 0 || q != (uint64_t)(n / d)) {
                if (bad++ < 4) fprintf(stderr, "  div word of %lld: %lld / d gives %llu\n", (long long)d,
                                       (long long)n, (unsigned long long)q);
            }
        }
    }
    CHECK_INT(bad, 0);
}

/* The staged epilogue's f16 stochastic rounding (kg_stage_words): for every
 * |x| < 65504, s = x 2^-112 rounded toward zero (modelled here from the bits: f16's range is
 * f32's less 112 in the exponent, and below 2^-14 the subnormal f32 floor(|x| 2^37) 2^-149),
 * the random bits added below s's top 19, the sum times 2^112 and one conversion toward zero
 * give kiln_f32_to_f16_sr13's bits: random values over the range, the subnormal range and
 * below, f32 subnormals, the edges 2^-14 and 65504, and zeros. */
static void f16_sr13_identity(void)
{
    int bad = 0;
    for (int i = 0; i < 400000; i++) {
        uint64_t r = check_rand_u64(&rng);
        uint32_t u;
        switch (i % 5) {
        case 0: u = (uint32_t)(r % 0x477FE000u); break;                            /* [0, 65504) */
        case 1: u = 0x38800000u - 0x4000u + (uint32_t)(r % 0x8000u); break;        /* around 2^-14 */
        case 2: u = 0x477FE000u - 1u - (uint32_t)(r % 0x4000u); break;             /* just below 65504 */
        case 3: u = 0x2A000000u + (uint32_t)(r % (0x38800000u - 0x2A000000u)); break; /* 2^-43 .. 2^-14 */
        default: u = i % 64 == 4 ? 0u : (uint32_t)(r % 0x00800000u); break;       /* zeros, f32 subnormals */
        }
        u |= (uint32_t)(r >> 63) << 31;
        const uint32_t bits = (uint32_t)(r >> 16) & 0xFFFF0000u, a = u & 0x7FFFFFFFu;
        uint32_t su;
        if (a >= 0x38800000u) {
            su = a - (112u << 23);
        } else {
            float ax;
            memcpy(&ax, &a, 4);
            su = (uint32_t)floor((double)ax * 0x1p37);
        }
        su = (su | (u & 0x80000000u)) + (bits >> 19);
        float x, t;
        memcpy(&x, &u, 4);
        memcpy(&t, &su, 4);
        t *= 0x1p112f;
        if (kiln_f32_to_f16_rz(t) != kiln_f32_to_f16_sr13(x, bits) && bad++ < 4)
            fprintf(stderr, "  f16 SR13: u %08x bits %08x: %04x want %04x\n", u, bits, kiln_f32_to_f16_rz(t),
                    kiln_f32_to_f16_sr13(x, bits));
    }
    CHECK_INT(bad, 0);
}

static void run(const ecase *e)
{
    const int64_t M = e->M, N = e->N, K = e->K, nb = e->nb;
    if (e->same_bits) rng = prev_rng;
    prev_rng = rng;
    /* storage: A (nb or 1) x rows x (cols + pad), the same for B and C */
    const int64_t ar = e->ta ? K : M, ac = e->ta ? M : K, br = e->tb ? N : K, bc = e->tb ? K : N;
    /* rows of 16-byte multiples (TMA's rule; the wgmma kernel takes nothing else), plus the
     * pad (any for the FFMA kernel: odd strides take its element-by-element path) */
    const int64_t as = (ac + 7) / 8 * 8 + e->pad, bs = (bc + 7) / 8 * 8 + e->pad, cs = (N + 7) / 8 * 8 + e->pad;
    const int64_t na = e->a_bcast ? 1 : nb, nbb = e->b_bcast ? 1 : nb;
    const int64_t asz = na * ar * as, bsz = nbb * br * bs, csz = nb * M * cs;
    const size_t es = e->dt == 2 ? 4 : 2;
    if (!e->same_bits) a_off_line ^= 1; /* see a_off_line */
#define LINES(n) (((size_t)(n) * es + 255) / 128 * 128) /* the bytes, a line over, in whole lines */
    void *A_mem = aligned_alloc(128, LINES(asz)), *B = aligned_alloc(128, LINES(bsz));
    void *A = (char *)A_mem + (a_off_line ? 64 : 0);
    void *C = aligned_alloc(128, LINES(csz)), *bias_mem = malloc((size_t)(N + 1) * es);
#undef LINES
    /* the bias one element into its block where B is transposed: a 2-byte aligned bias, which
     * the staged epilogue's 32-bit pair loads must leave to the element-by-element form */
    char *bias = (char *)bias_mem + (e->tb ? es : 0);
    double *h = malloc(sizeof(double) * (size_t)(asz > bsz ? (asz > csz ? asz : csz) : (bsz > csz ? bsz : csz)));
    check_fill(&rng, h, asz, -1, 1);
    for (int64_t i = 0; i < asz; i++) put(e->dt, A, i, h[i]);
    check_fill(&rng, h, bsz, -1, 1);
    for (int64_t i = 0; i < bsz; i++) put(e->dt, B, i, h[i]);
    check_fill(&rng, h, csz, -1, 1);
    for (int64_t i = 0; i < csz; i++) put(e->dt, C, i, e->beta != 0 ? h[i] : NAN);
    check_fill(&rng, h, N, -1, 1);
    for (int64_t i = 0; i < N; i++) put(e->dt, bias, i, h[i]);
    if (e->bias_odd) {
        put(e->dt, bias, 5, INFINITY);
        put(e->dt, bias, 70, NAN);
        put(e->dt, bias, N - 3, -INFINITY);
    }
    if (e->exact) {
        const int64_t jb = e->dt == 1 ? 255 : 2047;
        for (int64_t i = 0; i < asz; i++) put(e->dt, A, i, (double)((int64_t)(check_rand_u64(&rng) % 17) - 8) / 8.0);
        for (int64_t i = 0; i < bsz; i++)
            put(e->dt, B, i, (double)((int64_t)(check_rand_u64(&rng) % (uint64_t)(2 * jb + 1)) - jb) / 1024.0);
        for (int64_t i = 0; i < N; i++) put(e->dt, bias, i, (double)((int64_t)(check_rand_u64(&rng) % 511) - 255) / 1024.0);
    }
    if (e->zero_rows)
        for (int64_t b = 0; b < (e->a_bcast ? 1 : nb); b++)
            for (int64_t m = 1; m < M; m += 5)
                for (int64_t k = 0; k < K; k++)
                    put(e->dt, A, b * ar * as + m * (e->ta ? 1 : as) + k * (e->ta ? as : 1), m % 10 == 6 ? -0.0 : 0.0);
    void *C0 = malloc((size_t)csz * es);
    memcpy(C0, C, (size_t)csz * es);

    kiln_gemm_desc d;
    memset(&d, 0, sizeof d);
    d.dtype = e->dt == 2 ? KILN_DTYPE_F32 : e->dt ? KILN_DTYPE_BF16 : KILN_DTYPE_F16;
    CHECK_INT(kiln_dtype_size(d.dtype), (int)es); /* (also a strong reference: libkiln stays linked) */
    d.allow_tf32 = e->dt == 2;
    d.M = M, d.N = N, d.K = K;
    d.nbatch = nb > 1 ? 1 : 0;
    d.batch_shape[0] = nb;
    d.a_bstride[0] = e->a_bcast ? 0 : ar * as;
    d.b_bstride[0] = e->b_bcast ? 0 : br * bs;
    d.c_bstride[0] = M * cs;
    d.a = (const char *)A, d.b = (const char *)B, d.c = (char *)C;
    d.bias = e->bias ? (const char *)bias : NULL;
    d.a_sm = e->ta ? 1 : as, d.a_sk = e->ta ? as : 1;
    d.b_sk = e->tb ? 1 : bs, d.b_sn = e->tb ? bs : 1;
    d.c_sm = cs, d.c_sn = 1, d.bias_s = 1;
    d.alpha = e->alpha, d.beta = e->beta;
    d.relu = e->relu;
    d.round = e->sr ? KILN_ROUND_STOCHASTIC : KILN_ROUND_NEAREST;
    d.sr_stream = 3;
    /* the statistics: a place for the prepare functions to see (the kernels write the words) */
    double stats_place[2];
    unsigned long long stats_words[2] = {0, 0};
    if (e->stats) d.stats = (char *)stats_place;
    kiln_gemm_batches bt;
    kiln__cuda_gemm_merge_batches(&d, &bt);
    kiln_gemm_wgmma_launch l;
    kiln_gemm_ffma_launch lf;
    kiln_gemm_mma_launch lm;
    float *ws = NULL;
    int *counters = calloc(4096, sizeof(int));
    emu_launch_fn fn = NULL;
    char err[256] = "", key[64];
    int rc = 1;
    if (e->kernel == K_FFMA) {
        kiln_gemm_ffma_opts fo = {0, 0, 0, 0, 0, 0, 0, 0, 0};
        if (e->ffma & 15) {
            fo.bk = e->ffma & 1 ? 16 : 8;
            fo.minb = e->ffma & 2 ? 1 : 2;
            fo.warps = e->ffma & 4 ? 2 : 1;
        }
        if (e->ffma & 16) fo.bn = 256;
        if (e->ffma & 32) fo.order = 1;
        if (e->ffma & 64) fo.early = 1;
        if (e->ffma & 128) fo.walk = 1;
        if (e->ffma & 256) fo.slices = 1;
        kiln__cuda_gemm_ffma_prepare(&d, &bt, e->sms, &fo, &lf);
        const kiln_gemm_ffma_cfg *c = &lf.cfg;
        if (e->ffma & 16) CHECK(c->wide && c->bk == 8 && c->minb == 1);
        CHECK_INT(c->order, e->ffma & 32 ? 0 : 1);
        CHECK_INT(c->early, e->ffma & 64 ? 0 : 1);
        CHECK_INT(c->walk, e->ffma & 128 ? 0 : 1);
        if (e->ffma & 512) CHECK(c->slices && c->split);
        if (e->ffma & 256) CHECK(!c->slices);
        if (e->ffma & 1024) CHECK(c->edge_walk);
        if (e->splits) CHECK_INT((int)lf.gy, e->splits); /* the split rule's choice */
        ws = lf.ws_bytes ? calloc(1, lf.ws_bytes) : NULL;
        lf.w[KILN_GEMM_FFMA_W_WS] = (uint64_t)(uintptr_t)ws;
        lf.w[KILN_GEMM_FFMA_W_COUNTERS] = (uint64_t)(uintptr_t)counters;
        lf.w[KILN_GEMM_FFMA_W_STATS] = (uint64_t)(uintptr_t)stats_words;
        CHECK_INT(c->stats, e->stats);
        snprintf(key, sizeof key, "ffma-%d%d%d%d-%d%d%d%d-%d%d%d%d%d%d%d%d%d-%d", c->a_kmajor, c->a_vec, c->b_kmajor,
                 c->b_vec, c->bias, c->beta, c->c_vec, c->split, c->bk, c->minb, c->warps, c->wide, c->order, c->early,
                 c->walk, c->slices, c->edge_walk, c->stats);
        fn = kernel_for(key, kiln__cuda_gemm_ffma_source_text(c), K_FFMA);
        CHECK(fn != NULL);
        /* slice sums: every block of the launch at once (a tile's splits are gx apart) */
        if (c->slices) CHECK(lf.gx * lf.gy <= 16);
        if (fn)
            rc = fn((const unsigned long long *)lf.w, lf.nw, NULL, lf.gx, lf.gy, lf.threads, 0,
                    c->slices ? lf.gx * lf.gy : 1, err, sizeof err);
    } else if (e->kernel == K_MMA) {
        kiln__cuda_gemm_mma_prepare(&d, &bt, EMU_SEED, &lm);
        const kiln_gemm_mma_cfg *c = &lm.cfg;
        lm.w[KILN_GEMM_MMA_W_STATS] = (uint64_t)(uintptr_t)stats_words;
        CHECK_INT(c->stats, e->stats);
        snprintf(key, sizeof key, "mma-%d-%d%d%d%d-%d%d%d%d-%d", (int)c->dtype, c->a_kmajor, c->a_vec, c->b_kmajor,
                 c->b_vec, c->bias, c->beta, c->sr, c->c_pair, c->stats);
        fn = kernel_for(key, kiln__cuda_gemm_mma_source_text(c), K_MMA);
        CHECK(fn != NULL);
        if (fn) rc = fn((const unsigned long long *)lm.w, lm.nw, NULL, lm.gx, lm.gy, lm.threads, 0, 1, err, sizeof err);
    } else {
        kiln_gemm_wgmma_opts o = {.tma_store = e->tma_store,
                                  .bn = e->bn,
                                  .splits = e->splits,
                                  .pingpong = e->sched_rule || e->fuzz ? 0 : e->pp ? 2 : 1,
                                  .cbufs = e->cbufs,
                                  .split_sum = e->split_sum,
                                  .mcast = e->mcast,
                                  .mc_pairs = e->mc_pairs,
                                  .kpair = e->kpair,
                                  .group_m = e->group_m,
                                  .stages = e->stages,
                                  .bhint = e->bhint,
                                  .early_sr = e->early_sr,
                                  .fast_dram = e->fast_dram};
        kiln__cuda_gemm_wgmma_prepare(&d, &bt, e->sms, EMU_SEED, &o, &l);
        last_wgmma = l;
        CHECK(l.smem <= 227 * 1024); /* what a block may have on 9.0 (the launch fails past it) */
        { /* the tile order's group: the asked or the rule's, at most the tile rows */
            const int64_t g = e->group_m ? e->group_m : e->want_group ? e->want_group : 8;
            /* (a random case: 8, or rows one by one where the rule walks the updates so) */
            if (!(e->fuzz && l.update_order && l.w[41] == 1))
                CHECK_INT((int64_t)l.w[41], g < (int64_t)l.w[19] ? g : (int64_t)l.w[19]);
        }
        if (e->splits && !e->pp) CHECK_INT((int)l.w[26], e->splits);
        if (e->want_bn) CHECK_INT(l.cfg.bn, e->want_bn);
        if (e->want_splits) CHECK_INT((int)l.w[26], e->want_splits);
        if (e->want_grid) CHECK_INT((int)l.grid, e->want_grid);
        if (!e->fuzz) CHECK_INT(l.cfg.pingpong, e->pp);
        if (e->split_sum) CHECK_INT(l.cfg.cluster, e->split_sum == 1);
        if (e->split_sum) CHECK_INT(l.cfg.slice_sum, e->split_sum == 3);
        /* the last block's sum through the workspace is compiled (WS_SPLIT) exactly where the
         * launch splits k without a cluster or slice sums */
        CHECK_INT(l.cfg.ws_split, l.w[26] > 1 && !l.cfg.cluster && !l.cfg.slice_sum);
        if (e->mcast) CHECK_INT(l.cfg.mcast, e->mcast == 2);
        if (e->bhint) CHECK_INT(l.cfg.bhint, e->bhint == 2 && !l.cfg.mcast);
        if (e->early_sr) CHECK_INT(l.cfg.early_sr, e->early_sr == 2);
        if (e->kpair) CHECK_INT(l.cfg.kpair, e->kpair >= 2 ? e->kpair - 1 : 0);
        if (l.cfg.kpair) /* 64-row tiles, unsplit: the forced width or 64; the rule's 64 or 128 */
            CHECK((e->kpair >= 2 ? l.cfg.bn == (e->bn ? e->bn : 64) : l.cfg.bn == 64 || l.cfg.bn == 128) &&
                  l.w[26] == 1 && (int64_t)l.w[19] == (d.M + 63) / 64);
        if (l.cfg.mcast) { /* whole clusters of two, at most mc_pairs of them */
            CHECK_INT((int)l.cluster, 2);
            CHECK_INT((int)(l.grid % 2), 0);
            CHECK(l.grid <= 2u * (unsigned)(e->mc_pairs ? e->mc_pairs : e->sms / 2 > 0 ? e->sms / 2 : 1));
        }
        if (l.cfg.slice_sum) { /* one block per split of every tile, all at once */
            CHECK_INT((int64_t)l.grid, l.tiles * (int64_t)l.w[26]);
            CHECK(l.cooperative && l.ws_bytes > 0);
        }
        if (l.cfg.cluster) { /* whole clusters of one block per split */
            CHECK_INT((int)l.cluster, (int)l.w[26]);
            CHECK_INT((int)(l.grid % l.cluster), 0);
            CHECK(l.ws_bytes == 0);
        }
        /* TMA stores only where N and C's rows fill whole 16-byte chunks (they write past a
         * ragged N), and not for tiles summed in a cluster or in slices */
        const int64_t ces = e->dt == 2 ? 4 : 2;
        const int tma_ok = e->tma_store && N * ces % 16 == 0 && cs * ces % 16 == 0 && !l.cfg.cluster && !l.cfg.slice_sum;
        /* f32 C (tf32) is staged only where a tile's k slices fit the ring beside the staging
         * (the rule may narrow the tile to 128 for it): tma_store 2 says the case is one */
        if (e->dt == 2 && e->tma_store != 2)
            CHECK(!l.cfg.tma_store || tma_ok);
        else
            CHECK_INT(l.cfg.tma_store, tma_ok);
        if (l.cfg.tma_store && e->cbufs) CHECK_INT(l.cfg.cbufs, e->cbufs);
        ws = l.ws_bytes ? calloc(1, l.ws_bytes) : NULL;
        l.w[28] = (uint64_t)(uintptr_t)ws;
        l.w[29] = (uint64_t)(uintptr_t)counters;
        unsigned long long maps[45] = {0};
        for (int i = 0; i < 5; i++) {
            if (!l.map[i].used) continue;
            unsigned long long *m = maps + 9 * i;
            m[8] = (unsigned long long)l.map[i].elem_bytes;
            m[0] = (unsigned long long)(uintptr_t)l.map[i].base;
            for (int j = 0; j < 3; j++) m[1 + j] = l.map[i].dims[j];
            m[4] = l.map[i].strides[0];
            m[5] = l.map[i].strides[1];
            m[6] = l.map[i].box[0];
            m[7] = l.map[i].box[1];
        }
        const kiln_gemm_wgmma_cfg *c = &l.cfg;
        snprintf(key, sizeof key, "wgmma-%d-%d%d-%d%d%d%d%d%d-%d-%d%d-%d-%d-%d%d%d%d-%d", (int)c->dtype, c->a_kmajor,
                 c->b_kmajor, c->bias, c->beta, c->sr, c->c_pair, c->alpha1, c->relu, c->bn, c->tma_store, c->pingpong,
                 c->sr_unroll, c->cbufs, c->cluster, c->slice_sum, c->mcast, c->kpair, c->stats);
        CHECK_INT(c->stats, e->stats);
        fn = kernel_for(key, kiln__cuda_gemm_wgmma_source_text(c), K_WGMMA);
        CHECK(fn != NULL);
        /* the words, then the statistics' address (kiln_args.stats) */
        unsigned long long words[KILN_GEMM_WGMMA_WORDS + 1];
        memcpy(words, l.w, sizeof l.w);
        words[KILN_GEMM_WGMMA_WORDS] = (unsigned long long)(uintptr_t)stats_words;
        if (fn) rc = fn(words, KILN_GEMM_WGMMA_WORDS + 1, maps, l.grid, 1, l.threads, l.smem,
                        /* the blocks that run together: a cluster, a slice-summed tile's
                         * splits; up to 16 where the last block waits for the others' partials */
                        l.cluster       ? l.cluster
                        : l.cooperative ? (unsigned)l.w[26]
                        : l.w[26] > 1   ? (l.grid < 16 ? l.grid : 16)
                                        : 1,
                        err,
                        sizeof err);
    }
    if (rc) fprintf(stderr, "  emulator: %s\n", err);
    CHECK_INT(rc, 0);

    /* reference: f64 sums of the rounded inputs, the epilogue, tolerance for the f32
     * accumulation and one output rounding (two for stochastic rounding); tf32 reads the top
     * 10 mantissa bits of each f32 input (2^-10 relative each, 2^-9 for a product) */
    /* f32 through the wgmma kernel is read as tf32: the reference takes the same inputs (the
     * top 19 bits of each f32, as the emulated tensor cores do), so only the f32 sums differ */
    const int tf32 = e->dt == 2 && e->kernel == K_WGMMA;
    const double u = 6.0e-8, r = (e->dt == 2 ? 0.0 : e->dt ? 3.91e-3 : 4.9e-4) * (e->sr ? 2.02 : 1.01);
    int bad = 0;
    for (int64_t b = 0; b < nb && fn; b++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                const int64_t ao = e->a_bcast ? 0 : b * ar * as, bo = e->b_bcast ? 0 : b * br * bs;
                double acc = 0, mag = 0;
                for (int64_t k = 0; k < K; k++) {
                    double x = get(e->dt, A, ao + (e->ta ? k * as + m : m * as + k));
                    double y = get(e->dt, B, bo + (e->tb ? n * bs + k : k * bs + n));
                    if (tf32) x = tf32_of(x), y = tf32_of(y);
                    acc += x * y;
                    mag += fabs(x * y);
                }
                double t = e->alpha * acc, bound = fabs(e->alpha) * mag;
                if (e->bias) {
                    t += get(e->dt, bias, n);
                    bound += fabs(get(e->dt, bias, n));
                }
                if (e->relu && t <= 0) t = 0; /* maximum(t, +0): -0 too */
                const int64_t ci = b * M * cs + m * cs + n;
                if (e->beta != 0) {
                    t += e->beta * get(e->dt, C0, ci);
                    bound += fabs(e->beta * get(e->dt, C0, ci));
                }
                double got = get(e->dt, C, ci);
                if (isnan(t) || isinf(t)) { /* a bias of inf or NaN (bias_odd): the same, whatever else */
                    if (!(isnan(t) ? isnan(got) : got == t)) {
                        if (bad < 4)
                            fprintf(stderr, "    [%lld, %lld, %lld]: got %.8g want %.8g\n", (long long)b, (long long)m,
                                    (long long)n, got, t);
                        bad++;
                    }
                } else if (e->exact) { /* t is an f32 (or beyond f32's range: inf, as the kernel's one
                                        * rounding of the exact product gives): the output's bits are
                                        * its rounding */
                    const float tf = (float)t;
                    const uint32_t sb = kiln_gemm_sr_bits(EMU_SEED, 3, (uint64_t)(b * M + m), (uint64_t)n, (uint64_t)N);
                    const unsigned short want = e->sr ? (e->dt ? kiln_f32_to_bf16_sr(tf, sb) : kiln_f32_to_f16_sr13(tf, sb))
                                                      : (e->dt ? kiln_f32_to_bf16_rn(tf) : kiln_f32_to_f16_rn(tf)),
                                         have = ((const unsigned short *)C)[ci];
                    if (have != want || ((double)tf != t && !isinf(tf))) {
                        if (bad < 4)
                            fprintf(stderr, "    [%lld, %lld, %lld]: bits %04x want %04x (of %.9g)\n", (long long)b,
                                    (long long)m, (long long)n, have, want, t);
                        bad++;
                    }
                } else if (!(fabs(got - t) <= (u * (double)(K + 8) + r) * bound + 1e-7)) {
                    if (bad < 4)
                        fprintf(stderr, "    [%lld, %lld, %lld]: got %.8g want %.8g\n", (long long)b, (long long)m,
                                (long long)n, got, t);
                    bad++;
                }
            }
    /* the statistics: the largest finite magnitude (as f32 bits) and the non-finite count of C as
     * it came out */
    if (e->stats && fn) {
        double mag = 0.0;
        unsigned long long nonfinite = 0;
        for (int64_t b = 0; b < nb; b++)
            for (int64_t m = 0; m < M; m++)
                for (int64_t n = 0; n < N; n++) {
                    const double x = get(e->dt, C, b * M * cs + m * cs + n);
                    if (isfinite(x))
                        mag = fabs(x) > mag ? fabs(x) : mag;
                    else
                        nonfinite++;
                }
        const float magf = (float)mag;
        uint32_t want_bits;
        memcpy(&want_bits, &magf, 4);
        if ((uint32_t)stats_words[0] != want_bits || stats_words[0] >> 32 || stats_words[1] != nonfinite) {
            float got;
            const uint32_t got_bits = (uint32_t)stats_words[0];
            memcpy(&got, &got_bits, 4);
            fprintf(stderr, "    statistics: max %.9g count %llu (word 0 %016llx), want %.9g %llu\n", (double)got,
                    stats_words[1], stats_words[0], mag, nonfinite);
            bad++;
        }
    }
    /* the pad columns of C are untouched */
    int64_t touched = 0;
    for (int64_t i = 0; i < csz; i++)
        if (i % cs >= N && memcmp((char *)C + i * (int64_t)es, (char *)C0 + i * (int64_t)es, es) != 0) touched++;
    CHECK_INT(bad, 0);
    CHECK_INT(touched, 0);
    if (e->same_bits) { /* the same inputs summed another way: the same bits */
        CHECK(prev_c && prev_c_bytes == (size_t)csz * es);
        if (prev_c && prev_c_bytes == (size_t)csz * es) CHECK(memcmp(prev_c, C, prev_c_bytes) == 0);
    }
    free(prev_c);
    prev_c = malloc((size_t)csz * es);
    prev_c_bytes = (size_t)csz * es;
    if (prev_c) memcpy(prev_c, C, prev_c_bytes);
    /* the counters are zero again for the next launch */
    int nonzero = 0;
    for (int i = 0; i < 4096; i++) nonzero += counters[i] != 0;
    CHECK_INT(nonzero, 0);
    if (bad || rc || touched || nonzero)
        fprintf(stderr,
                "  case failed: %s M=%lld N=%lld K=%lld nb=%lld ta=%d tb=%d bcast=%d%d pad=%lld alpha=%g beta=%g "
                "bias=%d relu=%d sr=%d sms=%d tma_store=%d kernel=%s | bn=%d splits=%llu grid=%u cbufs=%d "
                "cluster=%d slices=%d\n",
                e->dt == 2 ? (e->kernel == K_FFMA ? "f32" : "f32 (tf32)") : e->dt ? "bf16" : "f16", (long long)M, (long long)N, (long long)K, (long long)nb, e->ta, e->tb,
                e->a_bcast, e->b_bcast, (long long)e->pad, e->alpha, e->beta, e->bias, e->relu, e->sr, e->sms,
                e->tma_store, kernel_name[e->kernel], e->kernel ? 128 : l.cfg.bn,
                e->kernel ? 1ull : (unsigned long long)l.w[26],
                e->kernel == K_FFMA ? lf.gx * lf.gy : e->kernel == K_MMA ? lm.gx * lm.gy : l.grid,
                e->kernel ? 0 : l.cfg.cbufs, e->kernel ? 0 : l.cfg.cluster,
                e->kernel ? 0 : l.cfg.slice_sum);
    free(A_mem);
    free(B);
    free(C);
    free(C0);
    free(bias_mem);
    free(h);
    free(ws);
    free(counters);
}

/* ---- random cases ------------------------------------------------------------------------ */

/* a draw from lo to hi, both included */
static int64_t fz_in(uint64_t *s, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(check_rand_u64(s) % (uint64_t)(hi - lo + 1));
}
/* one of an array's values */
#define FZ_PICK(s, arr) ((arr)[check_rand_u64(s) % (sizeof(arr) / sizeof((arr)[0]))])

/* A random case: the wgmma kernel seven times in ten, else the FFMA kernel (f32) or the
 * mma.sync kernel (16-bit, rows of any length); every plan choice the rules' (the wgmma tile
 * rule the H100's or, with fast_dram, the H200's), in one of six regions of shapes, each
 * where the wgmma rule has choices of its own on a small "device": any shape; one tile row
 * over a deep K (split-K: through the workspace or slices; 64- or 128-wide tiles); the
 * short-K updates over many tiles; tall A over eight tile rows or more (B shared by
 * multicast); two tile rows or less with the SMs to spare (64-row tiles, one consumer); and
 * (wgmma only) the plain f16 updates (ping-pong, row order). Sizes ragged or not, any
 * transposes in 16 bits (tf32 reads K-major A and B only), batches with an operand shared,
 * padded rows, every epilogue; exact inputs (the output's bits checked, stochastic
 * rounding's too) where alpha is a power of two and beta 0. The emulated work is kept under
 * about 6e7 multiply-adds a case (1.2e8 for the deep K). */
static ecase fuzz_case(uint64_t *s)
{
    static const double alphas[] = {1.0, 1.0, 0.5, 2.0, -1.25, 0.75};
    static const int64_t odd[] = {1, 7, 8, 63, 64, 65, 127, 128, 129, 136, 200, 255, 256, 257};
    ecase e;
    memset(&e, 0, sizeof e);
    e.fuzz = 1;
    /* the wgmma kernel seven cases in ten, the FFMA (f32) and mma.sync (16-bit) kernels the rest */
    const int which = (int)fz_in(s, 0, 19);
    e.kernel = which < 14 ? K_WGMMA : which < 17 ? K_FFMA : K_MMA;
    e.dt = e.kernel == K_FFMA ? 2 : e.kernel == K_MMA ? (int)fz_in(s, 0, 1) : (int)fz_in(s, 0, 4) % 3;
    const int region = e.kernel == K_WGMMA ? (int)fz_in(s, 0, 5) : (int)fz_in(s, 0, 4);
    if (region == 5) e.dt = 0; /* the plain f16 updates */
    for (;;) {
        switch (region) {
        case 0: /* anything small */
            e.M = check_rand_u64(s) % 2 ? FZ_PICK(s, odd) : fz_in(s, 1, 300);
            e.N = check_rand_u64(s) % 2 ? FZ_PICK(s, odd) : fz_in(s, 1, 520);
            e.K = check_rand_u64(s) % 2 ? FZ_PICK(s, odd) : fz_in(s, 1, 700);
            e.sms = (int)fz_in(s, 1, 12);
            break;
        case 1: /* one tile row, deep K: the split plans (32 k slices or more) */
            e.M = fz_in(s, 1, 128);
            e.N = fz_in(s, 8, 400);
            e.K = fz_in(s, 1500, 9000);
            e.sms = (int)fz_in(s, 2, 40);
            break;
        case 2: /* the updates' short K over several waves of tiles */
            e.M = fz_in(s, 129, 1300);
            e.N = fz_in(s, 64, 700);
            e.K = fz_in(s, 16, 160);
            e.sms = (int)fz_in(s, 1, 20);
            break;
        case 3: /* eight tile rows or more over a K of eight slices or more; B's rows mostly 16 bytes
                 * off a 32-byte sector (N rounds up to 8 mod 16): the rule's multicast */
            e.M = fz_in(s, 900, 1400);
            e.N = fz_in(s, 3, 15) * 16 + 8 - fz_in(s, 0, 7);
            e.K = fz_in(s, 480, 1100);
            e.sms = (int)fz_in(s, 8, 28);
            break;
        case 5: /* plain f16 updates, C = alpha A B: ping-pong or row order by the tile count */
            e.M = fz_in(s, 129, 1300);
            e.N = fz_in(s, 16, 88) * 8;
            e.K = fz_in(s, 16, 128);
            e.sms = (int)fz_in(s, 2, 24);
            break;
        default: /* one or two tile rows, the SMs to spare */
            e.M = fz_in(s, 33, 256);
            e.N = fz_in(s, 32, 600);
            e.K = fz_in(s, 64, 2200);
            e.sms = (int)fz_in(s, 8, 60);
            break;
        }
        if (check_rand_u64(s) % 2) e.N = (e.N + 7) / 8 * 8; /* whole 16-byte rows of C: TMA stores */
        e.nb = check_rand_u64(s) % 4 ? 1 : fz_in(s, 2, 3);
        const double macs =
            (double)e.nb * (double)((e.M + 63) / 64 * 64) * (double)((e.N + 63) / 64 * 64) * (double)e.K;
        if (macs <= (region == 1 ? 1.2e8 : 6e7)) break;
    }
    if (e.nb > 1) {
        const int b = (int)fz_in(s, 0, 3);
        e.a_bcast = b == 1;
        e.b_bcast = b == 2;
    }
    if (e.kernel == K_FFMA) /* slice sums only where every block runs at once: 16 in the emulator */
        e.sms = e.sms < 16 ? e.sms : 16;
    if (e.dt == 2 && e.kernel == K_WGMMA) {
        e.ta = 0, e.tb = 1; /* K-major A and B: what tf32 reads */
    } else {
        e.ta = (int)fz_in(s, 0, 1);
        e.tb = region == 3 && fz_in(s, 0, 3) ? 0 : (int)fz_in(s, 0, 1); /* (multicast takes N-major B) */
    }
    /* (rows padded to 16 bytes and on for the wgmma kernel's TMA; any for the others: their
     * element-by-element loads where the rows are odd) */
    e.pad = check_rand_u64(s) % 3 ? 0 : e.kernel == K_WGMMA ? 8 * fz_in(s, 1, 3) : fz_in(s, 1, 9);
    e.alpha = FZ_PICK(s, alphas);
    if (region != 5 && check_rand_u64(s) % 3) { /* else C = alpha A B, the plain plans' (ping-pong, row order) */
        e.beta = check_rand_u64(s) % 3 ? 0.0 : check_rand_u64(s) % 2 ? 0.5 : -1.0;
        e.bias = (int)fz_in(s, 0, 1);
        e.relu = (int)fz_in(s, 0, 2) == 0;
        e.sr = e.dt != 2 && fz_in(s, 0, 1);
    }
    e.tma_store = region == 5 || check_rand_u64(s) % 5 != 0;
    e.fast_dram = (int)fz_in(s, 0, 1);
    e.exact = e.dt != 2 && e.beta == 0 && (e.alpha == 1.0 || e.alpha == 0.5 || e.alpha == 2.0) && fz_in(s, 0, 1);
    /* the output statistics one case in three, with a bias of inf and NaN where there is one */
    e.stats = fz_in(s, 0, 2) == 0;
    e.bias_odd = e.stats && e.bias && !e.exact && e.N >= 72;
    return e;
}

/* count random cases from seed: each on the emulator against the f64 reference (run), the
 * case printed where it failed. Under KILN_EMU_PART case i runs in part i % n; a replay
 * (verbose: the seed given) runs them all, whatever the part. */
static void fuzz_cases(uint64_t seed, int count, int verbose)
{
    uint64_t s = seed ? seed : 1;
    printf("random cases: %d from KILN_EMU_FUZZ_SEED=%llu%s\n", count, (unsigned long long)seed,
           part_count > 1 && !verbose ? ", this part's every i % n" : "");
    /* what the rule picked: tile widths 64-256, splits through the workspace, a cluster or
     * slices, ping-pong, multicast, 64-row tiles, stochastic rounding's words early */
    int width[4] = {0, 0, 0, 0}, ws = 0, cluster = 0, slices = 0, pp = 0, mcast = 0, rows64 = 0, early = 0;
    int others[3] = {0, 0, 0};
    for (int i = 0; i < count; i++) {
        const ecase e = fuzz_case(&s);
        if (!verbose && !in_part(i)) continue;
        const int failed = check_failed_;
        memset(&last_wgmma, 0, sizeof last_wgmma);
        run(&e);
        others[e.kernel]++;
        const kiln_gemm_wgmma_cfg *c = &last_wgmma.cfg;
        if (c->bn >= 64 && c->bn <= 256) width[c->bn / 64 - 1]++;
        ws += c->ws_split, cluster += c->cluster, slices += c->slice_sum, pp += c->pingpong, mcast += c->mcast;
        rows64 += c->kpair != 0, early += c->early_sr;
        if (check_failed_ != failed || verbose)
            fprintf(check_failed_ != failed ? stderr : stdout,
                    "  random case %d%s: %s %s M=%lld N=%lld K=%lld nb=%lld ta=%d tb=%d bcast=%d%d pad=%lld alpha=%g "
                    "beta=%g bias=%d relu=%d sr=%d sms=%d tma_store=%d fast_dram=%d exact=%d stats=%d | bn %d "
                    "splits %d grid %u ws %d cluster %d slices %d pp %d mcast %d kpair %d early %d\n",
                    i, check_failed_ != failed ? " failed" : "", kernel_name[e.kernel],
                    e.dt == 2 ? (e.kernel == K_WGMMA ? "tf32" : "f32") : e.dt ? "bf16" : "f16",
                    (long long)e.M, (long long)e.N, (long long)e.K,
                    (long long)e.nb, e.ta, e.tb, e.a_bcast, e.b_bcast, (long long)e.pad, e.alpha, e.beta, e.bias,
                    e.relu, e.sr, e.sms, e.tma_store, e.fast_dram, e.exact, e.stats, c->bn, (int)last_wgmma.w[26],
                    last_wgmma.grid, c->ws_split, c->cluster, c->slice_sum, c->pingpong, c->mcast, c->kpair,
                    c->early_sr);
    }
    printf("  wgmma %d (widths 64 / 128 / 192 / 256: %d / %d / %d / %d; split-K through the workspace %d, a "
           "cluster %d, slices %d; ping-pong %d; multicast %d; 64-row tiles %d; early SR words %d), FFMA %d, "
           "mma.sync %d\n",
           others[K_WGMMA], width[0], width[1], width[2], width[3], ws, cluster, slices, pp, mcast, rows64, early,
           others[K_FFMA], others[K_MMA]);
}

int main(void)
{
    rng = check_seed();
    printf("%s\n", kiln_version());
    if (!kiln__cuda_gemm_wgmma_prepare || !kiln__cuda_gemm_wgmma_source_text || !kiln__cuda_gemm_ffma_prepare ||
        !kiln__cuda_gemm_mma_prepare || !kiln__cuda_gemm_mma_source_text ||
        !kiln__cuda_gemm_ffma_source_text || !kiln__cuda_gemm_merge_batches || !kiln__cuda_gemm_wgmma_unsplit) {
        printf("the library has no GEMM kernel generators: skipped\n");
        return CHECK_SKIP;
    }
    if (CHECK_UNDER_SANITIZER) {
        printf("under a sanitizer (the emulator's coroutines switch stacks): skipped\n");
        return CHECK_SKIP;
    }
    cxx = getenv("CXX");
    if (!cxx || !cxx[0]) cxx = "c++";
    char probe[256];
    snprintf(probe, sizeof probe, "%s --version >/dev/null 2>&1", cxx);
    if (system(probe) != 0) {
        printf("no C++ compiler ('%s'): skipped\n", cxx);
        return CHECK_SKIP;
    }
    const char *part = getenv("KILN_EMU_PART");
    if (part && part[0]) {
        char *end = NULL;
        part_index = (int)strtol(part, &end, 10);
        part_count = end && *end == '/' ? (int)strtol(end + 1, &end, 10) : 0;
        if (!end || *end || part_count < 1 || part_count > 64 || part_index < 0 || part_index >= part_count) {
            fprintf(stderr, "KILN_EMU_PART='%s': expected i/n with 0 <= i < n <= 64\n", part);
            return 1;
        }
        printf("KILN_EMU_PART=%d/%d\n", part_index, part_count);
    }
    snprintf(tmpdir, sizeof tmpdir, "/tmp/kiln-emu-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        printf("no temporary directory: skipped\n");
        return CHECK_SKIP;
    }
    static const ecase cases[] = {
        /* fields left out are 0 (the rule's choice, no option); see ecase */
        /* NN, ragged, 256-wide, 2 x 2 tiles on 3 SMs */
        {.dt = 0, .M = 200, .N = 300, .K = 200, .nb = 1, .pad = 8, .alpha = 1.0, .sms = 3},
        /* TT, 128-wide, the whole epilogue */
        {.dt = 1, .M = 130, .N = 100, .K = 70, .nb = 1, .ta = 1, .tb = 1, .alpha = -0.75, .beta = 0.5, .bias = 1,
         .relu = 1, .sms = 2},
        /* TN, batches, B shared */
        {.dt = 0, .M = 64, .N = 72, .K = 130, .nb = 3, .ta = 1, .b_bcast = 1, .pad = 16, .alpha = 2.0, .bias = 1,
         .sms = 2},
        /* NT, A shared, stochastic rounding */
        {.dt = 1, .M = 40, .N = 136, .K = 64, .nb = 2, .tb = 1, .a_bcast = 1, .alpha = 1.0, .sr = 1, .sms = 4},
        /* split-K, the last split short */
        {.dt = 0, .M = 130, .N = 300, .K = 3380, .nb = 1, .ta = 1, .alpha = 1.0, .beta = -0.5, .bias = 1, .relu = 1,
         .sms = 132},
        {.dt = 1, .M = 1, .N = 1, .K = 1, .nb = 1, .alpha = 1.0, .sms = 132}, /* one element */
        /* the TMA-store epilogue on the same kinds of shapes (N a multiple of 8), and refused
         * where N is not: test_dot's padded 129 x 135 C, whose pad the H100's 16-byte store
         * chunks overwrote */
        {.dt = 0, .M = 200, .N = 304, .K = 200, .nb = 1, .pad = 8, .alpha = 1.0, .sms = 3, .tma_store = 1},
        {.dt = 1, .M = 130, .N = 104, .K = 70, .nb = 1, .ta = 1, .tb = 1, .alpha = -0.75, .beta = 0.5, .bias = 1,
         .relu = 1, .sms = 2, .tma_store = 1},
        {.dt = 0, .M = 129, .N = 135, .K = 70, .nb = 1, .ta = 1, .tb = 1, .pad = 8, .alpha = 1.0, .sms = 132,
         .tma_store = 1},
        {.dt = 0, .M = 64, .N = 72, .K = 130, .nb = 3, .ta = 1, .b_bcast = 1, .pad = 16, .alpha = 2.0, .bias = 1,
         .sms = 2, .tma_store = 1},
        {.dt = 1, .M = 40, .N = 136, .K = 64, .nb = 2, .tb = 1, .a_bcast = 1, .alpha = 1.0, .sr = 1, .sms = 4,
         .tma_store = 1},
        /* forced tiles and splits (KILN_WGMMA_BN / KILN_WGMMA_SPLITS): 256-wide tiles split
         * 3 ways on batches with the whole epilogue, 128-wide split 6 ways through the
         * workspace and TMA stores (KILN_WGMMA_SPLIT_SUM=workspace) */
        {.dt = 0, .M = 150, .N = 260, .K = 700, .nb = 2, .tb = 1, .alpha = 0.5, .beta = 1.0, .bias = 1, .relu = 1,
         .sms = 5, .bn = 256, .splits = 3},
        {.dt = 1, .M = 150, .N = 264, .K = 700, .nb = 1, .ta = 1, .pad = 8, .alpha = 1.0, .bias = 1, .sr = 1, .sms = 7,
         .tma_store = 1, .bn = 128, .splits = 6, .split_sum = 2, .stats = 1},
        /* split tiles through the staged TMA epilogue: 256-wide, 4 splits, beta and ReLU */
        {.dt = 0, .M = 130, .N = 296, .K = 1500, .nb = 1, .tb = 1, .alpha = -0.75, .beta = 0.5, .bias = 1, .relu = 1,
         .sms = 5, .tma_store = 1, .bn = 256, .splits = 4},
        /* f32 through tf32 (K-major A and B: A stored (M, K), B stored (N, K)) */
        {.dt = 2, .M = 200, .N = 300, .K = 100, .nb = 1, .tb = 1, .pad = 4, .alpha = 1.0, .sms = 3},
        {.dt = 2, .M = 130, .N = 100, .K = 70, .nb = 2, .tb = 1, .b_bcast = 1, .alpha = -0.75, .beta = 0.5, .bias = 1,
         .relu = 1, .sms = 2},
        {.dt = 2, .M = 130, .N = 300, .K = 1700, .nb = 1, .tb = 1, .alpha = 1.0, .bias = 1, .sms = 132}, /* split-K */
        /* f32 C through the staged TMA epilogue (boxes of 32 f32 columns; tma_store 2: the rule
         * must stage it): ragged M, N (300 = 9 boxes and 12 columns) and K; batches with a
         * shared B and the whole epilogue; split tiles through the workspace; two staging
         * buffers (three k slices fit the ring beside them at 128 wide) over several tiles per
         * block; ping-pong, each consumer's whole tile; a K = 128 update the rule narrows from
         * 256 to 128 wide for it; and one whose k slices do not fit (from the registers) */
        /* one row of 192-wide tiles past a wave: 8 tiles on 5 SMs run on 4 blocks, two each
         * (the rule's even rounds), f16 with a bias and SR */
        {.dt = 0, .M = 100, .N = 1536, .K = 192, .nb = 1, .alpha = 1.0, .bias = 1, .sr = 1, .sms = 5, .tma_store = 2,
         .want_bn = 192, .want_grid = 4},
        /* a bias with +inf, NaN and -inf over 256-wide tile columns with and without one (the
         * staged bias's tiles): staged with beta and ReLU, staged with SR (its rare path), from
         * the registers with ReLU and SR */
        {.dt = 1, .M = 200, .N = 600, .K = 200, .nb = 1, .ta = 1, .alpha = 1.0, .beta = 0.5, .bias = 1, .relu = 1,
         .sms = 3, .tma_store = 1, .bn = 256, .bias_odd = 1, .stats = 1},
        {.dt = 0, .M = 130, .N = 600, .K = 64, .nb = 2, .tb = 1, .alpha = 1.0, .bias = 1, .sr = 1, .sms = 4,
         .tma_store = 1, .bn = 256, .bias_odd = 1, .stats = 1},
        {.dt = 0, .M = 130, .N = 600, .K = 64, .nb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1, .sms = 4,
         .bn = 256, .bias_odd = 1, .stats = 1},
        {.dt = 2, .M = 200, .N = 300, .K = 100, .nb = 1, .tb = 1, .pad = 4, .alpha = 1.0, .sms = 3, .tma_store = 2,
         .stats = 1},
        {.dt = 2, .M = 130, .N = 100, .K = 70, .nb = 2, .tb = 1, .b_bcast = 1, .alpha = -0.75, .beta = 0.5, .bias = 1,
         .relu = 1, .sms = 2, .tma_store = 2},
        {.dt = 2, .M = 130, .N = 296, .K = 300, .nb = 1, .tb = 1, .alpha = -0.75, .beta = 0.5, .bias = 1, .relu = 1,
         .sms = 5, .tma_store = 2, .bn = 128, .splits = 4, .split_sum = 2},
        {.dt = 2, .M = 400, .N = 520, .K = 96, .nb = 1, .tb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sms = 2,
         .tma_store = 2, .bn = 128, .cbufs = 2},
        {.dt = 2, .M = 260, .N = 200, .K = 96, .nb = 2, .tb = 1, .alpha = -0.75, .beta = 0.5, .bias = 1, .relu = 1,
         .sms = 4, .tma_store = 2, .pp = 1},
        {.dt = 2, .M = 1100, .N = 1040, .K = 128, .nb = 1, .tb = 1, .alpha = 1.0, .bias = 1, .sms = 4, .tma_store = 2,
         .want_bn = 128},
        {.dt = 2, .M = 300, .N = 296, .K = 700, .nb = 1, .tb = 1, .alpha = 1.0, .sms = 3, .tma_store = 1, .bn = 256},
        /* K = 64 (two tf32 slices) 256 wide: one staging buffer, two would need 256 KiB (the rule
         * had asked for two and the launch failed); with a bias the 256-wide staging leaves no
         * room for the ring, and the rule narrows the tiles to 128. Plain, on four waves of tiles
         * (9 on 2 "SMs"): the tiles row by row, C stored evict_first (the update rule in tf32) */
        {.dt = 2, .M = 300, .N = 520, .K = 64, .nb = 1, .tb = 1, .alpha = 1.0, .sms = 2, .tma_store = 2, .bn = 256,
         .want_group = 1},
        {.dt = 2, .M = 260, .N = 1040, .K = 64, .nb = 1, .tb = 1, .alpha = 0.5, .bias = 1, .relu = 1, .sms = 2,
         .tma_store = 2, .want_bn = 128},
        /* 8 and 36 tf32 slices: C staged at 128 wide though the slices overrun the 5 stages left
         * beside the f32 staging (the rule up to 36 slices); 37 slices keep the registers' stores */
        {.dt = 2, .M = 260, .N = 264, .K = 256, .nb = 1, .tb = 1, .alpha = 1.0, .sms = 3, .tma_store = 2,
         .want_bn = 128},
        {.dt = 2, .M = 200, .N = 392, .K = 1152, .nb = 1, .tb = 1, .alpha = -0.75, .beta = 0.5, .bias = 1, .relu = 1,
         .sms = 2, .tma_store = 2, .want_bn = 128},
        {.dt = 2, .M = 200, .N = 392, .K = 1184, .nb = 1, .tb = 1, .alpha = 1.0, .sms = 2, .tma_store = 1,
         .want_bn = 256},
        /* the FFMA kernel (f32): the four transposes, float4 and element-by-element operands
         * (odd pads), ragged edges, batches with a shared operand, the whole epilogue */
        {.dt = 2, .M = 200, .N = 300, .K = 70, .nb = 1, .alpha = 1.0, .kernel = 1, .stats = 1},
        {.dt = 2, .M = 130, .N = 100, .K = 37, .nb = 2, .ta = 1, .tb = 1, .b_bcast = 1, .pad = 3, .alpha = -0.75,
         .beta = 0.5, .bias = 1, .relu = 1, .kernel = 1},
        {.dt = 2, .M = 129, .N = 257, .K = 50, .nb = 1, .ta = 1, .pad = 4, .alpha = 2.0, .beta = 1.0, .bias = 1,
         .kernel = 1},
        {.dt = 2, .M = 64, .N = 72, .K = 33, .nb = 3, .tb = 1, .a_bcast = 1, .pad = 1, .alpha = 1.0, .relu = 1,
         .kernel = 1},
        /* the other FFMA structures (KILN_FFMA_*): BK 8, 2 x 16 (the first kernel's); BK 16 at
         * one block per SM, 2 x 16; BK 8, 4 x 8; on ragged, transposed, padded, batched cases */
        {.dt = 2, .M = 130, .N = 100, .K = 37, .nb = 2, .ta = 1, .tb = 1, .b_bcast = 1, .pad = 3, .alpha = -0.75,
         .beta = 0.5, .bias = 1, .relu = 1, .kernel = 1, .ffma = 8},
        {.dt = 2, .M = 129, .N = 257, .K = 50, .nb = 1, .ta = 1, .pad = 4, .alpha = 2.0, .beta = 1.0, .bias = 1,
         .kernel = 1, .ffma = 11},
        {.dt = 2, .M = 64, .N = 72, .K = 33, .nb = 3, .tb = 1, .a_bcast = 1, .pad = 1, .alpha = 1.0, .relu = 1,
         .kernel = 1, .ffma = 12},
        {.dt = 2, .M = 200, .N = 300, .K = 70, .nb = 1, .alpha = 1.0, .kernel = 1, .ffma = 9},
        /* split tiles summed in slices by every block of the tile (the rule's where all blocks
         * fit the SMs): 128 x 128 ragged with the whole epilogue (units past M and N), 16 splits
         * of one tile (two partials a step in the last block's sum elsewhere), 128 x 256 with
         * K-major B; the same shape summed by the last block (KILN_FFMA_SLICES=0) */
        {.dt = 2, .M = 130, .N = 200, .K = 1500, .nb = 1, .pad = 2, .alpha = -0.75, .beta = 0.5, .bias = 1,
         .relu = 1, .sms = 12, .kernel = 1, .ffma = 512, .stats = 1, .bias_odd = 1},
        {.dt = 2, .M = 64, .N = 120, .K = 5000, .nb = 1, .ta = 1, .alpha = 1.0, .sms = 16, .kernel = 1, .ffma = 512},
        {.dt = 2, .M = 129, .N = 129, .K = 4000, .nb = 1, .tb = 1, .alpha = 2.0, .bias = 1, .sms = 16, .kernel = 1,
         .ffma = 512},
        {.dt = 2, .M = 64, .N = 120, .K = 5000, .nb = 1, .ta = 1, .alpha = 1.0, .sms = 16, .kernel = 1, .ffma = 256,
         .stats = 1},
        /* the FFMA block row by row (KILN_FFMA_ORDER=rows): 128 x 128 ragged and transposed
         * with the whole epilogue, 128 x 256 split by the rule; the barrier after the last k
         * step (KILN_FFMA_EARLY=0) and no pointer walk (KILN_FFMA_WALK=0) on interior tiles
         * beside edge tiles, split, at both widths */
        {.dt = 2, .M = 130, .N = 100, .K = 37, .nb = 2, .ta = 1, .tb = 1, .pad = 3, .alpha = -0.75, .beta = 0.5,
         .bias = 1, .relu = 1, .kernel = 1, .ffma = 32},
        {.dt = 2, .M = 130, .N = 300, .K = 1000, .nb = 1, .tb = 1, .alpha = 1.0, .bias = 1, .sms = 3, .kernel = 1,
         .ffma = 48},
        {.dt = 2, .M = 256, .N = 260, .K = 136, .nb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sms = 5, .kernel = 1,
         .ffma = 64},
        {.dt = 2, .M = 256, .N = 520, .K = 136, .nb = 1, .ta = 1, .alpha = 1.0, .beta = 0.5, .sms = 5, .kernel = 1,
         .ffma = 16 + 128},
        {.dt = 2, .M = 260, .N = 256, .K = 200, .nb = 1, .tb = 1, .alpha = 0.5, .sms = 4, .kernel = 1,
         .ffma = 64 + 128},
        /* the pointer walk on edge tiles (every fetch wholly inside or wholly past the rows):
         * M-major A with M % 4 == 0 and N-major B with N % 4 == 0 past a 256-wide tile (f32
         * fc1000 update's 232-wide last tile), with the whole epilogue; K-major A on a ragged
         * M beside N-major B with N % 4 != 0 (float4 rows: the edge tile's fetches tested) */
        {.dt = 2, .M = 260, .N = 488, .K = 128, .nb = 1, .ta = 1, .alpha = -0.75, .beta = 0.5, .bias = 1,
         .relu = 1, .sms = 5, .kernel = 1, .ffma = 16 + 1024},
        {.dt = 2, .M = 130, .N = 202, .K = 1000, .nb = 1, .alpha = 1.0, .bias = 1, .sms = 3, .kernel = 1,
         .ffma = 1024},
        /* 128 x 256 tiles (KILN_FFMA_BN=256: two float4 fetches of B a thread and slice, 16
         * columns a thread in four quadrants): ragged, transposed, padded, batched with the
         * whole epilogue; a ragged N past one tile; interior tiles (float4 fetches without
         * tests) with warps of 2 x 16; split 4 ways (one tile all inside) and by the rule on
         * ragged tiles */
        {.dt = 2, .M = 130, .N = 300, .K = 37, .nb = 2, .ta = 1, .tb = 1, .b_bcast = 1, .pad = 3, .alpha = -0.75,
         .beta = 0.5, .bias = 1, .relu = 1, .kernel = 1, .ffma = 16},
        {.dt = 2, .M = 129, .N = 520, .K = 50, .nb = 1, .ta = 1, .pad = 4, .alpha = 2.0, .beta = 1.0, .bias = 1,
         .kernel = 1, .ffma = 16},
        {.dt = 2, .M = 256, .N = 512, .K = 64, .nb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .kernel = 1, .ffma = 24},
        {.dt = 2, .M = 128, .N = 256, .K = 2048, .nb = 1, .alpha = 1.0, .sms = 4, .splits = 4, .kernel = 1,
         .ffma = 16},
        {.dt = 2, .M = 130, .N = 300, .K = 1000, .nb = 1, .tb = 1, .alpha = -0.75, .beta = 0.5, .bias = 1, .relu = 1,
         .sms = 3, .kernel = 1, .ffma = 16},
        /* interior tiles (float4 operands, rows and k inside: fetches without bounds tests)
         * beside edge tiles: NN with a bias, TT batched with beta, BK 16 2 x 16; a split
         * tile all inside (4 splits of 512) */
        {.dt = 2, .M = 256, .N = 136, .K = 64, .nb = 1, .alpha = 1.0, .bias = 1, .kernel = 1},
        {.dt = 2, .M = 130, .N = 256, .K = 96, .nb = 2, .ta = 1, .tb = 1, .alpha = -0.75, .beta = 0.5, .relu = 1,
         .kernel = 1},
        {.dt = 2, .M = 256, .N = 136, .K = 64, .nb = 1, .alpha = 1.0, .bias = 1, .kernel = 1, .ffma = 9},
        {.dt = 2, .M = 128, .N = 128, .K = 2048, .nb = 1, .alpha = 1.0, .sms = 4, .splits = 4, .kernel = 1},
        /* its split-K (few tiles, long K; splits = the rule's choice for sms): 3 splits with
         * a short last one and the whole epilogue; 5 splits, A transposed and padded, a
         * ragged last k slice */
        {.dt = 2, .M = 130, .N = 100, .K = 1000, .nb = 1, .alpha = -0.75, .beta = 0.5, .bias = 1, .relu = 1, .sms = 3,
         .splits = 3, .kernel = 1},
        /* BK 8 */
        {.dt = 2, .M = 130, .N = 100, .K = 1000, .nb = 1, .alpha = -0.75, .beta = 0.5, .bias = 1, .relu = 1, .sms = 3,
         .splits = 3, .kernel = 1, .ffma = 8},
        {.dt = 2, .M = 100, .N = 250, .K = 1290, .nb = 1, .ta = 1, .pad = 4, .alpha = 1.0, .sms = 5, .splits = 5,
         .kernel = 1},
        /* the mma.sync kernel (f16 / bf16): cp.async and element-by-element operands (odd
         * pads), the four transposes, batches, the whole epilogue, stochastic rounding */
        {.dt = 0, .M = 200, .N = 150, .K = 70, .nb = 1, .alpha = 1.0, .kernel = 2},
        {.dt = 1, .M = 130, .N = 100, .K = 37, .nb = 2, .ta = 1, .tb = 1, .b_bcast = 1, .pad = 3, .alpha = -0.75,
         .beta = 0.5, .bias = 1, .relu = 1, .kernel = 2, .stats = 1, .bias_odd = 1},
        {.dt = 0, .M = 129, .N = 140, .K = 50, .nb = 1, .ta = 1, .pad = 8, .alpha = 2.0, .beta = 1.0, .bias = 1,
         .sr = 1, .kernel = 2, .stats = 1, .bias_odd = 1},
        {.dt = 1, .M = 64, .N = 72, .K = 33, .nb = 3, .tb = 1, .a_bcast = 1, .pad = 1, .alpha = 1.0, .relu = 1,
         .kernel = 2},
        /* mma.sync's cp.async walkers K-major (A; B with tb): rows padded to 16-byte chunks with a
         * K of 70, so the last stage's first chunk is partial (12 bytes) and the rest empty; ragged
         * M and N (edge tiles, the out-of-line edge epilogue where SR meets a bias or beta) */
        {.dt = 0, .M = 200, .N = 150, .K = 70, .nb = 1, .pad = 8, .alpha = 1.0, .kernel = 2},
        {.dt = 1, .M = 130, .N = 100, .K = 70, .nb = 2, .tb = 1, .pad = 8, .alpha = -0.75, .beta = 0.5, .bias = 1,
         .relu = 1, .sr = 1, .kernel = 2, .stats = 1},
        /* wgmma ping-pong: the consumers alternate items (odd and even counts per block),
         * register and TMA-store epilogues, transposes, batches, SR */
        {.dt = 0, .M = 300, .N = 260, .K = 200, .nb = 1, .pad = 8, .alpha = 1.0, .sms = 3, .pp = 1},
        {.dt = 1, .M = 260, .N = 200, .K = 130, .nb = 2, .ta = 1, .tb = 1, .alpha = -0.75, .beta = 0.5, .bias = 1,
         .relu = 1, .sms = 4, .tma_store = 1, .pp = 1},
        {.dt = 0, .M = 140, .N = 300, .K = 70, .nb = 3, .ta = 1, .b_bcast = 1, .pad = 16, .alpha = 2.0, .bias = 1,
         .sr = 1, .sms = 5, .tma_store = 1, .pp = 1, .stats = 1},
        {.dt = 2, .M = 200, .N = 250, .K = 100, .nb = 1, .tb = 1, .pad = 4, .alpha = 1.0, .bias = 1, .sms = 3, .pp = 1,
         .stats = 1},
        /* ping-pong's staged bias (TMA stores, 16-bit C) with SR, several items per consumer
         * (each consumer's two bias buffers written twice), a ragged last tile column */
        {.dt = 0, .M = 390, .N = 264, .K = 130, .nb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1, .sms = 2,
         .tma_store = 1, .pp = 1},
        {.dt = 1, .M = 300, .N = 200, .K = 64, .nb = 2, .tb = 1, .alpha = 1.0, .bias = 1, .sms = 3, .tma_store = 1,
         .pp = 1},
        /* ping-pong with many more k slices than stages and several items per consumer: the
         * second consumer must not wait on a stage rounds ahead of the ring (a phase alias) */
        {.dt = 0, .M = 520, .N = 260, .K = 1000, .nb = 1, .alpha = 1.0, .sms = 1, .pp = 1},
        {.dt = 1, .M = 390, .N = 130, .K = 700, .nb = 1, .ta = 1, .alpha = 1.0, .beta = 0.5, .bias = 1, .relu = 1,
         .sms = 2, .tma_store = 1, .pp = 1},
        /* two C staging buffers per consumer (the rule's choice at K <= 128: the weight
         * updates), six tiles per block so both buffers are written twice: 256-wide with the
         * whole epilogue and SR, 128-wide with beta, a ragged last tile row, a batch; and the
         * two forced, one buffer on the same shape and two on a deeper K */
        {.dt = 0, .M = 400, .N = 520, .K = 128, .nb = 1, .ta = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1,
         .sms = 2, .tma_store = 1},
        {.dt = 1, .M = 390, .N = 264, .K = 100, .nb = 2, .ta = 1, .pad = 8, .alpha = -0.75, .beta = 0.5, .sms = 3,
         .tma_store = 1, .bn = 128},
        {.dt = 0, .M = 400, .N = 520, .K = 128, .nb = 1, .ta = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1,
         .sms = 2, .tma_store = 1, .cbufs = 1},
        {.dt = 1, .M = 260, .N = 384, .K = 330, .nb = 1, .tb = 1, .alpha = 1.0, .bias = 1, .sms = 2, .tma_store = 1,
         .bn = 128, .cbufs = 2},
        /* split-K summed in a cluster (KILN_WGMMA_SPLIT_SUM=cluster) against the workspace:
         * the same inputs give the same bits either way. 2 splits over ragged tiles with the
         * whole epilogue; 3 splits with a short last one, SR, batches; 4 splits of a
         * TMA-eligible C, transposed B, bias pairs; 8 splits (the largest cluster), one tile
         * row, beta; then an fprop-like shape on the rule's split count for 128-wide tiles */
        {.dt = 0, .M = 300, .N = 300, .K = 700, .nb = 1, .pad = 8, .alpha = -0.75, .beta = 0.5, .bias = 1, .relu = 1,
         .sms = 18, .bn = 128, .splits = 2, .split_sum = 1},
        {.dt = 0, .M = 300, .N = 300, .K = 700, .nb = 1, .pad = 8, .alpha = -0.75, .beta = 0.5, .bias = 1, .relu = 1,
         .sms = 18, .bn = 128, .splits = 2, .split_sum = 2, .same_bits = 1},
        {.dt = 1, .M = 130, .N = 200, .K = 1100, .nb = 2, .ta = 1, .b_bcast = 1, .alpha = 1.0, .bias = 1, .sr = 1,
         .sms = 25, .tma_store = 1, .bn = 128, .splits = 3, .split_sum = 1, .stats = 1},
        {.dt = 1, .M = 130, .N = 200, .K = 1100, .nb = 2, .ta = 1, .b_bcast = 1, .alpha = 1.0, .bias = 1, .sr = 1,
         .sms = 25, .tma_store = 1, .bn = 128, .splits = 3, .split_sum = 2, .same_bits = 1},
        {.dt = 0, .M = 128, .N = 256, .K = 1024, .nb = 1, .tb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1,
         .sms = 8, .tma_store = 1, .bn = 128, .splits = 4, .split_sum = 1},
        {.dt = 0, .M = 128, .N = 256, .K = 1024, .nb = 1, .tb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1,
         .sms = 8, .tma_store = 1, .bn = 128, .splits = 4, .split_sum = 2, .same_bits = 1},
        {.dt = 1, .M = 100, .N = 136, .K = 1500, .nb = 1, .alpha = 2.0, .beta = -1.0, .sms = 16, .tma_store = 1,
         .bn = 128, .splits = 8, .split_sum = 1},
        {.dt = 1, .M = 100, .N = 136, .K = 1500, .nb = 1, .alpha = 2.0, .beta = -1.0, .sms = 16, .tma_store = 1,
         .bn = 128, .splits = 8, .split_sum = 2, .same_bits = 1},
        {.dt = 0, .M = 128, .N = 512, .K = 2048, .nb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sms = 132,
         .tma_store = 1, .bn = 128, .split_sum = 1},
        /* split-K summed in slices through the workspace (KILN_WGMMA_SPLIT_SUM=slices, the
         * rule's where every work item fits the first wave) against the last block's sum:
         * the same bits. 2 splits over ragged tiles with the whole epilogue; 3 with SR and
         * batches; 16 splits with beta; then the rule's split count for forced 128-wide tiles
         * (its own width there is 64) on an fprop-like shape (4 tiles: 4 splits of 8 slices)
         * with SR, and on one of tf32 (6 tiles on 24 SMs: 4) */
        {.dt = 0, .M = 300, .N = 300, .K = 700, .nb = 1, .pad = 8, .alpha = -0.75, .beta = 0.5, .bias = 1, .relu = 1,
         .sms = 18, .bn = 128, .splits = 2, .split_sum = 3},
        {.dt = 0, .M = 300, .N = 300, .K = 700, .nb = 1, .pad = 8, .alpha = -0.75, .beta = 0.5, .bias = 1, .relu = 1,
         .sms = 18, .bn = 128, .splits = 2, .split_sum = 2, .same_bits = 1},
        {.dt = 1, .M = 130, .N = 200, .K = 1100, .nb = 2, .ta = 1, .b_bcast = 1, .alpha = 1.0, .bias = 1, .sr = 1,
         .sms = 25, .tma_store = 1, .bn = 128, .splits = 3, .split_sum = 3, .stats = 1},
        {.dt = 1, .M = 130, .N = 200, .K = 1100, .nb = 2, .ta = 1, .b_bcast = 1, .alpha = 1.0, .bias = 1, .sr = 1,
         .sms = 25, .tma_store = 1, .bn = 128, .splits = 3, .split_sum = 2, .same_bits = 1},
        {.dt = 1, .M = 100, .N = 136, .K = 2000, .nb = 1, .alpha = 2.0, .beta = -1.0, .sms = 40, .tma_store = 1,
         .bn = 128, .splits = 16, .split_sum = 3},
        {.dt = 1, .M = 100, .N = 136, .K = 2000, .nb = 1, .alpha = 2.0, .beta = -1.0, .sms = 40, .tma_store = 1,
         .bn = 128, .splits = 16, .split_sum = 2, .same_bits = 1},
        {.dt = 0, .M = 128, .N = 512, .K = 2048, .nb = 1, .tb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1,
         .sms = 132, .tma_store = 1, .bn = 128},
        {.dt = 2, .M = 130, .N = 300, .K = 1000, .nb = 1, .tb = 1, .alpha = 0.5, .beta = 0.25, .bias = 1, .sms = 24,
         .bn = 128},
        /* exact sums (the last column): every output's bits, stochastic rounding's Philox
         * words included. The staged epilogue (f16, bf16; one and two staging buffers; the
         * sums of split tiles), the register epilogue (a ragged N; slice-summed splits), f16
         * values below 2^-14 and from 65504 up (alpha 2^-20 and 2048: the exact path beside
         * the fast one), and the mma.sync kernel */
        {.dt = 0, .M = 200, .N = 264, .K = 64, .nb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1, .sms = 3,
         .tma_store = 1, .exact = 1},
        {.dt = 1, .M = 200, .N = 264, .K = 64, .nb = 1, .ta = 1, .tb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1,
         .sms = 3, .tma_store = 1, .exact = 1},
        {.dt = 0, .M = 400, .N = 520, .K = 128, .nb = 1, .ta = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1,
         .sms = 2, .tma_store = 1, .exact = 1},
        {.dt = 1, .M = 130, .N = 264, .K = 640, .nb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1, .sms = 5,
         .tma_store = 1, .bn = 256, .splits = 2, .split_sum = 2, .exact = 1},
        {.dt = 0, .M = 130, .N = 260, .K = 64, .nb = 2, .tb = 1, .alpha = 1.0, .bias = 1, .sr = 1, .sms = 3,
         .tma_store = 1, .exact = 1},
        {.dt = 0, .M = 130, .N = 200, .K = 640, .nb = 1, .ta = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1,
         .sms = 25, .tma_store = 1, .bn = 128, .splits = 3, .split_sum = 3, .exact = 1},
        /* long splits, where split 0 takes SPLIT_LEAD slices more than the others (2 splits of
         * 34 + 30 slices through the workspace, 3 of 18 + 16 + 16 in slices) */
        {.dt = 0, .M = 130, .N = 264, .K = 4096, .nb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1, .sms = 8,
         .tma_store = 1, .bn = 128, .splits = 2, .split_sum = 2, .exact = 1},
        {.dt = 1, .M = 100, .N = 136, .K = 3200, .nb = 1, .alpha = 1.0, .bias = 1, .sr = 1, .sms = 8,
         .tma_store = 1, .bn = 128, .splits = 3, .split_sum = 3, .exact = 1},
        /* the rule on a device whose DRAM peaks at 4 TB/s or more (fast_dram: the H200,
         * bench/NOTES.md step 47), one tile row whose 64-wide split plan leaves a quarter of the
         * SMs idle: short K in splits of 8 slices summed in slices (4 tiles of 64 on 16 SMs in 4
         * splits, not 2), long K on 128-wide tiles (7 tiles of 64 in 2 splits on 20 SMs -> 4 of
         * 128 in 3) */
        {.dt = 0, .M = 120, .N = 250, .K = 2048, .nb = 1, .alpha = 1.0, .bias = 1, .sr = 1, .sms = 16,
         .tma_store = 1, .exact = 1, .fast_dram = 1, .want_bn = 64, .want_splits = 4},
        {.dt = 1, .M = 100, .N = 400, .K = 8192, .nb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1, .sms = 20,
         .tma_store = 1, .exact = 1, .fast_dram = 1, .want_bn = 128, .want_splits = 3},
        {.dt = 0, .M = 200, .N = 264, .K = 64, .nb = 1, .alpha = 0x1p-20, .sr = 1, .sms = 3, .tma_store = 1,
         .exact = 1},
        {.dt = 0, .M = 200, .N = 264, .K = 64, .nb = 1, .alpha = 2048.0, .relu = 1, .sr = 1, .sms = 3, .tma_store = 1,
         .exact = 1},
        {.dt = 0, .M = 200, .N = 264, .K = 64, .nb = 1, .alpha = 0x1p-20, .relu = 1, .sr = 1, .sms = 3, .tma_store = 1,
         .exact = 1},
        /* the exact path's rolled loop (every group below 2^-14) in 256-wide tiles, whose eight
         * groups are unrolled: a ragged N, ReLU, and bf16's zero rows */
        {.dt = 0, .M = 200, .N = 520, .K = 64, .nb = 1, .alpha = 0x1p-20, .sr = 1, .sms = 3, .tma_store = 1,
         .bn = 256, .exact = 1},
        {.dt = 0, .M = 130, .N = 264, .K = 64, .nb = 1, .tb = 1, .alpha = -0x1p-20, .relu = 1, .sr = 1, .sms = 3,
         .tma_store = 1, .bn = 256, .exact = 1},
        {.dt = 1, .M = 200, .N = 264, .K = 64, .nb = 1, .alpha = 1.0, .relu = 1, .sr = 1, .sms = 3, .tma_store = 1,
         .bn = 256, .exact = 1, .zero_rows = 1},
        /* bf16's rare groups (non-finite values: alpha 2^127 takes sums from 2 up past f32's
         * range), whose values are stashed and rounded again at the tile's end (SR_STASH): a mix
         * of inf and finite groups in 256-wide and 64-wide tiles, and with ReLU (-inf to 0) */
        {.dt = 1, .M = 200, .N = 520, .K = 64, .nb = 1, .alpha = 0x1p127, .sr = 1, .sms = 3, .tma_store = 1,
         .bn = 256, .exact = 1},
        {.dt = 1, .M = 130, .N = 200, .K = 64, .nb = 2, .tb = 1, .alpha = 0x1p127, .relu = 1, .sr = 1, .sms = 3,
         .tma_store = 1, .bn = 64, .exact = 1},
        /* f16's rare groups (from 65504 up: alpha 2^17 takes sums from 0.5 up past it, where
         * the straight line's cvt.rz would give 65504 instead of a carry's inf), stashed the
         * same way, beside straight-line groups of the subnormal range (alpha 2^-20) in
         * 64-wide tiles */
        {.dt = 0, .M = 200, .N = 520, .K = 64, .nb = 1, .alpha = 0x1p17, .sr = 1, .sms = 3, .tma_store = 1,
         .bn = 256, .exact = 1},
        {.dt = 0, .M = 130, .N = 200, .K = 64, .nb = 2, .tb = 1, .alpha = 0x1p-20, .sr = 1, .sms = 3,
         .tma_store = 1, .bn = 64, .exact = 1},
        /* rows of zeros (a dead unit's), a -0 every tenth row: SR's straight line takes them,
         * with and without ReLU; bf16 alongside */
        {.dt = 0, .M = 200, .N = 264, .K = 64, .nb = 2, .alpha = 1.0, .sr = 1, .sms = 3, .tma_store = 1, .exact = 1,
         .zero_rows = 1},
        {.dt = 0, .M = 200, .N = 264, .K = 64, .nb = 1, .ta = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1, .sms = 3,
         .tma_store = 1, .exact = 1, .zero_rows = 1},
        {.dt = 0, .M = 200, .N = 264, .K = 64, .nb = 1, .alpha = -1.0, .relu = 1, .sr = 1, .sms = 3, .tma_store = 1,
         .exact = 1, .zero_rows = 1},
        {.dt = 1, .M = 200, .N = 264, .K = 64, .nb = 1, .alpha = 1.0, .relu = 1, .sr = 1, .sms = 3, .tma_store = 1,
         .exact = 1, .zero_rows = 1},
        {.dt = 0, .M = 200, .N = 264, .K = 64, .nb = 1, .alpha = 2048.0, .sms = 3, .tma_store = 1, .exact = 1},
        {.dt = 1, .M = 129, .N = 140, .K = 50, .nb = 1, .ta = 1, .pad = 8, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1,
         .kernel = 2, .exact = 1},
        {.dt = 0, .M = 129, .N = 140, .K = 50, .nb = 1, .pad = 8, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1,
         .kernel = 2, .exact = 1},
        /* the tile order's groups (KILN_WGMMA_GROUP_M), each against the rule's 8 on the same
         * inputs (the same bits): 3 rows a group over 5 tile rows (a short last group) in two
         * batches, split in two; one row a group (row-major order) with TMA stores and SR; 2
         * with multicast (groups of cluster rows, 3 of them) */
        {.dt = 0, .M = 600, .N = 300, .K = 96, .nb = 2, .alpha = 1.0, .bias = 1, .relu = 1, .sms = 3, .bn = 64,
         .splits = 2, .exact = 1},
        {.dt = 0, .M = 600, .N = 300, .K = 96, .nb = 2, .alpha = 1.0, .bias = 1, .relu = 1, .sms = 3, .bn = 64,
         .splits = 2, .same_bits = 1, .exact = 1, .group_m = 3},
        {.dt = 1, .M = 520, .N = 392, .K = 64, .nb = 1, .tb = 1, .alpha = 1.0, .sr = 1, .sms = 5, .tma_store = 1,
         .bn = 128, .exact = 1},
        {.dt = 1, .M = 520, .N = 392, .K = 64, .nb = 1, .tb = 1, .alpha = 1.0, .sr = 1, .sms = 5, .tma_store = 1,
         .bn = 128, .same_bits = 1, .exact = 1, .group_m = 1},
        /* B's loads with the evict_first policy (KILN_WGMMA_BHINT: 2 on, 1 off, same inputs, the same
         * bits): one tile row with the whole epilogue and SR, exact sums; 64-row tiles of one
         * consumer (fc9216 fprop's plan) on a K-major B; split 64-wide tiles summed in the workspace */
        {.dt = 0, .M = 128, .N = 520, .K = 200, .nb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1, .sms = 3,
         .tma_store = 1, .exact = 1, .bhint = 2},
        {.dt = 0, .M = 128, .N = 520, .K = 200, .nb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1, .sms = 3,
         .tma_store = 1, .same_bits = 1, .exact = 1, .bhint = 1},
        {.dt = 1, .M = 120, .N = 200, .K = 264, .nb = 1, .tb = 1, .alpha = 1.0, .sms = 4, .tma_store = 1, .bn = 64,
         .kpair = 3, .bhint = 2, .stats = 1},
        {.dt = 1, .M = 120, .N = 200, .K = 264, .nb = 1, .tb = 1, .alpha = 1.0, .sms = 4, .tma_store = 1, .bn = 64,
         .kpair = 3, .same_bits = 1, .bhint = 1},
        {.dt = 0, .M = 100, .N = 136, .K = 520, .nb = 2, .alpha = 0.5, .beta = 0.25, .bias = 1, .sms = 6,
         .tma_store = 1, .bn = 64, .splits = 3, .split_sum = 2, .bhint = 2},
        {.dt = 0, .M = 100, .N = 136, .K = 520, .nb = 2, .alpha = 0.5, .beta = 0.25, .bias = 1, .sms = 6,
         .tma_store = 1, .bn = 64, .splits = 3, .split_sum = 2, .same_bits = 1, .bhint = 1},
        {.dt = 0, .M = 700, .N = 264, .K = 64, .nb = 1, .ta = 1, .alpha = 1.0, .bias = 1, .sms = 4, .tma_store = 1,
         .bn = 128, .mcast = 2, .mc_pairs = 2},
        {.dt = 0, .M = 700, .N = 264, .K = 64, .nb = 1, .ta = 1, .alpha = 1.0, .bias = 1, .sms = 4, .tma_store = 1,
         .bn = 128, .same_bits = 1, .mcast = 2, .mc_pairs = 2, .group_m = 2},
        /* TMA multicast of B in clusters of two (the last two columns: 2 on, 1 off), each on
         * against off on the same inputs (the same bits): exact sums with the whole epilogue
         * and SR, one cluster walking six pairs; an odd tile-row count (the last pair's second
         * block past M) with K-major B (half boxes), beta, TMA stores; the register epilogue
         * on a ragged N, batches, the same past-M block; 128-wide tiles of MN-major B (one box
         * each); tf32; batches sharing B */
        {.dt = 0, .M = 400, .N = 520, .K = 128, .nb = 1, .ta = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1,
         .sms = 2, .tma_store = 1, .exact = 1, .mcast = 2},
        {.dt = 0, .M = 400, .N = 520, .K = 128, .nb = 1, .ta = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1,
         .sms = 2, .tma_store = 1, .same_bits = 1, .exact = 1, .mcast = 1},
        {.dt = 0, .M = 300, .N = 520, .K = 200, .nb = 1, .ta = 1, .tb = 1, .pad = 8, .alpha = -0.75, .beta = 0.5,
         .bias = 1, .relu = 1, .sms = 4, .tma_store = 1, .mcast = 2, .mc_pairs = 2},
        {.dt = 0, .M = 300, .N = 520, .K = 200, .nb = 1, .ta = 1, .tb = 1, .pad = 8, .alpha = -0.75, .beta = 0.5,
         .bias = 1, .relu = 1, .sms = 4, .tma_store = 1, .same_bits = 1, .mcast = 1},
        {.dt = 1, .M = 260, .N = 300, .K = 130, .nb = 2, .alpha = 1.0, .bias = 1, .sr = 1, .sms = 3, .bn = 256,
         .mcast = 2, .mc_pairs = 1},
        {.dt = 1, .M = 260, .N = 300, .K = 130, .nb = 2, .alpha = 1.0, .bias = 1, .sr = 1, .sms = 3, .bn = 256,
         .same_bits = 1, .mcast = 1},
        {.dt = 1, .M = 300, .N = 264, .K = 330, .nb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1, .sms = 5,
         .tma_store = 1, .bn = 128, .mcast = 2, .mc_pairs = 2},
        {.dt = 1, .M = 300, .N = 264, .K = 330, .nb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1, .sms = 5,
         .tma_store = 1, .bn = 128, .same_bits = 1, .mcast = 1},
        {.dt = 2, .M = 260, .N = 300, .K = 100, .nb = 1, .tb = 1, .alpha = 1.0, .bias = 1, .sms = 3, .bn = 256,
         .mcast = 2},
        {.dt = 2, .M = 260, .N = 300, .K = 100, .nb = 1, .tb = 1, .alpha = 1.0, .bias = 1, .sms = 3, .bn = 256,
         .same_bits = 1, .mcast = 1},
        {.dt = 0, .M = 200, .N = 264, .K = 64, .nb = 3, .ta = 1, .b_bcast = 1, .pad = 16, .alpha = 2.0, .bias = 1,
         .sms = 4, .tma_store = 1, .mcast = 2},
        {.dt = 0, .M = 200, .N = 264, .K = 64, .nb = 3, .ta = 1, .b_bcast = 1, .pad = 16, .alpha = 2.0, .bias = 1,
         .sms = 4, .tma_store = 1, .same_bits = 1, .mcast = 1},
        /* multicast on one consumer's 64-row tiles (KILN_WGMMA_MCAST=1 where the rule picks them,
         * fc1000 bprop's plan): the idle consumer warpgroup takes part in the cluster's closing
         * barrier (it had returned before it: the cluster hung) */
        {.dt = 1, .M = 200, .N = 264, .K = 1000, .nb = 1, .alpha = 1.0, .bias = 1, .sms = 8, .tma_store = 1, .bn = 128,
         .kpair = 3, .mcast = 2, .mc_pairs = 2},
        {.dt = 1, .M = 200, .N = 264, .K = 1000, .nb = 1, .alpha = 1.0, .bias = 1, .sms = 8, .tma_store = 1, .bn = 128,
         .kpair = 3, .same_bits = 1, .mcast = 1},
        /* 192-wide tiles (three 64-wide boxes of B and of the C staging, 96 accumulators, six
         * 32-column epilogue groups: the SR loop's unroll of 4 leaves a remainder): MN-major B
         * with a ragged last tile, the whole epilogue, exact SR bits; K-major B (one 192-row
         * box) with beta and batches; the register epilogue on a ragged N; two staging
         * buffers at K = 128 (several tiles per block); split 3 ways through the workspace
         * (exact) and 2 in slices; tf32 (K-major); the rule's own pick on one tile row with
         * more 128-wide tiles than SMs (fc36864 bprop's case, scaled to 4 SMs) */
        {.dt = 0, .M = 130, .N = 456, .K = 200, .nb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1, .sms = 3,
         .tma_store = 1, .bn = 192, .exact = 1},
        {.dt = 1, .M = 200, .N = 392, .K = 150, .nb = 2, .ta = 1, .tb = 1, .pad = 8, .alpha = -0.75, .beta = 0.5,
         .bias = 1, .sr = 1, .sms = 3, .tma_store = 1, .bn = 192},
        {.dt = 0, .M = 129, .N = 391, .K = 70, .nb = 1, .tb = 1, .alpha = 2.0, .bias = 1, .relu = 1, .sms = 2,
         .bn = 192},
        {.dt = 1, .M = 400, .N = 392, .K = 128, .nb = 1, .ta = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1,
         .sms = 2, .tma_store = 1, .bn = 192, .cbufs = 2, .exact = 1},
        {.dt = 0, .M = 130, .N = 384, .K = 900, .nb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1, .sms = 8,
         .tma_store = 1, .bn = 192, .splits = 3, .split_sum = 2, .exact = 1},
        {.dt = 1, .M = 130, .N = 384, .K = 900, .nb = 1, .tb = 1, .alpha = 1.0, .beta = -1.0, .sms = 8,
         .tma_store = 1, .bn = 192, .splits = 2, .split_sum = 3},
        {.dt = 2, .M = 130, .N = 400, .K = 100, .nb = 1, .tb = 1, .pad = 4, .alpha = 1.0, .bias = 1, .sms = 3,
         .bn = 192},
        {.dt = 0, .M = 100, .N = 1536, .K = 192, .nb = 1, .alpha = 1.0, .bias = 1, .sr = 1, .sms = 4, .tma_store = 1,
         .exact = 1},
        /* 192-wide tiles with TMA multicast of B, on against off: MN-major B (three boxes, the
         * pair's ranks load two and one), K-major B (96 rows each) */
        {.dt = 0, .M = 300, .N = 400, .K = 200, .nb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1, .sms = 4,
         .tma_store = 1, .bn = 192, .exact = 1, .mcast = 2, .mc_pairs = 2},
        {.dt = 0, .M = 300, .N = 400, .K = 200, .nb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1, .sms = 4,
         .tma_store = 1, .bn = 192, .same_bits = 1, .exact = 1, .mcast = 1},
        {.dt = 1, .M = 260, .N = 392, .K = 130, .nb = 1, .tb = 1, .alpha = -0.75, .beta = 0.5, .bias = 1, .sms = 3,
         .tma_store = 1, .bn = 192, .mcast = 2},
        {.dt = 1, .M = 260, .N = 392, .K = 130, .nb = 1, .tb = 1, .alpha = -0.75, .beta = 0.5, .bias = 1, .sms = 3,
         .tma_store = 1, .bn = 192, .same_bits = 1, .mcast = 1},
        /* 64-wide tiles (one 64-wide box of B and of the C staging, two of f32's; 32
         * accumulators, two 32-column epilogue groups: fewer than the SR loop's unroll of 4):
         * MN-major B with a ragged last tile, the whole epilogue, exact SR bits; K-major B with
         * beta and batches; the register epilogue on a ragged N; two staging buffers at K =
         * 128; split 3 ways through the workspace (exact), 2 and 4 in slices, 2 in a cluster
         * against the workspace (the same bits), 4 in a cluster; tf32 staged and
         * from the registers; multicast of B on against off, MN-major (one box: rank 0 loads
         * it for both) and K-major (32 rows each) */
        {.dt = 0, .M = 130, .N = 200, .K = 200, .nb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1, .sms = 3,
         .tma_store = 1, .bn = 64, .exact = 1},
        {.dt = 1, .M = 200, .N = 136, .K = 150, .nb = 2, .ta = 1, .tb = 1, .pad = 8, .alpha = -0.75, .beta = 0.5,
         .bias = 1, .sr = 1, .sms = 3, .tma_store = 1, .bn = 64},
        {.dt = 0, .M = 129, .N = 131, .K = 70, .nb = 1, .tb = 1, .alpha = 2.0, .bias = 1, .relu = 1, .sms = 2,
         .bn = 64},
        {.dt = 1, .M = 400, .N = 200, .K = 128, .nb = 1, .ta = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1,
         .sms = 2, .tma_store = 1, .bn = 64, .cbufs = 2, .exact = 1},
        {.dt = 0, .M = 130, .N = 128, .K = 900, .nb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1, .sms = 8,
         .tma_store = 1, .bn = 64, .splits = 3, .split_sum = 2, .exact = 1},
        {.dt = 1, .M = 130, .N = 128, .K = 900, .nb = 1, .tb = 1, .alpha = 1.0, .beta = -1.0, .sms = 8,
         .tma_store = 1, .bn = 64, .splits = 2, .split_sum = 3},
        {.dt = 0, .M = 130, .N = 200, .K = 900, .nb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1, .sms = 16,
         .tma_store = 1, .bn = 64, .splits = 2, .split_sum = 1, .exact = 1},
        {.dt = 0, .M = 130, .N = 200, .K = 900, .nb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1, .sms = 16,
         .tma_store = 1, .bn = 64, .splits = 2, .split_sum = 2, .same_bits = 1, .exact = 1},
        {.dt = 1, .M = 100, .N = 120, .K = 1100, .nb = 1, .tb = 1, .alpha = 0.5, .beta = 1.0, .sms = 8, .bn = 64,
         .splits = 4, .split_sum = 1},
        {.dt = 0, .M = 100, .N = 120, .K = 1100, .nb = 1, .alpha = 1.0, .bias = 1, .sr = 1, .sms = 8,
         .tma_store = 1, .bn = 64, .splits = 4, .exact = 1},
        {.dt = 2, .M = 130, .N = 136, .K = 100, .nb = 1, .tb = 1, .pad = 4, .alpha = 1.0, .bias = 1, .sms = 3,
         .tma_store = 1, .bn = 64},
        {.dt = 2, .M = 70, .N = 100, .K = 700, .nb = 1, .tb = 1, .alpha = 0.5, .beta = 1.0, .relu = 1, .sms = 2,
         .bn = 64},
        {.dt = 0, .M = 300, .N = 200, .K = 200, .nb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1, .sms = 4,
         .tma_store = 1, .bn = 64, .exact = 1, .mcast = 2, .mc_pairs = 2},
        {.dt = 0, .M = 300, .N = 200, .K = 200, .nb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1, .sms = 4,
         .tma_store = 1, .bn = 64, .same_bits = 1, .exact = 1, .mcast = 1},
        {.dt = 1, .M = 260, .N = 136, .K = 130, .nb = 1, .tb = 1, .alpha = -0.75, .beta = 0.5, .bias = 1, .sms = 3,
         .tma_store = 1, .bn = 64, .mcast = 2},
        {.dt = 1, .M = 260, .N = 136, .K = 130, .nb = 1, .tb = 1, .alpha = -0.75, .beta = 0.5, .bias = 1, .sms = 3,
         .tma_store = 1, .bn = 64, .same_bits = 1, .mcast = 1},
        /* k pairs (KILN_WGMMA_KPAIR=1: 64 x 64 tiles, the consumers taking alternate k slices,
         * consumer 1's sums through shared memory): ragged M, N and an odd slice count with the
         * whole epilogue and exact SR bits (MN-major B), K-major B with beta and batches, one k
         * slice (consumer 1 holds none), the register epilogue on a ragged N, tf32, bf16 staged;
         * then the same inputs as the first with k pairs off: the same bits (sums are exact) */
        {.dt = 0, .M = 130, .N = 200, .K = 1000, .nb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1, .sms = 16,
         .tma_store = 1, .exact = 1, .kpair = 2},
        {.dt = 0, .M = 130, .N = 200, .K = 1000, .nb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1, .sms = 16,
         .tma_store = 1, .exact = 1, .same_bits = 1, .kpair = 1},
        {.dt = 1, .M = 200, .N = 136, .K = 150, .nb = 2, .ta = 1, .tb = 1, .pad = 8, .alpha = -0.75, .beta = 0.5,
         .bias = 1, .sr = 1, .sms = 3, .tma_store = 1, .kpair = 2},
        {.dt = 0, .M = 70, .N = 100, .K = 40, .nb = 1, .alpha = 2.0, .bias = 1, .relu = 1, .sms = 2, .tma_store = 1,
         .kpair = 2},
        {.dt = 0, .M = 129, .N = 131, .K = 300, .nb = 1, .tb = 1, .alpha = 2.0, .bias = 1, .relu = 1, .sms = 2,
         .kpair = 2},
        {.dt = 2, .M = 130, .N = 136, .K = 300, .nb = 1, .tb = 1, .pad = 4, .alpha = 1.0, .bias = 1, .sms = 3,
         .tma_store = 1, .kpair = 2},
        {.dt = 1, .M = 256, .N = 192, .K = 128, .nb = 1, .alpha = 1.0, .bias = 1, .sr = 1, .sms = 4, .tma_store = 1,
         .exact = 1, .kpair = 2},
        /* k pairs 128 wide (KILN_WGMMA_KPAIR=1 with KILN_WGMMA_BN=128): ragged M and N, the whole
         * epilogue with exact SR bits, an odd slice count; the same inputs with 64-wide k pairs:
         * the same bits; K-major B with beta and batches at the fewest stages asked for
         * (KILN_WGMMA_STAGES=1: the ring's four, two a consumer; fewer deadlocked); the register
         * epilogue; the cooperative kernel at one stage asked for (two) */
        {.dt = 0, .M = 130, .N = 300, .K = 1000, .nb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1, .sms = 16,
         .tma_store = 1, .exact = 1, .kpair = 2, .bn = 128},
        {.dt = 0, .M = 130, .N = 300, .K = 1000, .nb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1, .sms = 16,
         .tma_store = 1, .exact = 1, .same_bits = 1, .kpair = 2},
        {.dt = 1, .M = 200, .N = 300, .K = 150, .nb = 2, .ta = 1, .tb = 1, .pad = 8, .alpha = -0.75, .beta = 0.5,
         .bias = 1, .sr = 1, .sms = 3, .tma_store = 1, .kpair = 2, .bn = 128, .stages = 1},
        {.dt = 0, .M = 70, .N = 200, .K = 330, .nb = 1, .alpha = 2.0, .bias = 1, .relu = 1, .sms = 2, .kpair = 2, .bn = 128},
        {.dt = 0, .M = 200, .N = 136, .K = 330, .nb = 1, .alpha = 1.0, .bias = 1, .sr = 1, .sms = 2, .tma_store = 1,
         .stages = 1},
        /* one consumer on 64-row tiles (KILN_WGMMA_KPAIR=one): 128 wide, ragged, the whole
         * epilogue with exact SR bits and an odd slice count, then the same inputs in k pairs:
         * the same bits; K-major B with beta and batches at the fewest stages asked for (two);
         * 64 wide from the registers; tf32 */
        {.dt = 0, .M = 130, .N = 300, .K = 1000, .nb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1, .sms = 16,
         .tma_store = 1, .exact = 1, .kpair = 3, .bn = 128},
        {.dt = 0, .M = 130, .N = 300, .K = 1000, .nb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1, .sms = 16,
         .tma_store = 1, .exact = 1, .same_bits = 1, .kpair = 2, .bn = 128},
        {.dt = 1, .M = 200, .N = 300, .K = 150, .nb = 2, .ta = 1, .tb = 1, .pad = 8, .alpha = -0.75, .beta = 0.5,
         .bias = 1, .sr = 1, .sms = 3, .tma_store = 1, .kpair = 3, .bn = 128, .stages = 1},
        {.dt = 0, .M = 70, .N = 200, .K = 330, .nb = 1, .alpha = 2.0, .bias = 1, .relu = 1, .sms = 2, .kpair = 3},
        {.dt = 2, .M = 130, .N = 136, .K = 300, .nb = 1, .tb = 1, .pad = 4, .alpha = 1.0, .bias = 1, .sms = 3,
         .tma_store = 1, .kpair = 3},
        /* one consumer's 64-row tiles 128 wide with their bias in registers (BIAS_EARLY), the
         * whole epilogue with exact SR bits (one item a block: the words made at the item's
         * start, EARLY_SR); the same on the cooperative 128 x 128 tiles, exact; then those with
         * two items a block (words in the epilogue): the same bits */
        {.dt = 0, .M = 130, .N = 320, .K = 1000, .nb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1, .sms = 16,
         .tma_store = 1, .exact = 1, .kpair = 3, .bn = 128},
        {.dt = 1, .M = 200, .N = 256, .K = 520, .nb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1, .sms = 8,
         .tma_store = 1, .exact = 1, .bn = 128},
        {.dt = 1, .M = 200, .N = 256, .K = 520, .nb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1, .sms = 2,
         .tma_store = 1, .exact = 1, .same_bits = 1, .bn = 128},
        /* KILN_WGMMA_EARLY_SR: off where the rule has it (one item a block), on with two items a
         * block, on one consumer's 64-row tiles 64 wide (the bias in registers too) and off on
         * them, each exact */
        {.dt = 1, .M = 200, .N = 256, .K = 520, .nb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1, .sms = 8,
         .tma_store = 1, .exact = 1, .bn = 128, .early_sr = 1},
        {.dt = 1, .M = 200, .N = 256, .K = 520, .nb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1, .sms = 2,
         .tma_store = 1, .exact = 1, .bn = 128, .early_sr = 2},
        {.dt = 0, .M = 130, .N = 320, .K = 1000, .nb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1, .sms = 16,
         .tma_store = 1, .exact = 1, .kpair = 3, .bn = 64, .early_sr = 2},
        {.dt = 1, .M = 130, .N = 320, .K = 1000, .nb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1, .sms = 16,
         .tma_store = 1, .exact = 1, .kpair = 3, .bn = 64, .early_sr = 1},
        /* k pairs with an odd slice count (13) on random (inexact) inputs: one block running all
         * twelve tiles, so that the consumers' parities swap from tile to tile, then a block a
         * tile (every tile starting at an even ring position): the same bits */
        {.dt = 0, .M = 130, .N = 200, .K = 830, .nb = 1, .alpha = 1.0, .bias = 1, .sr = 1, .sms = 1, .tma_store = 1,
         .kpair = 2},
        {.dt = 0, .M = 130, .N = 200, .K = 830, .nb = 1, .alpha = 1.0, .bias = 1, .sr = 1, .sms = 16, .tma_store = 1,
         .same_bits = 1, .kpair = 2},
        /* k pairs in clusters of two sharing B by multicast (KILN_WGMMA_MCAST=1 with k pairs), a
         * ring of 13 and 12 stages (KILN_WGMMA_STAGES): MN-major B with an odd count of 64-row
         * tiles (the last cluster's second block past M), exact SR bits; the same inputs
         * without multicast and at 7 stages give the same bits; K-major B with beta, batches */
        {.dt = 0, .M = 130, .N = 200, .K = 1000, .nb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1, .sms = 16,
         .tma_store = 1, .exact = 1, .kpair = 2, .mcast = 2, .stages = 13},
        {.dt = 0, .M = 130, .N = 200, .K = 1000, .nb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1, .sms = 16,
         .tma_store = 1, .exact = 1, .same_bits = 1, .kpair = 2, .mcast = 1},
        {.dt = 1, .M = 200, .N = 136, .K = 150, .nb = 2, .ta = 1, .tb = 1, .pad = 8, .alpha = -0.75, .beta = 0.5,
         .bias = 1, .sr = 1, .sms = 4, .tma_store = 1, .kpair = 2, .mcast = 2, .mc_pairs = 2, .stages = 12},
        /* the rule's schedule: the cooperative kernel in row order for the plain 16-bit updates of
         * K 33-128 with four waves of tiles or more (f16 and bf16, a ragged M, batches, K = 100 in
         * two slices); ping-pong for the other plain f16 K <= 128 updates with TMA stores and at
         * least a wave of 128 x 128 tiles (a ragged M, batches, MN-major A too; K = 32); the
         * cooperative kernel with ReLU, a bias, SR, in bf16, for K > 128, with too few tiles, with
         * beta */
        {.dt = 0, .M = 300, .N = 264, .K = 128, .nb = 1, .alpha = 1.0, .sms = 1, .tma_store = 1, .exact = 1,
         .sched_rule = 1, .pp = 0, .want_group = 1},
        {.dt = 1, .M = 300, .N = 264, .K = 128, .nb = 1, .alpha = 1.0, .sms = 1, .tma_store = 1, .exact = 1,
         .sched_rule = 1, .pp = 0, .want_group = 1},
        {.dt = 0, .M = 257, .N = 136, .K = 100, .nb = 3, .ta = 1, .alpha = 0.5, .sms = 2, .tma_store = 1,
         .sched_rule = 1, .pp = 0, .want_group = 1},
        {.dt = 0, .M = 300, .N = 264, .K = 32, .nb = 1, .alpha = 1.0, .sms = 1, .tma_store = 1, .exact = 1,
         .sched_rule = 1, .pp = 1},
        {.dt = 0, .M = 300, .N = 264, .K = 128, .nb = 1, .alpha = 1.0, .sms = 3, .tma_store = 1, .exact = 1,
         .sched_rule = 1, .pp = 1},
        {.dt = 0, .M = 257, .N = 136, .K = 100, .nb = 2, .ta = 1, .alpha = 0.5, .sms = 2, .tma_store = 1,
         .sched_rule = 1, .pp = 1},
        {.dt = 0, .M = 257, .N = 136, .K = 100, .nb = 2, .ta = 1, .alpha = 0.5, .relu = 1, .sms = 2, .tma_store = 1,
         .sched_rule = 1, .pp = 0},
        {.dt = 0, .M = 300, .N = 264, .K = 128, .nb = 1, .alpha = 1.0, .bias = 1, .sms = 3, .tma_store = 1,
         .sched_rule = 1, .pp = 0},
        {.dt = 0, .M = 300, .N = 264, .K = 128, .nb = 1, .alpha = 1.0, .sr = 1, .sms = 3, .tma_store = 1, .exact = 1,
         .sched_rule = 1, .pp = 0},
        {.dt = 1, .M = 300, .N = 264, .K = 128, .nb = 1, .alpha = 1.0, .sms = 3, .tma_store = 1, .sched_rule = 1,
         .pp = 0},
        {.dt = 0, .M = 300, .N = 264, .K = 200, .nb = 1, .alpha = 1.0, .sms = 3, .tma_store = 1, .sched_rule = 1,
         .pp = 0},
        {.dt = 0, .M = 300, .N = 264, .K = 128, .nb = 1, .alpha = 1.0, .sms = 16, .tma_store = 1, .sched_rule = 1,
         .pp = 0},
        {.dt = 0, .M = 300, .N = 264, .K = 128, .nb = 1, .alpha = 1.0, .beta = 0.5, .sms = 3, .tma_store = 1,
         .sched_rule = 1, .pp = 0},
        /* nor where a knob the ping-pong kernel lacks is forced: multicast, k pairs, two C buffers */
        {.dt = 0, .M = 300, .N = 264, .K = 128, .nb = 1, .alpha = 1.0, .sms = 3, .tma_store = 1, .sched_rule = 1,
         .pp = 0, .mcast = 2},
        {.dt = 0, .M = 300, .N = 264, .K = 128, .nb = 1, .alpha = 1.0, .sms = 3, .tma_store = 1, .sched_rule = 1,
         .pp = 0, .kpair = 2},
        {.dt = 0, .M = 300, .N = 264, .K = 128, .nb = 1, .alpha = 1.0, .sms = 3, .tma_store = 1, .sched_rule = 1,
         .pp = 0, .cbufs = 2},
        /* the rule's own 64-wide picks (every 64-wide tile in one wave of the "device"): 5
         * tiles split 2 ways (33 slices), 4 tiles split 4 ways through the workspace (not in
         * slices), 14 tiles on two tile rows unsplit */
        {.dt = 0, .M = 100, .N = 300, .K = 2100, .nb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1, .sms = 16,
         .tma_store = 1, .exact = 1, .want_bn = 64},
        {.dt = 1, .M = 64, .N = 200, .K = 4200, .nb = 1, .tb = 1, .alpha = 1.0, .beta = 0.5, .sms = 16, .tma_store = 1,
         .want_bn = 64},
        {.dt = 2, .M = 130, .N = 400, .K = 960, .nb = 1, .tb = 1, .alpha = 1.0, .bias = 1, .sms = 16, .tma_store = 1,
         .want_bn = 64},
        /* 8 tiles of 64 on two tile rows with 129 slices: 4 tiles of 128 in two splits */
        {.dt = 0, .M = 130, .N = 256, .K = 8200, .nb = 1, .alpha = 1.0, .bias = 1, .relu = 1, .sr = 1, .sms = 8,
         .tma_store = 1, .exact = 1, .want_bn = 128},
    };
    /* two staging buffers for the K=128 weight updates (256- and 128-wide tiles), one for
     * deep K (the squares, an fprop) */
    CHECK_INT(rule_cbufs(9216, 4096, 128), 2);
    CHECK_INT(rule_cbufs(4096, 1000, 128), 2);
    CHECK_INT(rule_cbufs(4096, 4096, 4096), 1);
    CHECK_INT(rule_cbufs(128, 4096, 9216), 1);
    /* (128-wide tiles forced in these two groups: the rule's own width for the shapes below
     * is 64) split sums through the workspace by default; in a cluster when asked, where every
     * tile's cluster fits the first wave (fc4096 fprop: 32 tiles; forced 4 splits of 40
     * tiles on 132 SMs do not fit, nor 9 splits), never through the workspace when so asked */
    CHECK_INT(rule_cluster(128, 4096, 4096, 132, 128, 0, 0), 0);
    CHECK_INT(rule_cluster(128, 4096, 4096, 132, 128, 0, 1), 1);
    CHECK_INT(rule_cluster(128, 4096, 4096, 132, 128, 4, 1), 1);
    CHECK_INT(rule_cluster(128, 4096, 4096, 132, 128, 4, 2), 0);
    CHECK_INT(rule_cluster(128, 5120, 4096, 132, 128, 4, 1), 0);
    CHECK_INT(rule_cluster(128, 1000, 4608, 132, 128, 9, 1), 0);
    /* split sums in slices by default from 4 splits up (fc1000 fprop: 8 tiles, 8 splits of 8
     * slices), through the last block below (fc4096 and fc9216 fprop: 32 tiles, 2 splits;
     * fc36864 fprop: 24 tiles, 3; fc1000 bprop: unsplit) or when forced so; in slices when
     * forced so; not where the workspace or a cluster is asked for, nor where the items
     * overflow the first wave */
    CHECK_INT(rule_slices(128, 1000, 4096, 132, 128, 0, 0), 8);
    CHECK_INT(rule_slices(128, 4096, 4096, 132, 128, 0, 0), 0);
    CHECK_INT(rule_slices(128, 4096, 9216, 132, 128, 0, 0), 0);
    CHECK_INT(rule_slices(128, 3072, 36864, 132, 128, 0, 0), 0);
    CHECK_INT(rule_slices(128, 4096, 1000, 132, 128, 0, 0), 0);
    CHECK_INT(rule_slices(128, 4096, 4096, 132, 128, 4, 0), 4);
    CHECK_INT(rule_slices(128, 4096, 4096, 132, 128, 3, 0), 0);
    CHECK_INT(rule_slices(128, 4096, 4096, 132, 128, 0, 2), 0);
    CHECK_INT(rule_slices(128, 4096, 4096, 132, 128, 0, 1), 0);
    CHECK_INT(rule_slices(128, 5120, 4096, 132, 128, 4, 3), 0);
    CHECK_INT(rule_slices(128, 4096, 4096, 132, 128, 3, 3), 3);
    /* tile widths: one row of tiles with more 128-wide tiles than SMs takes the width whose
     * rounds keep DRAM busiest (fc36864 bprop 192, fc25088 bprop 256, and the last case above
     * on 4 SMs: 8 tiles of 192 against 12 of 128 and 6 of 256); fc9216 bprop (72 tiles),
     * the fprop shapes, the squares and the updates as before */
    CHECK_INT(rule_bn(128, 36864, 3072, 132), 192);
    CHECK_INT(rule_bn(128, 25088, 4096, 132), 256);
    /* ... on as many blocks as make the rounds even: fc36864 bprop 96 (192 tiles), fc25088
     * bprop one wave of 98; tiles on several rows a full grid (the 4096 square); a forced
     * grid (KILN_WGMMA_GRID) at most one block an SM */
    CHECK_INT(rule_grid(128, 36864, 3072, 0), 96);
    CHECK_INT(rule_grid(128, 25088, 4096, 0), 98);
    CHECK_INT(rule_grid(4096, 4096, 4096, 0), 132);
    CHECK_INT(rule_grid(128, 36864, 3072, 64), 64);
    CHECK_INT(rule_grid(128, 36864, 3072, 500), 132);
    { /* the same even rounds where a split launch runs unsplit (no workspace) */
        kiln_gemm_wgmma_launch l;
        rule_launch(128, 36864, 3072, 132, 0, 2, 2, &l);
        CHECK_INT((int)l.w[26], 2);
        kiln__cuda_gemm_wgmma_unsplit(&l, 132, 0);
        CHECK_INT((int)l.grid, 96);
        CHECK_INT((int)l.w[26], 1);
        /* and a forced grid applies again there */
        rule_launch(128, 36864, 3072, 132, 0, 2, 2, &l);
        kiln__cuda_gemm_wgmma_unsplit(&l, 132, 64);
        CHECK_INT((int)l.grid, 64);
        rule_launch(128, 36864, 3072, 132, 0, 2, 2, &l);
        kiln__cuda_gemm_wgmma_unsplit(&l, 132, 500);
        CHECK_INT((int)l.grid, 132);
    }
    CHECK_INT(rule_bn(100, 1536, 192, 4), 192);
    CHECK_INT(rule_bn(128, 9216, 4096, 132), 128);
    CHECK_INT(rule_bn(4096, 4096, 4096, 132), 256);
    CHECK_INT(rule_bn(36864, 3072, 128, 132), 256);
    CHECK_INT(rule_bn(4096, 1000, 128, 132), 128);
    /* 64-wide tiles wherever they all fit one wave: the fprop shapes but fc9216's bprop
     * (144 > 132), fc1000 bprop, the 1024 square; not N <= 128, not where they overflow the
     * wave (the 2048 square: 512 tiles), not on fewer SMs (fc4096 fprop on 40: 128 wide) */
    CHECK_INT(rule_bn(128, 4096, 4096, 132), 64);
    CHECK_INT(rule_bn(128, 4096, 9216, 132), 64);
    CHECK_INT(rule_bn(128, 4096, 25088, 132), 64);
    CHECK_INT(rule_bn(128, 3072, 36864, 132), 64);
    CHECK_INT(rule_bn(128, 1000, 4096, 132), 64);
    CHECK_INT(rule_bn(128, 4096, 1000, 132), 64);
    CHECK_INT(rule_bn(1024, 1024, 1024, 132), 64);
    CHECK_INT(rule_bn(4096, 128, 4096, 132), 128);
    CHECK_INT(rule_bn(2048, 2048, 2048, 132), 256);
    CHECK_INT(rule_bn(128, 4096, 4096, 40), 128);
    /* their k splits: as many as the wave holds (2 for 64 tiles and 48, 4 for fc1000 fprop's
     * 16), at least 16 slices each (fc1000 bprop: 16 slices, unsplit), summed by the last
     * block (4 splits are not summed in slices at 64 wide); fc4096 fprop on 40 SMs, 128 wide,
     * as before: 3; the bprop shapes unsplit; fc4096 and fc9216 fprop unsplit in 64-row tiles
     * (below) */
    CHECK_INT(rule_splits(128, 4096, 4096, 132), 1);
    CHECK_INT(rule_splits(128, 4096, 9216, 132), 1);
    CHECK_INT(rule_splits(128, 4096, 10240, 132), 2);
    CHECK_INT(rule_splits(128, 4096, 25088, 132), 2);
    CHECK_INT(rule_splits(128, 3072, 36864, 132), 2);
    CHECK_INT(rule_splits(128, 1000, 4096, 132), 4);
    CHECK_INT(rule_slices(128, 1000, 4096, 132, 0, 0, 0), 0);
    CHECK_INT(rule_splits(128, 4096, 1000, 132), 1);
    CHECK_INT(rule_splits(1024, 1024, 1024, 132), 1);
    CHECK_INT(rule_splits(128, 4096, 4096, 40), 3);
    CHECK_INT(rule_splits(128, 9216, 4096, 132), 1);
    /* 64-row tiles (one consumer) where the 64-wide tiles are unsplit and fill at most half the
     * SMs: fc1000 bprop (64 tiles of 128 rows: 128 of 64); not the split fc4096 / fc1000 fprop,
     * not the 1024 square (128 tiles), not M <= 64, not fc9216 bprop (128 wide) */
    CHECK_INT(rule_kpair(128, 4096, 1000, 132), 2); /* one consumer */
    /* 128 wide where A's K-major rows straddle 128-byte lines and the 64 x 128 tiles fill more
     * than a quarter of the SMs and at most a wave; the same shape with rows 2048 bytes apart
     * (packed K = 1024, or K = 1000 in a wider tensor) in 64-wide ones; 32 tiles: 64 wide;
     * more than a wave of them: none */
    CHECK_INT(rule_kp_width(128, 4096, 1000, 1000), 128);
    CHECK_INT(rule_kp_width(256, 4096, 1000, 1000), 128);
    CHECK_INT(rule_kp_width(192, 4096, 1000, 1000), 128);
    CHECK_INT(rule_kp_width(128, 4096, 1024, 1024), 64);
    CHECK_INT(rule_kp_width(128, 4096, 1000, 1024), 64);
    CHECK_INT(rule_kp_width(128, 2048, 1000, 1000), 64);
    CHECK_INT(rule_kp_width(256, 4096, 1024, 1024), 0);
    CHECK_INT(rule_kp_width(512, 4096, 1000, 1000), 0);
    /* one consumer on 64 x 64 tiles in place of split 64-wide ones where the 64-row tiles fill
     * a wave to within 1/32 (128 or 132 of them on 132 SMs) and K is at most 144 slices: fc4096
     * fprop / bprop, fc9216 fprop, N 4224, a ragged K (4000) and 112 rows; not K 10240, not 120
     * tiles (N 3840), not two waves (N 8192), not on 40 SMs, not 64 rows */
    CHECK_INT(rule_kpair(128, 4096, 4096, 132), 2);
    CHECK_INT(rule_kp_width(128, 4096, 4096, 4096), 64);
    CHECK_INT(rule_kpair(128, 4096, 9216, 132), 2);
    CHECK_INT(rule_kpair(128, 4224, 4096, 132), 2);
    CHECK_INT(rule_kpair(128, 4096, 4000, 132), 2);
    CHECK_INT(rule_kpair(112, 4096, 4096, 132), 2);
    CHECK_INT(rule_kpair(128, 4096, 10240, 132), 0);
    CHECK_INT(rule_kpair(128, 3840, 4096, 132), 0);
    CHECK_INT(rule_kpair(128, 8192, 4096, 132), 0);
    CHECK_INT(rule_kpair(128, 4096, 4096, 40), 0);
    CHECK_INT(rule_kpair(64, 4096, 4096, 132), 0);
    CHECK_INT(rule_kpair(128, 1000, 4096, 132), 0);
    /* one consumer's ring: as many stages as fit (13 of 16 KiB at 64 wide, 8 of 24 KiB at 128
     * wide); the 128-row kernels keep at most 7 (fc25088 fprop's 128 x 64 tiles 7, the 4096
     * square's 128 x 256 tiles the 3 that fit beside their C staging) */
    CHECK_INT(rule_stages(128, 4096, 4096, 4096), 13);
    CHECK_INT(rule_stages(128, 4096, 1000, 1000), 8);
    CHECK_INT(rule_stages(128, 4096, 25088, 25088), 7);
    CHECK_INT(rule_stages(4096, 4096, 4096, 4096), 3);
    /* edge boxes: A's last tile row in boxes of its rows rounded up to 8 (96 and 100 rows on
     * 64-row tiles, 64 rows of a 128-row tile, 192 rows = 128 + 64, 1 row), none where the rows
     * fill the tiles or round up to a whole one (128, 121 on 64-row tiles); B's last tile column
     * where B is stored (N, K) (N 1000 on 64-wide tiles: 40), none for B stored (K, N), whose
     * edge lies along its rows' unit stride */
    CHECK_INT(rule_edge_rows(96, 4096, 4096, 0, 0), 32);
    CHECK_INT(rule_edge_rows(100, 4096, 4096, 0, 0), 40);
    CHECK_INT(rule_edge_rows(64, 4096, 4096, 0, 0), 64);
    CHECK_INT(rule_edge_rows(192, 4096, 4096, 0, 0), 64);
    CHECK_INT(rule_edge_rows(1, 256, 256, 0, 0), 8);
    CHECK_INT(rule_edge_rows(128, 4096, 4096, 0, 0), 0);
    CHECK_INT(rule_edge_rows(121, 4096, 4096, 0, 0), 0);
    CHECK_INT(rule_edge_rows(128, 1000, 4096, 1, 1), 40);
    CHECK_INT(rule_edge_rows(128, 1000, 4096, 0, 1), 0);
    CHECK_INT(rule_edge_rows(128, 4096, 4096, 1, 1), 0);
    /* multicast of an N-major B whose rows start off 32-byte sectors (N = 1000), read by eight
     * tile rows or more over 8 k slices or more, every pair in the first wave (NOTES step 35);
     * not at N 1024 or 1008 (whole sectors), K-major B, 4 k slices, 7 tile rows, 64 pairs past
     * a wave (8192 rows) */
    static const struct rule_case mcast_cases[] = {
        {4096, 1000, 1024, 0, 1}, {4096, 1000, 512, 0, 1},  {1024, 1000, 4096, 0, 1}, {4096, 1024, 1024, 0, 0},
        {4096, 1008, 1024, 0, 0}, {4096, 1000, 1024, 1, 0}, {4096, 1000, 256, 0, 0},  {776, 2056, 520, 0, 0},
        {8192, 1000, 1024, 0, 0}, {1040, 1000, 520, 0, 1} /* test_cuda_backend's case */};
    check_rule_cases(rule_mcast, "multicast", mcast_cases, sizeof mcast_cases / sizeof mcast_cases[0]);
    /* B's loads evict_first where at most two tile rows stream 48 MiB of B or more (NOTES step 37):
     * fc36864 bprop, fc25088 fprop, fc9216 fprop (75 MB), 256 rows (two tile rows), a K-major B of
     * exactly 48 MiB, test_cuda_backend's case; not fc4096 (32 MB), three tile rows, the squares,
     * 47 MiB, multicast launches */
    static const struct rule_case bhint_cases[] = {
        {128, 36864, 3072, 0, 1}, {128, 4096, 25088, 0, 1}, {128, 4096, 9216, 0, 1},  {256, 36864, 3072, 0, 1},
        {128, 4096, 6144, 1, 1},  {128, 12288, 2048, 0, 1}, {128, 4096, 4096, 0, 0},  {384, 36864, 3072, 0, 0},
        {8192, 8192, 8192, 0, 0}, {128, 4096, 6016, 1, 0},  {4096, 1000, 1024, 0, 0}};
    check_rule_cases(rule_bhint, "evict_first B", bhint_cases, sizeof bhint_cases / sizeof bhint_cases[0]);
    { /* four batches of 128 x 6144 x 2048 (a 24 MiB B each): 96 MiB streamed where each batch has its
       * own B; none where the batches share one */
        for (int shared = 0; shared < 2; shared++) {
            kiln_gemm_desc d = auto_desc(128, 6144, 2048, 0);
            d.dtype = KILN_DTYPE_F16;
            d.nbatch = 1, d.batch_shape[0] = 4;
            d.a_bstride[0] = 128 * 2048, d.b_bstride[0] = shared ? 0 : 2048 * 6144, d.c_bstride[0] = 128 * 6144;
            kiln_gemm_batches bt;
            kiln__cuda_gemm_merge_batches(&d, &bt);
            kiln_gemm_wgmma_opts o = {.tma_store = 1};
            kiln_gemm_wgmma_launch l;
            kiln__cuda_gemm_wgmma_prepare(&d, &bt, 132, 1, &o, &l);
            CHECK_INT(l.cfg.bhint, !shared);
        }
    }
    CHECK_INT(rule_kpair(1024, 1024, 1024, 132), 0);
    CHECK_INT(rule_kpair(64, 4096, 1000, 132), 0);
    CHECK_INT(rule_kpair(128, 9216, 4096, 132), 0);
    /* KILN_GEMM=auto: the wgmma kernel for fc9216 / fc25088 bprop (72 and 98 unsplit tiles of
     * one row), fc25088 / fc36864 fprop (splits of 196 and 286 slices), fc4096 fprop/bprop and
     * fc1000 fprop (a wave of 64-row tiles of 64 slices, 64-wide splits of 16 slices), the 1024
     * square (64 wide, eight tile rows), a wave of 64-row tiles of 32 or 16 slices (K 2048,
     * 1024), and fc9216 fprop and K 6144 / 8192 (a wave of 64-row tiles of 144, 96 and 128
     * slices: 1.05-1.06x since step 37); cuBLASLt for K 12288 (192 slices: level), fc1000 bprop
     * (one consumer 128 wide, 0.89-0.98x), fc36864 bprop (192 tiles of one row) and 64 x 64 x 64
     * (64 rows). In tf32 (rule_auto_tf32, the k slices 32 deep) each shape as own_tf32 /
     * vendor_tf32 say */
    static const int64_t own_shapes[][3] = {{128, 9216, 4096},  {128, 25088, 4096}, {128, 4096, 25088},
                                            {128, 3072, 36864}, {128, 4096, 4096},  {128, 1000, 4096},
                                            {1024, 1024, 1024}, {128, 4096, 2048},  {128, 4096, 1024},
                                            {128, 4096, 9216},  {128, 4096, 6144},  {128, 4096, 8192}};
    static const int own_tf32[] = {1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 0, 0};
    static const int64_t vendor_shapes[][3] = {{128, 4096, 1000}, {128, 36864, 3072}, {64, 64, 64}, {128, 4096, 12288}};
    static const int vendor_tf32[] = {1, 0, 0, 1};
    /* gemm-auto's classes (bench/NOTES.md step 27): 16-bit unsplit launches of 128-wide tiles
     * or wider on two tile rows or more, three quarters of a wave or more (the squares from
     * 2048, a transformer projection, a convolution, K = 256 updates), and products of at
     * most 2^29 flops, to the wgmma kernel in f16 and bf16 (cuBLASLt's in tf32); at most 64
     * rows of A, two tile rows of 64-wide tiles, and under-filled waves of long k to cuBLASLt */
    static const int64_t wave_shapes[][3] = {{2048, 2048, 2048}, {4096, 4096, 4096}, {8192, 8192, 8192},
                                             {8192, 3072, 1024}, {100352, 128, 1152}, {4096, 4096, 256},
                                             {256, 256, 256},    {512, 512, 512}};
    static const int64_t skinny_shapes[][3] = {{1, 4096, 4096},   {32, 4096, 4096}, {64, 9216, 4096},
                                               {256, 4096, 4096}, {6272, 512, 4608}, {4608, 512, 6272}};
    static const int skinny_tf32[] = {0, 0, 0, 1, 0, 0}; /* tf32 256 x 4096 x 4096: two tile rows (step 40) */
    for (size_t i = 0; i < sizeof wave_shapes / sizeof wave_shapes[0]; i++) {
        CHECK_INT(rule_auto(wave_shapes[i][0], wave_shapes[i][1], wave_shapes[i][2]), 1);
        /* tf32 takes only the small products (at most 2^31 flops: 256^3 and 512^3 here) */
        CHECK_INT(rule_auto_tf32(wave_shapes[i][0], wave_shapes[i][1], wave_shapes[i][2]), wave_shapes[i][0] <= 512);
    }
    /* two splits of 128-wide tiles on two tile rows or more, K of 128 slices or more (step
     * 28): the wgmma kernel in f16 and bf16, and in tf32 (512 x 2048 x 8192, 126 slices a split,
     * since step 40: 1.27x) */
    static const int64_t two_row_shapes[][3] = {{256, 4096, 25088}, {256, 4096, 9216}, {512, 2048, 8192}};
    for (size_t i = 0; i < sizeof two_row_shapes / sizeof two_row_shapes[0]; i++) {
        CHECK_INT(rule_auto(two_row_shapes[i][0], two_row_shapes[i][1], two_row_shapes[i][2]), 1);
        CHECK_INT(rule_auto_bf16(two_row_shapes[i][0], two_row_shapes[i][1], two_row_shapes[i][2]), 1);
        CHECK_INT(rule_auto_tf32(two_row_shapes[i][0], two_row_shapes[i][1], two_row_shapes[i][2]), 1);
    }
    /* tf32 on two to four tile rows of one batch, unsplit or in two splits (step 40): the wgmma
     * kernel (M 192-512 x 4096 x 4096, 384 x 25088 x 4096, 512 x 1024 x 4096); not unsplit 64-wide
     * tiles (256 x 3072 x 3072), one tile row (128 x 4096 x 4096: 62-slice splits), five rows
     * (640 x 4096 x 4096) or more */
    {
        static const int64_t rows_shapes[][4] = {{192, 4096, 4096, 1}, {200, 4096, 4096, 1}, {384, 4096, 4096, 1},
                                                 {512, 4096, 4096, 1}, {384, 25088, 4096, 1}, {512, 1024, 4096, 1},
                                                 {256, 3072, 3072, 0}, {128, 4096, 4096, 0}, {640, 4096, 4096, 0}};
        for (size_t i = 0; i < sizeof rows_shapes / sizeof rows_shapes[0]; i++)
            CHECK_INT(rule_auto_tf32(rows_shapes[i][0], rows_shapes[i][1], rows_shapes[i][2]), (int)rows_shapes[i][3]);
    }
    /* tf32's small products (bench/NOTES.md step 28): ragged, fc1000 b256 bprop, a K = 32 update */
    CHECK_INT(rule_auto_tf32(776, 2056, 520), 1);
    CHECK_INT(rule_auto_tf32(256, 4096, 1000), 1);
    CHECK_INT(rule_auto_tf32(4096, 4096, 32), 1);
    /* a few 64-wide tiles in 16 splits or more: cuBLASLt in every dtype (step 28) */
    CHECK_INT(rule_auto_tf32(256, 256, 65536), 0);
    CHECK_INT(rule_auto(256, 256, 65536), 0);
    for (size_t i = 0; i < sizeof skinny_shapes / sizeof skinny_shapes[0]; i++) {
        CHECK_INT(rule_auto(skinny_shapes[i][0], skinny_shapes[i][1], skinny_shapes[i][2]), 0);
        CHECK_INT(rule_auto_tf32(skinny_shapes[i][0], skinny_shapes[i][1], skinny_shapes[i][2]), skinny_tf32[i]);
    }
    /* the K = 128 updates (all to the wgmma kernel under auto: a wave of tiles or more). Plain,
     * with four waves of tiles or more (fc9216, fc36864, fc25088; bench/NOTES.md step 39): the
     * cooperative kernel walking its tiles row by row, C stored evict_first, f16 and bf16; with fewer (fc4096, fc1000):
     * ping-pong in f16, cooperative in bf16, in groups of 8 tile rows. With a bias or SR, or
     * K = 256: cooperative, groups of 8; K = 32: groups of 8, ping-pong in f16 */
    static const int64_t update_shapes[][3] = {{9216, 4096, 128}, {4096, 4096, 128}, {4096, 1000, 128},
                                               {36864, 3072, 128}, {25088, 4096, 128}};
    static const int rows_order[] = {1, 0, 0, 1, 1};
    for (size_t i = 0; i < sizeof update_shapes / sizeof update_shapes[0]; i++) {
        const int64_t M = update_shapes[i][0], N = update_shapes[i][1], K = update_shapes[i][2];
        CHECK_INT(rule_pp(M, N, K, 0, 0, 0), !rows_order[i]);
        CHECK_INT(rule_group(M, N, K, 0, 0, 0), rows_order[i] ? 1 : 8);
        CHECK_INT(rule_group(M, N, K, 1, 0, 0), rows_order[i] ? 1 : 8);
        CHECK_INT(rule_chint(M, N, K, 0, 0, 0), rows_order[i]); /* evict_first stores with row order */
        CHECK_INT(rule_chint(M, N, K, 1, 0, 0), rows_order[i]);
        CHECK_INT(rule_chint(M, N, K, 0, 1, 0), 0);
        CHECK_INT(rule_chint(M, N, K, 1, 0, EPI_SR), 0);
        /* ReLU alone as the plain product: in 16 bits its words form costs half an instruction
         * an element (bench/NOTES.md step 44); with SR it stays grouped */
        CHECK_INT(rule_group(M, N, K, 0, 0, EPI_RELU), rows_order[i] ? 1 : 8);
        CHECK_INT(rule_group(M, N, K, 1, 0, EPI_RELU), rows_order[i] ? 1 : 8);
        CHECK_INT(rule_chint(M, N, K, 0, 0, EPI_RELU), rows_order[i]);
        CHECK_INT(rule_pp(M, N, K, 0, 0, EPI_RELU), 0);
        CHECK_INT(rule_group(M, N, K, 0, 0, EPI_SR | EPI_RELU), 8);
        CHECK_INT(rule_chint(M, N, K, 1, 0, EPI_SR | EPI_RELU), 0);
        CHECK_INT(rule_pp(M, N, K, 1, 0, 0), 0);
        CHECK_INT(rule_auto(M, N, K), 1);
        CHECK_INT(rule_auto_bf16(M, N, K), 1);
        CHECK_INT(rule_pp(M, N, K, 0, 1, 0), 0);
        CHECK_INT(rule_pp(M, N, K, 0, 0, EPI_SR), 0);
        CHECK_INT(rule_group(M, N, K, 0, 1, 0), 8);
        CHECK_INT(rule_group(M, N, K, 1, 0, EPI_SR), 8);
        CHECK_INT(rule_pp(M, N, 2 * K, 0, 0, 0), 0);
        CHECK_INT(rule_group(M, N, 2 * K, 0, 0, 0), 8);
        CHECK_INT(rule_group(M, N, 32, 1, 0, 0), 8);
        CHECK_INT(rule_pp(M, N, 32, 0, 0, 0), 1);
    }
    /* row order from K = 33 (36864 x 3072 x 64, 16384 x 2048 x 96, 8192 x 4096 x 33), up to a B
     * of 4 MiB (2048 x 16384 x 128), not past it (1152 x 65536 x 128, 2048 x 16416 x 128) */
    CHECK_INT(rule_group(36864, 3072, 64, 0, 0, 0), 1);
    CHECK_INT(rule_group(16384, 2048, 96, 1, 0, 0), 1);
    CHECK_INT(rule_group(8192, 4096, 33, 1, 0, 0), 1);
    CHECK_INT(rule_group(2048, 16384, 128, 1, 0, 0), 1);
    CHECK_INT(rule_group(1152, 65536, 128, 1, 0, 0), 8);
    CHECK_INT(rule_group(2048, 16416, 128, 1, 0, 0), 8);
    /* tf32's plain updates in row order with C stored evict_first, and to the wgmma kernel under
     * auto (bench/NOTES.md step 40): fc9216 / fc36864 / fc25088, K 64 and 96; not with a bias,
     * K = 32 or 256, or fewer than four waves of tiles (fc4096, fc1000) */
    {
        static const int64_t tf32_shapes[][4] = {{9216, 4096, 128, 1}, {36864, 3072, 128, 1}, {25088, 4096, 128, 1},
                                                 {36864, 3072, 64, 1}, {16384, 2048, 96, 1},  {8192, 8192, 128, 1},
                                                 {4096, 4096, 128, 0}, {4096, 1000, 128, 0},  {9216, 4096, 32, 0},
                                                 {9216, 4096, 256, 0}};
        for (size_t i = 0; i < sizeof tf32_shapes / sizeof tf32_shapes[0]; i++) {
            const int64_t M = tf32_shapes[i][0], N = tf32_shapes[i][1], K = tf32_shapes[i][2];
            const int rows = (int)tf32_shapes[i][3];
            kiln_gemm_wgmma_launch l;
            rule_tf32(M, N, K, 0, &l);
            CHECK_INT((int)l.w[41] == 1, rows);
            CHECK_INT(l.cfg.chint, rows);
            CHECK_INT(l.update_order, rows);
            CHECK_INT(l.cfg.pingpong, 0);
            if (rows) CHECK_INT(rule_auto_tf32(M, N, K), 1);
            rule_tf32(M, N, K, 1, &l);
            CHECK_INT((int)l.w[41] == 1, 0);
            CHECK_INT(l.cfg.chint, 0);
            CHECK_INT(l.update_order, 0);
        }
        /* f32 C staged at 128 wide (or 64, the rule's width) up to 36 k slices, the ring then
         * shallower than the tile's slices (K 256-1152: 4096 x 4096 x 256 0.83x -> 0.98x of
         * cuBLASLt; NOTES step 40); from the registers at 256 wide past that (1024 x 4096 x 4096,
         * 128 slices) */
        static const int64_t deep_shapes[][4] = {
            {4096, 4096, 256, 1}, {25088, 4096, 256, 1}, {8192, 1024, 1024, 1}, {100352, 128, 1152, 1},
            {1024, 4096, 4096, 0}, {4608, 512, 6272, 0},  {256, 1000, 4096, 1},  {1000, 1000, 1000, 1}};
        for (size_t i = 0; i < sizeof deep_shapes / sizeof deep_shapes[0]; i++) {
            kiln_gemm_wgmma_launch l;
            rule_tf32(deep_shapes[i][0], deep_shapes[i][1], deep_shapes[i][2], 0, &l);
            CHECK_INT(l.cfg.tma_store, (int)deep_shapes[i][3]);
            if (deep_shapes[i][3]) CHECK_INT(l.cfg.bn, deep_shapes[i][0] <= 1024 ? 64 : 128);
        }
    }
    /* stochastic rounding's words made at the item's start where each block has one item
     * (bench/NOTES.md steps 42-43): fc9216 bprop (cooperative 128 x 128 tiles on 72 blocks),
     * fc9216 and fc4096 fprop (one consumer's 64 x 64 tiles on 128), fc1000 bprop (64 x 128 on
     * 64); not on a square (several items a block), a split launch (fc1000 fprop), 256-wide
     * tiles (fc25088 bprop) or without SR */
    {
        static const int64_t es_shapes[][6] = {{128, 4096, 9216, 0, 1, 1}, {128, 9216, 4096, 1, 1, 1},
                                               {128, 4096, 4096, 1, 1, 1}, {128, 4096, 1000, 0, 1, 1},
                                               {4096, 4096, 4096, 0, 1, 0}, {128, 1000, 4096, 0, 0, 0},
                                               {128, 25088, 4096, 0, 1, 0}};
        for (size_t i = 0; i < sizeof es_shapes / sizeof es_shapes[0]; i++) {
            kiln_gemm_wgmma_launch l;
            const int64_t *e = es_shapes[i];
            rule_sched(e[0], e[1], e[2], (int)e[3], (int)e[4], EPI_SR, &l);
            CHECK_INT(l.cfg.early_sr, (int)e[5]);
            rule_sched(e[0], e[1], e[2], (int)e[3], (int)e[4], 0, &l);
            CHECK_INT(l.cfg.early_sr, 0);
        }
    }
    /* the rule on a device whose DRAM peaks at 4 TB/s or more (fast_dram, the H200; bench/NOTES.md
     * step 47), on 132 SMs: fc36864 fprop on 128-wide tiles in 3 splits through the workspace (the
     * H100's 64 wide in 2), fc1000 fprop in 8 splits summed in slices (the H100's 4 through the
     * workspace); every other shape as on the H100: the fprop shapes whose 64-wide plans fill the
     * SMs (fc25088, fc9216, fc4096), bprop, the updates, two tile rows, tf32 */
    {
        static const int64_t fd[][7] = {/* M, N, K, dtype (0 f16, 1 bf16, 2 f32), then on the H200:
                                         * width, splits, slice sums (0 0 0: the H100's plan) */
                                        {128, 3072, 36864, 0, 128, 3, 0}, {128, 3072, 36864, 1, 128, 3, 0},
                                        {128, 1000, 4096, 0, 64, 8, 1},   {128, 1000, 4096, 1, 64, 8, 1},
                                        {128, 4096, 25088, 0, 0, 0, 0},   {128, 4096, 9216, 0, 0, 0, 0},
                                        {128, 4096, 4096, 1, 0, 0, 0},    {128, 4096, 1000, 0, 0, 0, 0},
                                        {128, 36864, 3072, 0, 0, 0, 0},   {128, 9216, 4096, 1, 0, 0, 0},
                                        {9216, 4096, 128, 0, 0, 0, 0},    {256, 3072, 36864, 0, 0, 0, 0},
                                        {128, 3072, 36864, 2, 0, 0, 0},   {128, 1000, 4096, 2, 0, 0, 0}};
        for (size_t i = 0; i < sizeof fd / sizeof fd[0]; i++) {
            const int64_t *f = fd[i];
            kiln_gemm_desc d = auto_desc(f[0], f[1], f[2], f[3] == 2);
            d.dtype = f[3] == 0 ? KILN_DTYPE_F16 : f[3] == 1 ? KILN_DTYPE_BF16 : KILN_DTYPE_F32;
            kiln_gemm_batches bt;
            kiln__cuda_gemm_merge_batches(&d, &bt);
            kiln_gemm_wgmma_opts o = {.tma_store = 1};
            kiln_gemm_wgmma_launch h100, h200;
            kiln__cuda_gemm_wgmma_prepare(&d, &bt, 132, 1, &o, &h100);
            o.fast_dram = 1;
            kiln__cuda_gemm_wgmma_prepare(&d, &bt, 132, 1, &o, &h200);
            if (f[4]) {
                CHECK_INT(h200.cfg.bn, (int)f[4]);
                CHECK_INT((int)h200.w[26], (int)f[5]);
                CHECK_INT(h200.cfg.slice_sum, (int)f[6]);
                CHECK_INT(h200.cfg.kpair, 0);
                CHECK(h200.cfg.bn != h100.cfg.bn || h200.w[26] != h100.w[26]);
                CHECK(h200.smem <= 227 * 1024);
            } else {
                CHECK_INT(h200.cfg.bn, h100.cfg.bn);
                CHECK_INT((int)h200.w[26], (int)h100.w[26]);
                CHECK_INT(h200.cfg.slice_sum, h100.cfg.slice_sum);
                CHECK_INT(h200.cfg.kpair, h100.cfg.kpair);
            }
        }
    }
    /* every plan fits a block's 227 KiB of shared memory: f16, bf16 and tf32 (K-major A and B),
     * K of one to a few slices (where the C staging is biggest beside the ring) and deep, narrow
     * to wide N, with and without a bias, on 132 SMs (tf32 at K <= 64 on wide tiles had asked
     * for two f32 staging buffers, 361 544 bytes) */
    {
        static const int64_t ms[] = {128, 4096}, ns[] = {1000, 4096, 40000}, ks[] = {16, 32, 64, 96, 128, 256, 4096};
        int over = 0;
        for (int dt = 0; dt < 3; dt++)
            for (int bias = 0; bias < 2; bias++)
                for (size_t i = 0; i < 2; i++)
                    for (size_t j = 0; j < 3; j++)
                        for (size_t k = 0; k < 7; k++) {
                            kiln_gemm_desc d = auto_desc(ms[i], ns[j], ks[k], dt == 2);
                            d.dtype = dt == 0 ? KILN_DTYPE_F16 : dt == 1 ? KILN_DTYPE_BF16 : KILN_DTYPE_F32;
                            d.bias = bias ? (const char *)(uintptr_t)4096 : NULL;
                            kiln_gemm_batches bt;
                            kiln__cuda_gemm_merge_batches(&d, &bt);
                            kiln_gemm_wgmma_opts o = {.tma_store = 1};
                            kiln_gemm_wgmma_launch l;
                            kiln__cuda_gemm_wgmma_prepare(&d, &bt, 132, 1, &o, &l);
                            if (l.smem > 227 * 1024 && over++ < 3)
                                fprintf(stderr, "  %s %lld x %lld x %lld%s: %u bytes of shared memory\n",
                                        kiln_dtype_name(d.dtype), (long long)ms[i], (long long)ns[j], (long long)ks[k],
                                        bias ? " with a bias" : "", l.smem);
                        }
        CHECK_INT(over, 0);
    }
    CHECK_INT(rule_pp(1024, 1024, 128, 0, 0, 0), 0); /* 64 tiles of 128 x 128 */
    CHECK_INT(rule_pp(1536, 1408, 128, 0, 0, 0), 1); /* 132 tiles: test_cuda_backend's case */
    CHECK_INT(rule_pp(1536, 1280, 128, 0, 0, 0), 0); /* 120 */
    CHECK_INT(rule_pp(128, 4096, 4096, 0, 0, 0), 0);
    for (size_t i = 0; i < sizeof own_shapes / sizeof own_shapes[0]; i++)
        CHECK_INT(rule_auto(own_shapes[i][0], own_shapes[i][1], own_shapes[i][2]), 1);
    for (size_t i = 0; i < sizeof vendor_shapes / sizeof vendor_shapes[0]; i++)
        CHECK_INT(rule_auto(vendor_shapes[i][0], vendor_shapes[i][1], vendor_shapes[i][2]), 0);
    /* 64-row tiles 128 wide (A's 2000-byte rows): cuBLASLt (k pairs 0.96x, one consumer 1.01x at
     * batch 256: no class to claim, NOTES step 32) */
    CHECK_INT(rule_auto(256, 4096, 1000), 0);
    CHECK_INT(rule_auto(192, 4096, 1000), 0);
    /* two tile rows of 64-wide 128-row tiles, a wave, at most 16 k slices: the wgmma kernel
     * (M 129-256 x N 4096 x K 512-1024, NOTES step 35); deeper K, three tile rows, fewer tiles,
     * two batches: cuBLASLt */
    CHECK_INT(rule_auto(136, 4096, 512), 1);
    CHECK_INT(rule_auto(192, 4096, 1024), 1);
    CHECK_INT(rule_auto(256, 4096, 1024), 1);
    CHECK_INT(rule_auto(192, 4096, 1536), 0);
    CHECK_INT(rule_auto(192, 4096, 4096), 0);
    CHECK_INT(rule_auto(320, 4096, 1024), 0);
    CHECK_INT(rule_auto(256, 3072, 1024), 0);
    /* an N-major B whose rows start off 32-byte sectors, four tile rows or more: cuBLASLt
     * (step 35); the ping-pong update, two tile rows, whole sectors and K-major B stay */
    CHECK_INT(rule_auto(4096, 1000, 1024), 0);
    CHECK_INT(rule_auto(4096, 1000, 256), 0);
    CHECK_INT(rule_auto(1024, 1000, 4096), 0);
    CHECK_INT(rule_auto(776, 2056, 520), 0);
    CHECK_INT(rule_auto(4096, 1000, 128), 1);
    CHECK_INT(rule_auto(256, 1000, 4096), 1);
    CHECK_INT(rule_auto(4096, 1024, 1024), 1);
    CHECK_INT(rule_auto(4096, 1008, 1024), 1);
    /* 64-row tiles on two tile rows, the second part-full: cuBLASLt (M 96-124, step 35); 128
     * rows and four tile rows (200 x 2048 x 1024: 1.25x) stay */
    CHECK_INT(rule_auto(96, 4096, 4096), 0);
    CHECK_INT(rule_auto(120, 4096, 2048), 0);
    CHECK_INT(rule_auto(128, 4096, 2048), 1);
    CHECK_INT(rule_auto(200, 2048, 1024), 1);
    /* a K-major A of at most 128 rows whose rows start off 32-byte sectors (K 1000, 3000 in 16
     * bits), eight tile columns or more: cuBLASLt (step 36); whole sectors (K 1024, 2000) stay
     * with the classes before, and so do products of at most 2^29 flops (128 x 512 x 1000) */
    CHECK_INT(rule_auto(128, 9216, 1000), 0);
    CHECK_INT(rule_auto(128, 16384, 1000), 0);
    CHECK_INT(rule_auto(128, 4096, 3000), 0);
    CHECK_INT(rule_auto(128, 9216, 1024), 1);
    CHECK_INT(rule_auto(128, 4096, 2000), 1);
    CHECK_INT(rule_auto(128, 512, 1000), 1);
    /* tf32: the same classes, where the k slices hold 32 k: fc9216 fprop's splits are 142
     * slices and fc1000 bprop splits in 2 of 16 (the wgmma kernel), fc4096's splits are 62
     * (cuBLASLt) */
    for (size_t i = 0; i < sizeof own_shapes / sizeof own_shapes[0]; i++)
        CHECK_INT(rule_auto_tf32(own_shapes[i][0], own_shapes[i][1], own_shapes[i][2]), own_tf32[i]);
    for (size_t i = 0; i < sizeof vendor_shapes / sizeof vendor_shapes[0]; i++)
        CHECK_INT(rule_auto_tf32(vendor_shapes[i][0], vendor_shapes[i][1], vendor_shapes[i][2]), vendor_tf32[i]);
    /* the FFMA kernel's width: 128 x 256 where the split model (wide tiles at 1.7 the narrow
     * ones' time per k) says so: the squares from 2048, fc4096 / fc9216 / fc36864 / fc25088
     * fprop and bprop, the K = 128 updates; 128 x 128 for fc1000 fprop and bprop and the 1024
     * square (half the tiles would leave SMs idle) */
    CHECK_INT(ffma_wide(4096, 4096, 4096), 1);
    CHECK_INT(ffma_wide(2048, 2048, 2048), 1);
    CHECK_INT(ffma_wide(128, 4096, 4096), 1);
    CHECK_INT(ffma_wide(128, 36864, 3072), 1);
    CHECK_INT(ffma_wide(9216, 4096, 128), 1);
    CHECK_INT(ffma_wide(4096, 1000, 128), 1);
    CHECK_INT(ffma_wide(128, 1000, 4096), 0);
    CHECK_INT(ffma_wide(128, 4096, 1000), 0);
    CHECK_INT(ffma_wide(1024, 1024, 1024), 0);
    f16_sr13_identity();
    div_words();
    /* KILN_EMU_FUZZ: the count of random cases after the listed ones (40 unless set);
     * KILN_EMU_FUZZ_SEED: those cases' seed, and then only they run (to replay a failure) */
    const char *fz_count = getenv("KILN_EMU_FUZZ"), *fz_seed = getenv("KILN_EMU_FUZZ_SEED");
    char *fz_end = NULL;
    const long fuzz_count = fz_count && fz_count[0] ? strtol(fz_count, &fz_end, 10) : 40;
    CHECK(!fz_end || (*fz_end == 0 && fuzz_count >= 0)); /* a bad KILN_EMU_FUZZ fails the test */
    const uint64_t fuzz_seed = fz_seed && fz_seed[0] ? strtoull(fz_seed, NULL, 0) : check_rand_u64(&rng);
    int64_t group = -1;
    int listed = 0;
    if (!(fz_seed && fz_seed[0])) {
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            if (!cases[i].same_bits) group++;
            if (in_part(group)) {
                run(&cases[i]);
                listed++;
            } else if (!cases[i].same_bits)
                a_off_line ^= 1; /* as run would have: each case's A where the whole run puts it */
        }
        printf("listed cases: %d of %d (part %d of %d)\n", listed, (int)(sizeof cases / sizeof cases[0]), part_index,
               part_count);
    }
    fuzz_cases(fuzz_seed, fuzz_count > 0 ? (int)fuzz_count : 0, fz_seed && fz_seed[0]);
    free(prev_c);
    for (int i = 0; i < nbuilt; i++) dlclose(built[i].so);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (check_failed_ == 0 && system(cmd) != 0) fprintf(stderr, "  could not remove %s\n", tmpdir);
    return check_finish();
}
