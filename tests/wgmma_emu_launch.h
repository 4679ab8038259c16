/*
 * tests/wgmma_emu_launch.h — runs the emulated wgmma kernel (tests/wgmma_emu.h): emu_launch,
 * exported from the shared object tests/test_wgmma_emu.c builds, takes the launch that
 * kiln__cuda_gemm_wgmma_prepare described (words, grid, shared memory, tensor maps as
 * descriptions) and runs every block of the grid, one after another, each as 384 coroutines.
 */

#define EMU_STACK (256 * 1024)

static kiln_args emu_args;

static void emu_thread_main(void)
{
    kiln_gemm_wgmma(emu_args);
    emu.done[emu.cur] = 1;
    emu_progress();
}

/* maps: 3 x 9 words (base, dims[3], strides[2], box[2], element bytes), base 0 = unused */
extern "C" int emu_launch(const unsigned long long *words, int nwords, const unsigned long long *maps, unsigned grid,
                          unsigned smem, char *error, size_t error_cap)
{
    memset(&emu_args, 0, sizeof emu_args);
    if (nwords > (int)(sizeof emu_args.w / 8)) return 2;
    memcpy(emu_args.w, words, (size_t)nwords * 8);
    kg_tmap *tm[3] = {&emu_args.ta, &emu_args.tb, &emu_args.tc};
    for (int i = 0; i < 3; i++) memcpy(tm[i]->b, maps + 9 * i, 9 * 8);
    emu.smem_bytes = smem;
    emu.smem = (unsigned char *)malloc(smem);
    emu.stacks = (char *)malloc((size_t)EMU_THREADS * EMU_STACK);
    emu.error[0] = 0;
    emu.deadlock = 0;
    int rc = 0;
    for (unsigned blk = 0; blk < grid && rc == 0; blk++) {
        memset(emu.smem, 0xA5, smem); /* poison: what a kernel reads before writing shows */
        emu.nbars = 0;
        memset(emu.bar_arrived, 0, sizeof emu.bar_arrived);
        memset(emu.bar_gen, 0, sizeof emu.bar_gen);
        emu.block_idx = {blk, 0, 0};
        emu.grid_dim = {grid, 1, 1};
        for (int t = 0; t < EMU_THREADS; t++) {
            emu.done[t] = 0;
            getcontext(&emu.ctx[t]);
            emu.ctx[t].uc_stack.ss_sp = emu.stacks + (size_t)t * EMU_STACK;
            emu.ctx[t].uc_stack.ss_size = EMU_STACK;
            emu.ctx[t].uc_link = &emu.sched;
            makecontext(&emu.ctx[t], emu_thread_main, 0);
        }
        int left = EMU_THREADS;
        emu.idle = 0;
        while (left > 0 && !emu.deadlock) {
            left = 0;
            for (int t = 0; t < EMU_THREADS && !emu.deadlock; t++) {
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
