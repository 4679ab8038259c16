/*
 * tests/gemm_generators.h - the GEMM kernel generators the host-side kernel tests call
 * (test_gemm_emu, test_gemm_nvrtc), declared weak: a libkiln built without them links, and
 * the tests skip where a pointer is NULL. Include after cuda/gemm_plan.h.
 */
#ifndef KILN_TESTS_GEMM_GENERATORS_H
#define KILN_TESTS_GEMM_GENERATORS_H

#pragma weak kiln__cuda_gemm_wgmma_prepare
#pragma weak kiln__cuda_gemm_wgmma_source_text
#pragma weak kiln__cuda_gemm_mma_prepare
#pragma weak kiln__cuda_gemm_mma_source_text
#pragma weak kiln__cuda_gemm_ffma_prepare
#pragma weak kiln__cuda_gemm_ffma_source_text
#pragma weak kiln__cuda_gemm_merge_batches

#endif /* KILN_TESTS_GEMM_GENERATORS_H */
