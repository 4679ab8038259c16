/*
 * tests/gemm_emu_launch.h — runs an emulated GEMM kernel (tests/gemm_emu.h): emu_launch,
 * exported from the shared object tests/test_gemm_emu.c builds, takes a launch as the
 * library's prepare function described it (words, grid, threads, dynamic shared memory;
 * for the wgmma kernel, EMU_TMAPS defined, the tensor maps as descriptions; the cluster
 * size) and runs every cluster of the grid, one after another, each as the coroutines of
 * its blocks' threads. EMU_KERNEL names the kernel function.
 */

#define EMU_STACK (256 * 1024)
/* Blocks that run together are scheduled two ways, so that a missing wait on another block
 * reads what is not there yet: in even groups they start skewed (block r only after r x
 * EMU_SKEW sweeps of the scheduler: the first blocks reach a wait long before the others
 * have done their part), in odd groups together but each block left out of each sweep at
 * random (a fixed sequence: the same run every time), so one block runs ahead while another
 * stands still between two steps of its own */
#define EMU_SKEW 64

static kiln_args emu_args;

/* the section of the kernel's static shared variables (absent where it has none: the wgmma
 * kernel's shared memory is all dynamic); the linker names its bounds */
extern "C" unsigned char __start_emu_shared[] __attribute__((weak, visibility("hidden")));
extern "C" unsigned char __stop_emu_shared[] __attribute__((weak, visibility("hidden")));
static size_t emu_sshared_bytes(void)
{
    return __start_emu_shared && __stop_emu_shared ? (size_t)(__stop_emu_shared - __start_emu_shared) : 0;
}

static void emu_thread_main(void)
{
#ifdef EMU_THREAD_START
    EMU_THREAD_START();
#endif
    EMU_KERNEL(emu_args);
#ifdef EMU_THREAD_END
    EMU_THREAD_END();
#endif
    emu.done[emu.cur] = 1;
    emu_progress();
}

/* maps: 5 x 9 words (base, dims[3], strides[2], box[2], element bytes), base 0 = unused
 * (A, B, C, A's and B's edge maps);
 * cluster: blocks run together (a cluster along x: the grid a multiple; else the last group
 * may be short) */
extern "C" int emu_launch(const unsigned long long *words, int nwords, const unsigned long long *maps, unsigned gx,
                          unsigned gy, unsigned threads, unsigned smem, unsigned cluster, char *error, size_t error_cap)
{
    memset(&emu_args, 0, sizeof emu_args);
#ifdef EMU_TMAPS
    /* the wgmma kernel: one word past its words is the address of the statistics' words
     * (kiln_args.stats) */
    if (nwords == (int)(sizeof emu_args.w / 8) + 1) emu_args.stats = words[--nwords];
#endif
    if (nwords > (int)(sizeof emu_args.w / 8) || threads > EMU_MAX_THREADS) return 2;
    if (cluster < 1 || cluster > EMU_MAX_CLUSTER) return 2;
    memcpy(emu_args.w, words, (size_t)nwords * 8);
#ifdef EMU_TMAPS
    kg_tmap *tm[5] = {&emu_args.ta, &emu_args.tb, &emu_args.tc, &emu_args.tae, &emu_args.tbe};
    for (int i = 0; i < 5; i++) memcpy(tm[i]->b, maps + 9 * i, 9 * 8);
#else
    (void)maps;
#endif
    memset(&emu_g, 0, sizeof emu_g);
    emu_g.cluster = (int)cluster;
    for (unsigned r = 0; r < cluster; r++) {
        emu_state *b = &emu_blocks[r];
        b->nthreads = (int)threads;
        b->smem_bytes = smem ? smem : 16;
        b->smem = (unsigned char *)malloc(b->smem_bytes);
        b->sshared = (unsigned char *)malloc(emu_sshared_bytes() + 1);
        b->stacks = (char *)malloc((size_t)threads * EMU_STACK);
        /* poison the stacks' tops (they grow down): a local read before it is written (the
         * accumulators of a consumer that multiplied nothing) reads NaNs in the first block, the
         * leftovers of an earlier block's thread after */
        for (unsigned t = 0; t < threads; t++) memset(b->stacks + (size_t)(t + 1) * EMU_STACK - 65536, 0xFF, 65536);
    }
    int rc = 0;
    unsigned long long rng = 0x9E3779B97F4A7C15ull; /* xorshift64: the odd groups' schedule */
    for (unsigned c0 = 0; c0 < gx * gy && rc == 0; c0 += cluster) {
        const unsigned n = gx * gy - c0 < cluster ? gx * gy - c0 : cluster, odd = (c0 / cluster) & 1;
        emu_g.cluster = (int)n;
        for (unsigned r = 0; r < n; r++) {
            emu_state *b = &emu_blocks[r];
            const unsigned blk = c0 + r;
            memset(b->smem, 0xA5, b->smem_bytes); /* poison: what a kernel reads before writing shows */
            memset(b->sshared, 0xA5, emu_sshared_bytes());
            b->nbars = 0;
            memset(b->bar_arrived, 0, sizeof b->bar_arrived);
            memset(b->bar_gen, 0, sizeof b->bar_gen);
            b->block_idx = {blk % gx, blk / gx, 0};
            b->grid_dim = {gx, gy, 1};
            b->block_dim = {threads, 1, 1};
            for (int t = 0; t < (int)threads; t++) {
                b->done[t] = 0;
                getcontext(&b->ctx[t]);
                b->ctx[t].uc_stack.ss_sp = b->stacks + (size_t)t * EMU_STACK;
                b->ctx[t].uc_stack.ss_size = EMU_STACK;
                b->ctx[t].uc_link = &b->sched;
                makecontext(&b->ctx[t], emu_thread_main, 0);
            }
        }
        int left = (int)(threads * n);
        emu_g.idle = 0;
        for (long long sweep = 0; left > 0 && !emu_g.deadlock; sweep++) {
            left = 0;
            for (unsigned i = 0; i < n && !emu_g.deadlock; i++) {
                const unsigned r = i;
                int skip = !odd && sweep < (long long)r * EMU_SKEW; /* not started yet */
                if (odd) {
                    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
                    skip = (rng >> 40) & 1;
                }
                if (skip) { /* its threads still to finish */
                    for (int t = 0; t < (int)threads; t++) left += !emu_blocks[r].done[t];
                    continue;
                }
                emu_cur = &emu_blocks[r];
                /* the block's own static shared variables in place for its turn */
                if (emu_sshared_bytes()) memcpy(__start_emu_shared, emu.sshared, emu_sshared_bytes());
                for (int t = 0; t < (int)threads && !emu_g.deadlock; t++) {
                    if (emu.done[t]) continue;
                    emu.cur = t;
                    emu.thread_idx = {(unsigned)t, 0, 0};
                    swapcontext(&emu.sched, &emu.ctx[t]);
                    if (!emu.done[t]) left++;
                }
                if (emu_sshared_bytes()) memcpy(emu.sshared, __start_emu_shared, emu_sshared_bytes());
            }
        }
        if (emu_g.deadlock || emu_g.error[0]) rc = 1;
    }
    if (rc) snprintf(error, error_cap, "%s", emu_g.error[0] ? emu_g.error : "failed");
    for (unsigned r = 0; r < cluster; r++) {
        free(emu_blocks[r].smem);
        free(emu_blocks[r].sshared);
        free(emu_blocks[r].stacks);
        emu_blocks[r].smem = NULL;
        emu_blocks[r].sshared = NULL;
        emu_blocks[r].stacks = NULL;
    }
    emu_cur = &emu_blocks[0];
    return rc;
}
