/*
 * tests/gemm_emu_launch.h — runs an emulated GEMM kernel (tests/gemm_emu.h): emu_launch,
 * exported from the shared object tests/test_gemm_emu.c builds, takes a launch as the
 * library's prepare function described it (words, grid, threads, dynamic shared memory;
 * for the wgmma kernel, EMU_TMAPS defined, the tensor maps as descriptions) and runs every
 * block of the grid, one after another, each as its threads' coroutines. EMU_KERNEL names
 * the kernel function.
 */

#define EMU_STACK (256 * 1024)

static kiln_args emu_args;

static void emu_thread_main(void)
{
    EMU_KERNEL(emu_args);
    emu.done[emu.cur] = 1;
    emu_progress();
}

/* maps: 3 x 9 words (base, dims[3], strides[2], box[2], element bytes), base 0 = unused */
extern "C" int emu_launch(const unsigned long long *words, int nwords, const unsigned long long *maps, unsigned gx,
                          unsigned gy, unsigned threads, unsigned smem, char *error, size_t error_cap)
{
    memset(&emu_args, 0, sizeof emu_args);
    if (nwords > (int)(sizeof emu_args.w / 8) || threads > EMU_MAX_THREADS) return 2;
    memcpy(emu_args.w, words, (size_t)nwords * 8);
#ifdef EMU_TMAPS
    kg_tmap *tm[3] = {&emu_args.ta, &emu_args.tb, &emu_args.tc};
    for (int i = 0; i < 3; i++) memcpy(tm[i]->b, maps + 9 * i, 9 * 8);
#else
    (void)maps;
#endif
    emu.nthreads = (int)threads;
    emu.smem_bytes = smem ? smem : 16;
    emu.smem = (unsigned char *)malloc(emu.smem_bytes);
    emu.stacks = (char *)malloc((size_t)threads * EMU_STACK);
    emu.error[0] = 0;
    emu.deadlock = 0;
    int rc = 0;
    for (unsigned blk = 0; blk < gx * gy && rc == 0; blk++) {
        memset(emu.smem, 0xA5, emu.smem_bytes); /* poison: what a kernel reads before writing shows */
        emu.nbars = 0;
        memset(emu.bar_arrived, 0, sizeof emu.bar_arrived);
        memset(emu.bar_gen, 0, sizeof emu.bar_gen);
        emu.block_idx = {blk % gx, blk / gx, 0};
        emu.grid_dim = {gx, gy, 1};
        emu.block_dim = {threads, 1, 1};
        for (int t = 0; t < (int)threads; t++) {
            emu.done[t] = 0;
            getcontext(&emu.ctx[t]);
            emu.ctx[t].uc_stack.ss_sp = emu.stacks + (size_t)t * EMU_STACK;
            emu.ctx[t].uc_stack.ss_size = EMU_STACK;
            emu.ctx[t].uc_link = &emu.sched;
            makecontext(&emu.ctx[t], emu_thread_main, 0);
        }
        int left = (int)threads;
        emu.idle = 0;
        while (left > 0 && !emu.deadlock) {
            left = 0;
            for (int t = 0; t < (int)threads && !emu.deadlock; t++) {
                if (emu.done[t]) continue;
                emu.cur = t;
                emu.thread_idx = {(unsigned)t, 0, 0};
                swapcontext(&emu.sched, &emu.ctx[t]);
                if (!emu.done[t]) left++;
            }
        }
        if (emu.deadlock || emu.error[0]) rc = 1;
    }
    if (rc) snprintf(error, error_cap, "%s", emu.error[0] ? emu.error : "failed");
    free(emu.smem);
    free(emu.stacks);
    return rc;
}
