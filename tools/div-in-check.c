/*
 * tools/div-in-check.c - kiln_div_in's proof on the host (bench/NOTES.md steps 71 and 73): its
 * one-compare form in src/cuda/source.c's prelude answers as the plain reading of its ranges,
 * !(|a| > 2^100) && !(0 < |a| < 2^-100), for every one of the 2^32 float bit patterns. The GPU's
 * fabsf, comparisons and unsigned arithmetic are IEEE and two's complement as here, and the kernels are built without
 * flush-to-zero (src/cuda/nvrtc.c's options), so the host's answer is the device's.
 *
 *   cc -O2 -o /tmp/div-in-check tools/div-in-check.c -lm && /tmp/div-in-check
 *
 * Prints the mismatches (at most 5) and their count; exit status 1 if any (~30 s).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static float float_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* the plain reading (kiln_div_in before step 73): 0, NaN, or |a| in [2^-100, 2^100] */
static int div_in_plain(float a)
{
    const float m = fabsf(a);
    return !(m > 0x1p100f) & !(m > 0.0f && m < 0x1p-100f);
}

/* the prelude's: |a| not above 2^100, and 2 bits(a) - 1 (unsigned) not below 2 bits(2^-100) - 1 */
static int div_in_prelude(float a, uint32_t bits)
{
    return !(fabsf(a) > 0x1p100f) & (bits * 2u - 1u >= 0x1affffffu);
}

int main(void)
{
    uint64_t bad = 0;
    for (uint64_t x = 0; x <= UINT32_MAX; x++) {
        const float a = float_of((uint32_t)x);
        const int want = div_in_plain(a), got = div_in_prelude(a, (uint32_t)x);
        if (want != got && bad++ < 5) printf("bits %08x: plain %d, prelude %d\n", (unsigned)x, want, got);
    }
    printf("%llu mismatches over 2^32 floats\n", (unsigned long long)bad);
    return bad != 0;
}
